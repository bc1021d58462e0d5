// A reflector keeps one resource (nodes, pods or namespaces) mirrored from kube-apiserver:
// paginated list, then watch from the list's resourceVersion with bookmarks; relist on 410
// Gone; reconnect with jittered exponential backoff; and a periodic full relist that heals
// events the watch missed (a delete while it was down). Runs on its own thread.
#ifndef GPU_TENANCY_KUBE_REFLECTOR_H_
#define GPU_TENANCY_KUBE_REFLECTOR_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "common/mutex.h"
#include "kube/api.h"
#include "kube/clock.h"

namespace kube {

struct ReflectorOptions {
  int page_size = 500;
  std::chrono::milliseconds resync{std::chrono::minutes(5)};
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(30)};
  int watch_timeout_seconds = 300;  // server-side end of one watch call
  int read_timeout_seconds = 90;    // no byte for this long: the connection is dead
  // When the next resync is due and how long a backoff lasts (not owned; outlives the
  // reflector). The read timeout above is the HTTP client's, always in real time.
  Clock* clock = &Clock::Real();
};

struct ReflectorHandler {
  // Every item of a complete list (all pages), replacing what was known.
  std::function<void(const std::vector<const common::JsonValue*>& items)> replace;
  // One watch event: type is ADDED, MODIFIED or DELETED.
  std::function<void(absl::string_view type, const common::JsonValue& object)> event;
};

struct ReflectorCounters {
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> watches{0};
  std::atomic<uint64_t> watch_restarts{0};  // watches that ended in an error or a 410
  std::atomic<uint64_t> events{0};
};

class Reflector {
 public:
  // `path` is the collection, e.g. "/api/v1/pods".
  Reflector(Api& client, std::string path, ReflectorHandler handler, ReflectorOptions options = {});
  ~Reflector();  // stops and joins

  // Calls `begins` on the reflector's thread just before each list's first request is sent.
  // Set before Start().
  void OnListBegins(std::function<void()> begins) { list_begins_ = std::move(begins); }
  void Start();
  void Stop();
  // Lists again now, interrupting the running watch. Returns a ticket for ListedSince().
  uint64_t RequestRelist();
  // True once a complete list that began after RequestRelist() returned `ticket` was applied.
  bool ListedSince(uint64_t ticket) const { return applied_list_.load() > ticket; }
  bool synced() const { return synced_.load(); }
  const ReflectorCounters& counters() const { return counters_; }
  const std::string& path() const { return path_; }

 private:
  void Run();
  bool ListAll();  // false on failure (already logged)
  enum class WatchEnd { kRelist, kRewatch, kBackoff, kStopped };
  WatchEnd WatchOnce();
  void Sleep(std::chrono::milliseconds d);  // wakes early on Stop()

  Api& client_;
  std::string path_;
  ReflectorHandler handler_;
  std::function<void()> list_begins_;
  ReflectorOptions options_;
  std::string resource_version_;
  Clock::TimePoint next_resync_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  std::atomic<bool> relist_requested_{false};
  std::atomic<uint64_t> lists_begun_{0};   // numbers the lists as they begin
  std::atomic<uint64_t> applied_list_{0};  // the number of the latest list applied
  ReflectorCounters counters_;
  Api::Stream stream_;
  std::unique_ptr<char[]> event_buffer_;  // each watch event is parsed in here (see WatchOnce)
  // Guards no data: Stop() and RequestRelist() take it between setting their flag and notifying
  // sleep_cv_, so a backoff Sleep() about to wait cannot miss the wakeup.
  common::Mutex sleep_mu_;
  common::CondVar sleep_cv_;
  std::thread thread_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_REFLECTOR_H_
