// The fake clock the leader and reflector tests drive: time moves only on Advance(), a wait
// ends exactly when its deadline is reached or its condition holds, and AwaitSleepers() tells
// when woken threads are waiting again. Also the real clock's two ways out of a wait.
#include "test/kube/fake_clock.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace kube_test {
namespace {

using namespace std::chrono_literals;

// A thread that waits once on `clock` for `timeout` or until Wake(), and records how it ended.
class OneWait {
 public:
  OneWait(kube::Clock& clock, kube::Clock::Duration timeout)
      : thread_([this, &clock, timeout] {
          common::MutexLock lock(&mu_);
          woken_by_condition_ = clock.WaitFor(&mu_, &cv_, timeout, [this] { return wake_; });
          returned_.store(true);
        }) {}
  ~OneWait() {
    Wake();
    Join();
  }
  void Wake() {
    {
      common::MutexLock lock(&mu_);
      wake_ = true;
    }
    cv_.NotifyAll();
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  bool returned() const { return returned_.load(); }
  bool woken_by_condition() const { return woken_by_condition_; }  // after Join()

 private:
  common::Mutex mu_;
  common::CondVar cv_;
  bool wake_ = false;
  bool woken_by_condition_ = false;
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

TEST(FakeClockTest, TimeMovesOnlyWhenAdvanced) {
  FakeClock clock;
  const kube::Clock::TimePoint start = clock.Now();
  std::this_thread::sleep_for(2ms);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(1500ms);
  EXPECT_EQ(clock.Now() - start, 1500ms);
  EXPECT_FALSE(clock.AdvanceToNextDeadline()) << "nobody waits";
  EXPECT_EQ(clock.Now() - start, 1500ms);
  EXPECT_EQ(FakeClock().Now(), FakeClock().Now()) << "every fake clock starts at the same point";
}

TEST(FakeClockTest, AWaitEndsExactlyAtItsDeadline) {
  FakeClock clock;
  OneWait wait(clock, 1s);
  ASSERT_TRUE(clock.AwaitSleepers(1));
  clock.Advance(999ms);
  // Woken and asleep again: its deadline is still ahead.
  EXPECT_EQ(clock.Sleepers(), 1u);
  EXPECT_FALSE(wait.returned());
  clock.Advance(1ms);
  EXPECT_EQ(clock.Sleepers(), 0u) << "a reached deadline no longer counts, even before it runs";
  wait.Join();
  EXPECT_TRUE(wait.returned());
  EXPECT_FALSE(wait.woken_by_condition());
}

TEST(FakeClockTest, TheConditionEndsAWaitWithoutTimeMoving) {
  FakeClock clock;
  const kube::Clock::TimePoint start = clock.Now();
  OneWait wait(clock, std::chrono::hours(24));
  ASSERT_TRUE(clock.AwaitSleepers(1));
  wait.Wake();
  wait.Join();
  EXPECT_TRUE(wait.woken_by_condition());
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.Sleepers(), 0u);
}

TEST(FakeClockTest, AdvanceToNextDeadlineWakesTheEarliestWaiterOnly) {
  FakeClock clock;
  const kube::Clock::TimePoint start = clock.Now();
  OneWait late(clock, 300ms);
  OneWait early(clock, 100ms);
  ASSERT_TRUE(clock.AwaitSleepers(2));
  ASSERT_TRUE(clock.AdvanceToNextDeadline());
  EXPECT_EQ(clock.Now() - start, 100ms);
  early.Join();
  EXPECT_FALSE(early.woken_by_condition());
  EXPECT_EQ(clock.Sleepers(), 1u);
  EXPECT_FALSE(late.returned());
  ASSERT_TRUE(clock.AdvanceToNextDeadline());
  EXPECT_EQ(clock.Now() - start, 300ms);
  late.Join();
  EXPECT_FALSE(late.woken_by_condition());
}

// AwaitSleepers after Advance: returns once the woken thread has done its turn and waits again.
TEST(FakeClockTest, AwaitSleepersSeesAPeriodicThreadWaitAgain) {
  FakeClock clock;
  common::Mutex mu;
  common::CondVar cv;
  bool stop = false;
  std::atomic<int> turns{0};
  std::thread ticker([&] {
    common::MutexLock lock(&mu);
    while (!stop) {
      turns.fetch_add(1);
      clock.WaitFor(&mu, &cv, 100ms, [&] { return stop; });
    }
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(turns.load(), 1);
  for (int i = 2; i <= 5; ++i) {
    clock.Advance(100ms);
    ASSERT_TRUE(clock.AwaitSleepers(1));
    EXPECT_EQ(turns.load(), i);
  }
  clock.Advance(50ms);
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(turns.load(), 5) << "half a period is not a turn";
  {
    common::MutexLock lock(&mu);
    stop = true;
  }
  cv.NotifyAll();
  ticker.join();
  EXPECT_FALSE(clock.AwaitSleepers(1, 10ms));
}

TEST(RealClockTest, AWaitEndsOnItsConditionOrItsTimeout) {
  kube::Clock& clock = kube::Clock::Real();
  const kube::Clock::TimePoint before = clock.Now();
  {
    OneWait wait(clock, 20ms);
    wait.Join();
    EXPECT_FALSE(wait.woken_by_condition());
  }
  EXPECT_GE(clock.Now() - before, 20ms);
  OneWait wait(clock, std::chrono::hours(24));
  wait.Wake();
  wait.Join();
  EXPECT_TRUE(wait.woken_by_condition());
}

}  // namespace
}  // namespace kube_test
