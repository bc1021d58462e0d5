// Graceful shutdown under load: SIGTERM fails readiness promptly, requests in flight complete,
// and the process exits 0 within a grace period. With --shutdown-delay the server keeps
// answering while readiness fails, so callers that stop on readiness see no failure at all.
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/test_inputs.h"

namespace {

using testing_support::ServeProcess;
using Clock = std::chrono::steady_clock;

constexpr char kFilterBody[] =
    R"({"Pod":{"metadata":{"name":"llm-b","namespace":"acme","uid":"shutdown-1"},)"
    R"("spec":{"containers":[{"name":"server","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
    R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
    R"("Nodes":null,"NodeNames":["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"]})";

struct Tally {
  std::atomic<int> before_ok{0};
  std::atomic<int> before_failed{0};
  std::atomic<int> after_ok{0};
  std::atomic<int> after_refused{0};     // transport error: connection refused or closed
  std::atomic<int> after_bad_status{0};  // an HTTP answer other than 200
};

// Four callers post valid filters on keep-alive connections until `stop`; each request is
// classified by whether it started before `signalled`.
void RunLoad(int port, const std::string& ca, std::atomic<bool>& signalled, std::atomic<bool>& stop,
             Tally& tally) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, port, ca] {
      auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
      client->set_ca_cert_path(ca.c_str());
      client->enable_server_certificate_verification(true);
      client->set_keep_alive(true);
      client->set_read_timeout(10, 0);
      client->set_connection_timeout(2, 0);
      while (!stop.load()) {
        bool after = signalled.load();
        httplib::Result r = client->Post("/extender/filter", kFilterBody, "application/json");
        if (!after) {
          (r && r->status == 200 ? tally.before_ok : tally.before_failed).fetch_add(1);
        } else if (!r) {
          tally.after_refused.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        } else {
          (r->status == 200 ? tally.after_ok : tally.after_bad_status).fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(ShutdownTest, SigtermUnderLoadDrainsAndExitsZero) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start({"--demo"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  ASSERT_EQ(server.Get("/readyz").status, 200);
  std::atomic<bool> signalled{false}, stop{false};
  Tally tally;
  std::thread load(
      [&] { RunLoad(server.tls_port(), server.cert_dir() + "/ca.crt", signalled, stop, tally); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  signalled.store(true);
  auto signal_at = Clock::now();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  // Readiness fails (503) or the operator port is gone (status 0), promptly.
  int ready = 200;
  while (ready == 200 && Clock::now() - signal_at < std::chrono::seconds(2)) {
    ready = server.Get("/readyz").status;
  }
  EXPECT_NE(ready, 200) << "/readyz still 200 two seconds after SIGTERM";
  int status = server.WaitForExit(10000);
  double seconds = std::chrono::duration<double>(Clock::now() - signal_at).count();
  stop.store(true);
  load.join();
  ASSERT_NE(status, -1) << "no exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  std::cout << "exit after " << seconds << " s; before: " << tally.before_ok << " ok, "
            << tally.before_failed << " failed; after: " << tally.after_ok << " ok, "
            << tally.after_refused << " refused/closed, " << tally.after_bad_status << " non-200\n";
  EXPECT_GT(tally.before_ok.load(), 20);
  EXPECT_EQ(tally.before_failed.load(), 0) << "requests started before SIGTERM failed";
  EXPECT_EQ(tally.after_bad_status.load(), 0) << "an answered request was not a 200";
}

TEST(ShutdownTest, ShutdownDelayKeepsServingWhileReadinessFails) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--shutdown-delay", "2s"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  std::atomic<bool> signalled{false}, stop{false};
  Tally tally;
  std::thread load(
      [&] { RunLoad(server.tls_port(), server.cert_dir() + "/ca.crt", signalled, stop, tally); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  signalled.store(true);
  auto signal_at = Clock::now();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  int ready = 200;
  while (ready == 200 && Clock::now() - signal_at < std::chrono::seconds(2)) {
    ready = server.Get("/readyz").status;
  }
  EXPECT_EQ(ready, 503);
  double ready_failed_after = std::chrono::duration<double>(Clock::now() - signal_at).count();
  // Callers keep sending for a while after readiness fails (endpoints propagate slowly), well
  // inside the delay: every one of those requests is answered.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(server.Get("/readyz").status, 503);
  stop.store(true);  // the endpoint is gone: callers stop
  load.join();
  int status = server.WaitForExit(12000);
  double seconds = std::chrono::duration<double>(Clock::now() - signal_at).count();
  ASSERT_NE(status, -1) << "no exit within the grace period";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_GE(seconds, 2.0) << "exited before the shutdown delay";
  EXPECT_LT(ready_failed_after, 1.0);
  EXPECT_EQ(tally.before_failed.load(), 0);
  EXPECT_EQ(tally.after_refused.load(), 0) << "a request was refused during the delay";
  EXPECT_EQ(tally.after_bad_status.load(), 0);
  EXPECT_GT(tally.after_ok.load(), 10);
}

TEST(ShutdownTest, ShutdownDelayFlagIsValidated) {
  testing_support::TempDir dir;
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--shutdown-delay", "soon"}, dir.File("serve.log"));
  EXPECT_FALSE(s.ok());
  // Refused for that reason, not another.
  EXPECT_TRUE(absl::StrContains(testing_support::ReadFile(dir.File("serve.log")),
                                "error: --shutdown-delay takes a duration such as 5s (0s..10m)"))
      << testing_support::ReadFile(dir.File("serve.log"));
}

}  // namespace
