// Hostile connections over HTTPS that are not rows of the request table (hostile_table_test.cc):
// hundreds of idle and half-open connections, and requests dripped forever, must not starve a
// well-behaved caller.
#include <fcntl.h>
#include <httplib.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/server/hostile_client.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ServeProcess;
using Clock = std::chrono::steady_clock;
using hostile_test::Alive;
using hostile_test::ClientContext;
using hostile_test::Connect;
using hostile_test::kFilterBody;
using hostile_test::WellBehavedClient;

constexpr int kSmallCap = 65536;

// Hundreds of idle connections (TCP, some mid-handshake) must not starve a caller on an
// established keep-alive connection, and the server serves new callers once they go away.
TEST(HostileConnectionsTest, HundredsOfIdleConnections) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--max-body-bytes", absl::StrCat(kSmallCap)});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  WellBehavedClient good(server.tls_port(), server.cert_dir() + "/ca.crt");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    int fd = Connect(server.tls_port());
    ASSERT_GE(fd, 0) << "connection " << i;
    if (i % 3 == 0) (void)!write(fd, "\x16\x03\x01\x00", 4);  // a handshake that never finishes
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(Alive(server.pid()));
  EXPECT_EQ(server.Get("/healthz").status, 200);
  for (int fd : idle) close(fd);
  good.Stop();
  EXPECT_EQ(good.failed(), 0);
  EXPECT_GT(good.ok(), 20);
  // A new caller is served once the idle connections are gone (bounded by the timeouts).
  auto deadline = Clock::now() + std::chrono::seconds(15);
  int status = 0;
  while (Clock::now() < deadline && status != 200) {
    status = server.Post("/extender/filter", kFilterBody).status;
  }
  EXPECT_EQ(status, 200);
}

// A TLS connection that opens a request and then sends one byte every 300 ms: each read
// completes well inside the read timeout, so only the total request deadline ends it.
struct Drip {
  bool closed = false;  // the server closed the connection (not our give-up)
  int bytes = 0;        // bytes sent before it did
  double seconds = 0;
};
Drip DripForever(int port, double give_up_seconds) {
  Drip d;
  int fd = Connect(port);
  if (fd < 0) return d;
  SSL* ssl = SSL_new(ClientContext());
  SSL_set_fd(ssl, fd);
  auto start = Clock::now();
  if (SSL_connect(ssl) == 1) {
    const std::string head = "POST /extender/filter HTTP/1.1\r\nHost: localhost\r\nX-Drip: ";
    if (SSL_write(ssl, head.data(), static_cast<int>(head.size())) > 0) {
      // Non-blocking from here: TLS 1.3 session tickets arrive as readable bytes without any
      // application data, and a blocking read would wait for the server instead of dripping.
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      auto closed = [&](int rc) {
        int e = SSL_get_error(ssl, rc);
        return e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
      };
      while (std::chrono::duration<double>(Clock::now() - start).count() < give_up_seconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        char buf[256];
        int rc = SSL_read(ssl, buf, sizeof(buf));
        if (rc <= 0 && closed(rc)) {
          d.closed = true;
          break;
        }
        rc = SSL_write(ssl, "a", 1);
        if (rc <= 0 && closed(rc)) {
          d.closed = true;
          break;
        }
        d.bytes += rc > 0;
      }
    }
  }
  d.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  SSL_free(ssl);
  close(fd);
  return d;
}

TEST(RequestDeadlineTest, DrippedRequestsAreCutOffAndOthersStayServed) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--request-deadline", "2s", "--threads", "8"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  WellBehavedClient good(server.tls_port(), server.cert_dir() + "/ca.crt");
  // More drippers than workers: without the deadline they would hold every worker.
  std::vector<std::thread> drippers;
  std::vector<Drip> drips(12);
  for (size_t i = 0; i < drips.size(); ++i) {
    drippers.emplace_back([&, i] { drips[i] = DripForever(server.tls_port(), 20.0); });
  }
  for (std::thread& t : drippers) t.join();
  for (const Drip& d : drips) {
    EXPECT_TRUE(d.closed) << "still open after " << d.seconds << " s, " << d.bytes << " bytes";
    EXPECT_GT(d.bytes, 2);      // it was dripping, not refused at once
    EXPECT_LT(d.seconds, 6.0);  // 2 s deadline, checked every 200 ms, plus scheduling slack
  }
  good.Stop();
  EXPECT_EQ(good.failed(), 0);
  EXPECT_GT(good.ok(), 5);
  ServeProcess::Response metrics = server.Get("/metrics");
  std::optional<double> expired = testing_support::SampleValue(
      metrics.body, "gpu_tenancy_request_deadline_expired_total{listener=\"tls\"}");
  ASSERT_TRUE(expired.has_value());
  EXPECT_GE(*expired, 12);
}

TEST(RequestDeadlineTest, KeepAliveCallersAreNotCutOffBetweenRequests) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--request-deadline", "1s"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  httplib::SSLClient client("127.0.0.1", server.tls_port());
  client.set_ca_cert_path((server.cert_dir() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  // Pauses longer than the deadline between requests, shorter than the keep-alive timeout (5 s):
  // the deadline counts from the previous reply plus that idle time.
  for (int i = 0; i < 3; ++i) {
    httplib::Result r = client.Post("/extender/filter", kFilterBody, "application/json");
    ASSERT_TRUE(r) << "request " << i << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }
  std::optional<double> expired = testing_support::SampleValue(
      server.Get("/metrics").body, "gpu_tenancy_request_deadline_expired_total{listener=\"tls\"}");
  EXPECT_EQ(expired, 0);
}

}  // namespace
