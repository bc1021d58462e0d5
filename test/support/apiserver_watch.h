// Test support, part of the kube-apiserver emulation (fake_apiserver.h): watch streams. A
// watch starts from a resourceVersion (replaying the store's events after it; 410 Expired as
// an ERROR event when it is compacted) or from the current state as synthetic ADDED events, then
// follows the store as kube-apiserver's cacheWatcher does under a selector (ADDED when an object
// starts matching, DELETED with the old content when it stops), sends BOOKMARKs when asked, and
// ends at timeoutSeconds, on DropWatches(), on Stop() or when the client hangs up. One event a
// chunk, one line an event, as kube-apiserver flushes them (watch-pods.raw).
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_WATCH_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "test/support/apiserver_selectors.h"
#include "test/support/apiserver_status.h"
#include "test/support/apiserver_store.h"
#include "test/support/fake_apiserver.h"

namespace testing_support::apiserver {

// What every open watch looks at on each turn; FakeApiServer::Impl owns it under its mutex.
struct WatchControl {
  bool stopping = false;         // the server is stopping: streams are cut (and binds stop waiting)
  uint64_t drop_generation = 0;  // DropWatches() bumps it
  bool drop_graceful = false;    // ... and says whether streams end cleanly or are cut
  std::chrono::milliseconds bookmark_interval{1000};
  int open = 0;  // streams being served
};

// One watch stream.
class Watch {
 public:
  enum class Turn { kMore, kFinish, kAbort };  // go on; end the body cleanly; cut it

  // Reads `query` (the 400 reply when it is malformed); `fd` is the stream's socket, for
  // noticing a client that hangs up (-1: never). Needs no lock.
  std::optional<Reply> Configure(const CollectionQuery& query, std::chrono::seconds default_timeout,
                                 int fd);
  // Where the stream starts, as of now (400 for a malformed resourceVersion). Under the
  // server's mutex.
  std::optional<Reply> Begin(const ObjectStore& store, const WatchControl& control);
  Resource resource() const { return resource_; }
  // Waits on `cv` (which `lock`, the server's mutex, guards) until there is something to send
  // or the stream ends; appends the lines to send to `lines`.
  Turn Next(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
            const ObjectStore& store, const WatchControl& control, std::vector<std::string>* lines);

 private:
  using Clock = std::chrono::steady_clock;

  // Appends the events after cursor_ this watch sees.
  void Collect(const ObjectStore& store, std::vector<std::string>* out);

  Resource resource_ = Resource::kPods;
  std::string ns_;
  std::string api_version_;  // of the URL, for BOOKMARK objects
  Selector selector_;
  std::string resource_version_;
  int64_t cursor_ = 0;              // events up to here were sent
  std::deque<std::string> lines_;   // initial state, or the ERROR event
  bool close_after_lines_ = false;  // the 410 case
  bool bookmarks_ = false;
  Clock::time_point deadline_;
  Clock::time_point last_bookmark_;
  uint64_t drop_generation_ = 0;
  int fd_ = -1;
};

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_WATCH_H_
