// Callers shaped like Go's http.Transport as kube-apiserver (webhooks) and kube-scheduler
// (extenders) use it, for the keep-alive tests: each caller keeps its connection for the next
// request unless the reply said Connection: close, drops it once it has been idle for
// `pool_idle` (IdleConnTimeout), and drops it before reuse when the server has closed it in the
// meantime (Go's per-connection background read notices that). A POST that fails on a reused
// connection is not retried: it is lost, which is what the listener must never cause.
#ifndef GPU_TENANCY_TEST_SERVER_GO_LIKE_CALLER_H_
#define GPU_TENANCY_TEST_SERVER_GO_LIKE_CALLER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace server::listener_test {

struct GoCallerTally {
  std::atomic<int> ok{0};
  std::atomic<int> lost{0};          // failed on a reused connection: the caller's request is gone
  std::atomic<int> failed_new{0};    // failed on a connection dialed for it (listener gone)
  std::atomic<int> reused{0};        // requests sent on a pooled connection
  std::atomic<int> told_close{0};    // replies that said Connection: close
  std::atomic<int> pool_expired{0};  // connections the caller dropped at pool_idle
  std::atomic<int> closed_in_pool{0};  // connections the server closed while pooled
  int sent() const { return ok.load() + lost.load() + failed_new.load(); }
};

struct GoCallerPlan {
  int callers = 50;
  int rounds = 8;
  std::chrono::milliseconds pool_idle{1500};
  // Each pause is one of these, in turn per caller, plus a uniform jitter of +-spread.
  std::vector<std::chrono::milliseconds> pauses;
  std::chrono::milliseconds spread{10};
  // Checked before each request: false ends the caller.
  std::function<bool()> keep_going = [] { return true; };
  // Checked before each request: true counts it in the second tally.
  std::function<bool()> second_phase = [] { return false; };
};

// Runs `plan.callers` threads against 127.0.0.1:`port`, each POSTing to `path` and pausing,
// and returns when all are done. Requests count in `tally`, or in `second` once
// plan.second_phase() holds.
void RunGoLikeCallers(int port, const std::string& path, const GoCallerPlan& plan,
                      GoCallerTally& tally, GoCallerTally* second = nullptr);

}  // namespace server::listener_test

#endif  // GPU_TENANCY_TEST_SERVER_GO_LIKE_CALLER_H_
