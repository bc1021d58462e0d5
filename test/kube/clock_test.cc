// kube::Clock: WaitFor is WaitUntil at Now() + timeout, and the real clock keeps the contract
// of a condition-variable wait with a predicate (the lock is held whenever the condition runs
// and on return, notifications without the condition do not end the wait, a condition that
// already holds or a deadline already passed ends it at once). Its two basic ways out (the
// condition set by another thread, the timeout) are in fake_clock_test.cc.
#include "kube/clock.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace kube {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Whether `mu` is held (by this thread or another): a second thread cannot take it.
bool Held(common::Mutex& mu) {
  bool taken = false;
  std::thread([&] {
    if (mu.TryLock()) {
      mu.Unlock();
    } else {
      taken = true;
    }
  }).join();
  return taken;
}

// Records what WaitFor hands to WaitUntil; its time is fixed.
class RecordingClock final : public Clock {
 public:
  explicit RecordingClock(TimePoint now) : now_(now) {}
  TimePoint Now() const override { return now_; }
  bool WaitUntil(common::Mutex* mu, common::CondVar*, TimePoint deadline,
                 absl::FunctionRef<bool()> done) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    deadlines.push_back(deadline);
    held_on_entry.push_back(Held(*mu));
    return done();
  }
  std::vector<TimePoint> deadlines;
  std::vector<bool> held_on_entry;

 private:
  TimePoint now_;
};

TEST(ClockTest, WaitForWaitsUntilNowPlusTheTimeout) {
  const Clock::TimePoint now = Steady::time_point(std::chrono::hours(5));
  RecordingClock clock(now);
  common::Mutex mu;
  common::CondVar cv;
  common::MutexLock lock(&mu);
  struct Row {
    const char* name;
    Clock::Duration timeout;
    bool done;
  };
  const Row rows[] = {{"seconds, not done", 30s, false},
                      {"milliseconds, done", 250ms, true},
                      {"zero", 0s, false},
                      {"negative", -1s, true}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(clock.WaitFor(&mu, &cv, row.timeout, [&] { return row.done; }), row.done);
    EXPECT_EQ(clock.deadlines.back(), now + row.timeout);
    EXPECT_TRUE(clock.held_on_entry.back());
  }
}

TEST(SteadyClockTest, IsOneClockAndFollowsTheSteadyClock) {
  EXPECT_EQ(&Clock::Real(), &Clock::Real());
  for (int i = 0; i < 100; ++i) {
    Steady::time_point before = Steady::now();
    Clock::TimePoint now = Clock::Real().Now();
    Steady::time_point after = Steady::now();
    ASSERT_LE(before, now);
    ASSERT_LE(now, after);
  }
}

TEST(SteadyClockTest, AConditionThatAlreadyHoldsEndsTheWaitAtOnce) {
  common::Mutex mu;
  common::CondVar cv;
  common::MutexLock lock(&mu);
  Steady::time_point start = Steady::now();
  EXPECT_TRUE(Clock::Real().WaitFor(&mu, &cv, std::chrono::hours(1), [] { return true; }));
  EXPECT_LT(Steady::now() - start, 10s) << "waited although the condition held";
  EXPECT_TRUE(Held(mu));
}

TEST(SteadyClockTest, APassedDeadlineEndsTheWaitAtOnceWithTheCondition) {
  common::Mutex mu;
  common::CondVar cv;
  common::MutexLock lock(&mu);
  Clock& clock = Clock::Real();
  Steady::time_point start = Steady::now();
  EXPECT_FALSE(clock.WaitUntil(&mu, &cv, clock.Now() - 1s, [] { return false; }));
  EXPECT_TRUE(clock.WaitUntil(&mu, &cv, clock.Now() - 1s, [] { return true; }));
  EXPECT_LT(Steady::now() - start, 10s);
  EXPECT_TRUE(Held(mu));
}

TEST(SteadyClockTest, TheConditionRunsUnderTheLockAndNotificationsAloneDoNotEndTheWait) {
  common::Mutex mu;
  common::CondVar cv;
  std::atomic<bool> stop_notifying{false};
  std::atomic<bool> notifier_inside{false};  // true only while the notifier holds `mu`
  std::atomic<int> checks{0};
  std::atomic<int> checks_without_the_lock{0};
  // Holds the mutex for a moment, then notifies, over and over, never making the condition
  // true. A condition run without the mutex could see the notifier inside.
  std::thread notifier([&] {
    while (!stop_notifying.load()) {
      {
        common::MutexLock g(&mu);
        notifier_inside.store(true);
        for (auto until = Steady::now() + 50us; Steady::now() < until;) {
        }
        notifier_inside.store(false);
      }
      cv.NotifyAll();
      std::this_thread::sleep_for(1ms);
    }
  });
  mu.Lock();
  Steady::time_point start = Steady::now();
  bool done = Clock::Real().WaitFor(&mu, &cv, 200ms, [&] {
    ++checks;
    if (notifier_inside.load()) ++checks_without_the_lock;
    return false;
  });
  Steady::duration waited = Steady::now() - start;
  EXPECT_TRUE(Held(mu));
  EXPECT_FALSE(notifier_inside.load()) << "returned without the lock";
  mu.Unlock();
  stop_notifying.store(true);
  notifier.join();
  EXPECT_FALSE(done);
  EXPECT_GE(waited, 200ms) << "a notification without the condition ended the wait";
  EXPECT_GT(checks.load(), 1) << "the condition was not checked again after a notification";
  EXPECT_EQ(checks_without_the_lock.load(), 0);
}

}  // namespace
}  // namespace kube
