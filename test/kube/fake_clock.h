// A kube::Clock whose time moves only when a test says so. Waits on it end when Advance()
// reaches their deadline (or their condition holds, as on the real clock), so a test runs a
// lease duration or a backoff in no time and in a known order:
//
//   kube_test::FakeClock clock;
//   options.clock = &clock;                 // LeaderOptions, ReflectorOptions
//   elector.Start();
//   ASSERT_TRUE(clock.AwaitSleepers(1));    // the elector made its attempt and now waits
//   clock.Advance(options.retry_period);    // wakes it: one more attempt
//
// Thread-safe. Waiters must have left (their threads joined) before the clock is destroyed.
#ifndef GPU_TENANCY_TEST_KUBE_FAKE_CLOCK_H_
#define GPU_TENANCY_TEST_KUBE_FAKE_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "common/mutex.h"
#include "kube/clock.h"

namespace kube_test {

class FakeClock final : public kube::Clock {
 public:
  // Starts at an arbitrary fixed point (an hour past the steady clock's epoch), so a run's
  // times are the same every run.
  FakeClock() = default;

  TimePoint Now() const override;
  bool WaitUntil(common::Mutex* mu, common::CondVar* cv, TimePoint deadline,
                 absl::FunctionRef<bool()> done) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Moves time forward by `d` and wakes every waiter; those whose deadline it reached return.
  void Advance(Duration d);
  // Moves time to the earliest deadline of a waiting thread, if any; false when none waits.
  bool AdvanceToNextDeadline();

  // Threads blocked in WaitUntil whose deadline is still ahead: the ones that Advance() reached
  // are not counted any more, even before they have run again.
  size_t Sleepers() const;
  // Waits in real time (at most `limit`) until at least `n` threads are Sleepers(); true if so.
  // After Advance(), AwaitSleepers(n) returns once every woken thread has done its work and
  // waits again.
  bool AwaitSleepers(size_t n, std::chrono::milliseconds limit = std::chrono::seconds(10)) const;

 private:
  struct Waiter;
  size_t SleepersLocked() const;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // time moved, or a waiter came or left
  TimePoint now_{std::chrono::hours(1)};
  std::vector<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace kube_test

#endif  // GPU_TENANCY_TEST_KUBE_FAKE_CLOCK_H_
