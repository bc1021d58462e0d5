#include "test/kube/fake_clock.h"

#include <algorithm>

namespace kube_test {

// One thread in WaitUntil. Advance() notifies its condition variable holding its mutex, so a
// waiter between checking the time and blocking cannot miss the wakeup. `gate` and `gone` keep
// Advance() from touching that mutex once the waiter has returned (its owner may be gone).
struct FakeClock::Waiter {
  common::CondVar* cv;
  common::Mutex* mu;
  TimePoint deadline;
  std::mutex gate;
  bool gone = false;
};

kube::Clock::TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

// Lock order: the waiter's mutex, then mu_ (here); a gate, then the waiter's mutex (Advance).
// Nothing takes a gate or a waiter's mutex while holding mu_.
bool FakeClock::WaitUntil(common::Mutex* mu, common::CondVar* cv, TimePoint deadline,
                          absl::FunctionRef<bool()> done) {
  auto self = std::make_shared<Waiter>();
  self->cv = cv;
  self->mu = mu;
  self->deadline = deadline;
  {
    std::lock_guard<std::mutex> g(mu_);
    waiters_.push_back(self);
  }
  changed_.notify_all();
  while (!done() && Now() < deadline) cv->Wait(mu);
  // Leaving needs the gate, which Advance() holds while it takes our mutex: release that first.
  mu->Unlock();
  {
    std::lock_guard<std::mutex> g(self->gate);
    self->gone = true;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), self));
  }
  changed_.notify_all();
  mu->Lock();
  return done();
}

void FakeClock::Advance(Duration d) {
  std::vector<std::shared_ptr<Waiter>> waiters;
  {
    std::lock_guard<std::mutex> g(mu_);
    now_ += d;
    waiters = waiters_;
  }
  changed_.notify_all();
  for (const std::shared_ptr<Waiter>& w : waiters) {
    std::lock_guard<std::mutex> g(w->gate);
    if (w->gone) continue;
    common::MutexLock l(w->mu);
    w->cv->NotifyAll();
  }
}

bool FakeClock::AdvanceToNextDeadline() {
  Duration step;
  {
    std::lock_guard<std::mutex> g(mu_);
    TimePoint next = TimePoint::max();
    for (const std::shared_ptr<Waiter>& w : waiters_) {
      if (w->deadline > now_) next = std::min(next, w->deadline);
    }
    if (next == TimePoint::max()) return false;
    step = next - now_;
  }
  Advance(step);
  return true;
}

size_t FakeClock::SleepersLocked() const {
  return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(),
                                           [this](const auto& w) { return w->deadline > now_; }));
}

size_t FakeClock::Sleepers() const {
  std::lock_guard<std::mutex> g(mu_);
  return SleepersLocked();
}

bool FakeClock::AwaitSleepers(size_t n, std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> g(mu_);
  return changed_.wait_for(g, limit, [&] { return SleepersLocked() >= n; });
}

}  // namespace kube_test
