// The time seam of kube/: the leader elector and the reflectors read the time from a Clock and
// wait on it, so a test moves time forward (test/kube/fake_clock.h) instead of sleeping
// through lease durations and backoffs. Production code uses Clock::Real(), the steady clock.
//
//   common::MutexLock lock(&mu_);
//   clock.WaitFor(&mu_, &cv_, retry_period, [this] { return stop_.load(); });
//
// The wait has the contract of std::condition_variable::wait_until with a predicate: whoever
// makes `done` true notifies `cv` after changing what `done` reads under the mutex (or after
// taking and releasing it), so the wakeup cannot be lost.
#ifndef GPU_TENANCY_KUBE_CLOCK_H_
#define GPU_TENANCY_KUBE_CLOCK_H_

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "common/mutex.h"

namespace kube {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;

  // The process's steady clock; waits are condition-variable waits with a deadline.
  static Clock& Real();

  virtual TimePoint Now() const = 0;

  // Blocks until `done()` holds or this clock reaches `deadline`, whichever is first. `mu`,
  // which the caller holds, guards what `done` reads; it is held whenever `done` runs and on
  // return. Returns done() as of returning. Thread-safe.
  virtual bool WaitUntil(common::Mutex* mu, common::CondVar* cv, TimePoint deadline,
                         absl::FunctionRef<bool()> done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  bool WaitFor(common::Mutex* mu, common::CondVar* cv, Duration timeout,
               absl::FunctionRef<bool()> done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitUntil(mu, cv, Now() + timeout, done);
  }
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_CLOCK_H_
