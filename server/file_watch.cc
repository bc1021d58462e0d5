#include "server/file_watch.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"

namespace server {

FileWatcher::FileWatcher(std::vector<std::string> paths, std::chrono::milliseconds interval,
                         std::function<void()> on_change)
    : paths_(std::move(paths)), interval_(interval), on_change_(std::move(on_change)) {
  // The baseline is what the files are now, not when the thread first runs: a change made
  // while the thread starts (a busy machine can take a while) is then still a change.
  seen_ = Fingerprint();
  thread_ = std::thread([this] {
    common::NameThisThread("file-watch");
    Run();
  });
}

FileWatcher::~FileWatcher() {
  {
    common::MutexLock lock(&mu_);
    stop_ = true;
  }
  stopped_.NotifyAll();
  thread_.join();
}

std::string FileWatcher::Fingerprint() const {
  std::string out;
  for (const std::string& path : paths_) {
    struct stat st = {};
    if (::stat(path.c_str(), &st) != 0) {
      absl::StrAppend(&out, "missing;");
      continue;
    }
    absl::StrAppend(&out, st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                    st.st_mtim.tv_nsec, ";");
  }
  return out;
}

bool FileWatcher::Sleep() {
  common::MutexLock lock(&mu_);
  const auto until = std::chrono::steady_clock::now() + interval_;
  while (!stop_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds::zero()) return false;
    stopped_.WaitFor(&mu_, left);
  }
  return true;
}

void FileWatcher::Run() {
  std::string seen = std::move(seen_);
  std::string pending;
  while (true) {
    if (Sleep()) return;
    std::string now = Fingerprint();
    if (now == seen) {
      pending.clear();
      continue;
    }
    if (now != pending) {  // changed since the last poll: wait for it to settle
      pending = now;
      continue;
    }
    seen = now;
    pending.clear();
    on_change_();
  }
}

}  // namespace server
