// Keep-alive against callers shaped like Go's http.Transport (test/server/go_like_caller.h),
// which do not retry a POST that fails on a reused connection: at none of the listener's close
// points (idle timeout, keep-alive request limit, Drain() and Stop()) may such a caller lose a
// request. Time is scaled down: the callers keep an idle connection for 1.5 s (Go: 90 s) and
// the listener for 2 s (120 s); the former default was shorter than the callers' (5 s), here
// 1 s.
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "gtest/gtest.h"
#include "server/listener.h"
#include "test/server/go_like_caller.h"
#include "test/server/tls_listener_harness.h"

namespace server::listener_test {
namespace {

using KeepAliveCallersTest = TlsListenerTest;

constexpr milliseconds kCallerPoolIdle{1500};
constexpr milliseconds kServerIdle{2000};
constexpr milliseconds kFormerServerIdle{1000};

// Pauses at the former idle timeout, at 20 ms, just under and over the callers' and at the
// listener's: each one a caller makes in turn, give or take 2 ms (a third of them at the former
// close, where it lost requests).
GoCallerPlan PausesAroundEveryIdleTimeout() {
  GoCallerPlan plan;
  plan.callers = 100;
  plan.rounds = 6;
  plan.pool_idle = kCallerPoolIdle;
  plan.pauses = {kFormerServerIdle, milliseconds(20), kCallerPoolIdle - milliseconds(15),
                 kFormerServerIdle, kServerIdle,      kCallerPoolIdle + milliseconds(15)};
  plan.spread = milliseconds(2);
  return plan;
}

void PrintTally(const char* what, const GoCallerTally& t) {
  std::cout << what << ": " << t.sent() << " sent, " << t.ok << " ok, " << t.lost
            << " lost on a reused connection, " << t.failed_new << " failed on a new one; "
            << t.reused << " reused, " << t.pool_expired << " dropped at the pool's idle, "
            << t.closed_in_pool << " closed by the server while pooled, " << t.told_close
            << " told Connection: close\n";
}

TEST_F(KeepAliveCallersTest, NoRequestIsLostToTheIdleTimeout) {
  Listener::Options o;
  o.idle_timeout = kServerIdle;
  Start(o);
  GoCallerTally tally;
  GoCallerPlan plan = PausesAroundEveryIdleTimeout();
  RunGoLikeCallers(port(), "/pure", plan, tally);
  PrintTally("idle timeout above the callers'", tally);
  EXPECT_EQ(tally.lost.load(), 0);
  EXPECT_EQ(tally.failed_new.load(), 0);
  EXPECT_EQ(tally.ok.load(), plan.callers * plan.rounds);
  // The run exercised both sides of the callers' pool timeout.
  EXPECT_GT(tally.reused.load(), 0);
  EXPECT_GT(tally.pool_expired.load(), 0);
  EXPECT_EQ(Closed(*listener_, CloseReason::kIdleTimeout), 0u);
}

// The former behaviour, an idle timeout shorter than the callers': with the same callers and
// pauses the listener closes connections just as callers reuse them. Run on demand
// (--gtest_also_run_disabled_tests) to see the losses the test above guards against; it is
// not run by default because how many it loses depends on scheduling.
TEST_F(KeepAliveCallersTest, DISABLED_AnIdleTimeoutShorterThanTheCallersLosesRequests) {
  Listener::Options o;
  o.idle_timeout = kFormerServerIdle;
  Start(o);
  GoCallerTally tally;
  GoCallerPlan plan = PausesAroundEveryIdleTimeout();
  RunGoLikeCallers(port(), "/pure", plan, tally);
  PrintTally("idle timeout below the callers'", tally);
  EXPECT_GT(tally.lost.load(), 0);
}

TEST_F(KeepAliveCallersTest, TheLastReplyBeforeTheRequestLimitSaysCloseAndNothingIsLost) {
  Listener::Options o;
  o.idle_timeout = kServerIdle;
  o.keep_alive_max_requests = 3;
  Start(o);
  GoCallerTally tally;
  GoCallerPlan plan;
  plan.callers = 40;
  plan.rounds = 12;
  plan.pool_idle = kCallerPoolIdle;
  // Back to back, so the caller reuses the connection as soon as the reply is read.
  plan.pauses = {milliseconds(0), milliseconds(5), milliseconds(50)};
  plan.spread = milliseconds(2);
  RunGoLikeCallers(port(), "/pure", plan, tally);
  PrintTally("keep_alive_max_requests 3", tally);
  EXPECT_EQ(tally.lost.load(), 0);
  EXPECT_EQ(tally.failed_new.load(), 0);
  EXPECT_EQ(tally.ok.load(), plan.callers * plan.rounds);
  // Every connection served 3 requests and said so on the third (12 rounds: 4 connections).
  EXPECT_EQ(tally.told_close.load(), plan.callers * plan.rounds / 3);
  EXPECT_EQ(tally.reused.load(), plan.callers * plan.rounds * 2 / 3);
}

TEST_F(KeepAliveCallersTest, DrainTellsEveryCallerToLeaveAndStopLosesNothing) {
  Listener::Options o;
  o.idle_timeout = kServerIdle;
  Start(o);
  std::atomic<bool> drained{false}, stopped{false};
  GoCallerTally before, after;
  GoCallerPlan plan;
  plan.callers = 40;
  plan.rounds = 1000;  // until the listener has stopped
  plan.pool_idle = kCallerPoolIdle;
  plan.pauses = {milliseconds(200), milliseconds(700), milliseconds(1200)};
  plan.spread = milliseconds(150);
  plan.keep_going = [&] { return !stopped.load(); };
  plan.second_phase = [&] { return drained.load(); };
  std::thread callers([&] { RunGoLikeCallers(port(), "/pure", plan, before, &after); });
  std::this_thread::sleep_for(milliseconds(1500));
  listener_->Drain();
  drained.store(true);
  // Longer than any pause: every caller has been told to leave, and has, before Stop().
  std::this_thread::sleep_for(milliseconds(2000));
  uint64_t idle_closed_before_stop = Closed(*listener_, CloseReason::kIdleTimeout);
  listener_->Stop();
  stopped.store(true);
  callers.join();
  PrintTally("before Drain()", before);
  PrintTally("after Drain()", after);
  EXPECT_EQ(before.lost.load() + before.failed_new.load(), 0);
  EXPECT_GT(before.reused.load(), 0);
  // A caller's pooled connection carries one more request, whose reply says close; from then
  // on every reply does, and nothing is lost (requests after Stop() fail to connect).
  EXPECT_EQ(after.lost.load(), 0);
  EXPECT_GT(after.reused.load(), 0);
  EXPECT_LE(after.reused.load(), plan.callers);
  EXPECT_GT(after.ok.load(), plan.callers);
  EXPECT_EQ(after.told_close.load(), after.ok.load());
  EXPECT_EQ(idle_closed_before_stop, 0u);
}

}  // namespace
}  // namespace server::listener_test
