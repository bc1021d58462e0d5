#include "kube/clock.h"

namespace kube {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  bool WaitUntil(common::Mutex* mu, common::CondVar* cv, TimePoint deadline,
                 absl::FunctionRef<bool()> done) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (!done()) {
      if (!cv->WaitUntil(mu, deadline)) return done();
    }
    return true;
  }
};

}  // namespace

Clock& Clock::Real() {
  static SteadyClock* const clock = new SteadyClock();  // never destroyed: threads may outlive main
  return *clock;
}

}  // namespace kube
