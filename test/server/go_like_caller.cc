#include "test/server/go_like_caller.h"

#include <memory>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "test/server/tls_listener_harness.h"

namespace server::listener_test {
namespace {

class GoLikeCaller {
 public:
  GoLikeCaller(int port, const GoCallerPlan& plan) : port_(port), plan_(plan) {}

  void Post(const std::string& path, const std::string& body, GoCallerTally& tally) {
    tally_ = &tally;
    bool reused = Pooled();
    if (!reused) {
      conn_ = std::make_unique<Client>(port_);
      if (!conn_->Handshake()) {
        conn_.reset();
        tally_->failed_new.fetch_add(1);
        return;
      }
    } else {
      tally_->reused.fetch_add(1);
    }
    std::string response;
    if (conn_->Send(listener_test::Post(path, body))) response = conn_->ReadResponse();
    if (Status(response) != 200) {
      conn_.reset();
      (reused ? tally_->lost : tally_->failed_new).fetch_add(1);
      return;
    }
    tally_->ok.fetch_add(1);
    if (absl::StrContains(response, "Connection: close")) {
      tally_->told_close.fetch_add(1);
      conn_.reset();
      return;
    }
    idle_since_ = Clock::now();
  }

  // Sleeps for `pause`; the pooled connection is closed when it has been idle for pool_idle,
  // as the transport's idle timer does.
  void Pause(std::chrono::microseconds pause) {
    Clock::time_point wake = Clock::now() + pause;
    if (conn_ && idle_since_ + plan_.pool_idle < wake) {
      std::this_thread::sleep_until(idle_since_ + plan_.pool_idle);
      tally_->pool_expired.fetch_add(1);
      conn_.reset();
    }
    std::this_thread::sleep_until(wake);
  }

 private:
  // Whether the pooled connection may carry the next request, as Go's transport decides it.
  bool Pooled() {
    if (!conn_) return false;
    if (Clock::now() - idle_since_ >= plan_.pool_idle) {
      tally_->pool_expired.fetch_add(1);
      conn_.reset();
      return false;
    }
    if (!conn_->QuietAndOpen()) {
      tally_->closed_in_pool.fetch_add(1);
      conn_.reset();
      return false;
    }
    return true;
  }

  int port_;
  const GoCallerPlan& plan_;
  GoCallerTally* tally_ = nullptr;
  std::unique_ptr<Client> conn_;
  Clock::time_point idle_since_;
};

}  // namespace

void RunGoLikeCallers(int port, const std::string& path, const GoCallerPlan& plan,
                      GoCallerTally& tally, GoCallerTally* second) {
  std::vector<std::thread> threads;
  for (int i = 0; i < plan.callers; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 random(static_cast<uint32_t>(i + 1));
      std::uniform_int_distribution<int64_t> jitter(-plan.spread.count() * 1000,
                                                    plan.spread.count() * 1000);
      GoLikeCaller caller(port, plan);
      // Callers start spread over the first pause, as independent callers would.
      std::this_thread::sleep_for(std::chrono::microseconds(jitter(random)) + plan.spread);
      for (int round = 0; round < plan.rounds && plan.keep_going(); ++round) {
        GoCallerTally& counted = second && plan.second_phase() ? *second : tally;
        caller.Post(path, absl::StrCat("{\"caller\":", i, ",\"round\":", round, "}"), counted);
        std::chrono::microseconds pause =
            plan.pauses[static_cast<size_t>(i + round) % plan.pauses.size()];
        caller.Pause(pause + std::chrono::microseconds(jitter(random)));
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace server::listener_test
