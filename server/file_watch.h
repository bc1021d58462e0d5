// Polls files for changes (mtime, size, inode; stat follows symlinks, so the atomic symlink
// swap Kubernetes uses to update mounted Secrets and ConfigMaps is seen) and calls back on a
// background thread. Used for policy reload and certificate rotation.
#ifndef GPU_TENANCY_SERVER_FILE_WATCH_H_
#define GPU_TENANCY_SERVER_FILE_WATCH_H_

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace server {

class FileWatcher {
 public:
  // `on_change` runs on the watcher thread after any of `paths` changed and then stayed
  // unchanged for one more poll (so a half-written pair of files is not picked up).
  FileWatcher(std::vector<std::string> paths, std::chrono::milliseconds interval,
              std::function<void()> on_change);
  ~FileWatcher();  // stops and joins
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

 private:
  std::string Fingerprint() const;
  void Run();
  // Waits one interval; true when the watcher is being stopped.
  bool Sleep();

  std::vector<std::string> paths_;
  std::chrono::milliseconds interval_;
  std::string seen_;  // the fingerprint at construction, for the thread to start from
  std::function<void()> on_change_;
  common::Mutex mu_;
  common::CondVar stopped_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_FILE_WATCH_H_
