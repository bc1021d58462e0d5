#include "kube/clock.h"

namespace kube {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, absl::FunctionRef<bool()> done) override {
    return cv.wait_until(lock, deadline, done);
  }
};

}  // namespace

Clock& Clock::Real() {
  static SteadyClock* const clock = new SteadyClock();  // never destroyed: threads may outlive main
  return *clock;
}

}  // namespace kube
