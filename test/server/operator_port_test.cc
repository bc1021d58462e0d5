// The plain operator port (/healthz, /readyz, /metrics, /debug/...), served by the same event
// loops as the TLS port: clients that connect and send nothing, or drip their request a byte at
// a time, must never keep the kubelet's probe from an answer; requests the port cannot serve
// get a status and a JSON reason.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/listener.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ServeProcess;
using Clock = std::chrono::steady_clock;

// `receive_buffer` > 0 sets SO_RCVBUF first, which caps how much a caller that does not read
// lets the server send.
int ConnectTo(int port, int receive_buffer = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `timeout` passes; `closed` says which.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout, bool* closed = nullptr) {
  std::string in;
  const Clock::time_point until = Clock::now() + timeout;
  if (closed) *closed = false;
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count());
    if (poll(&p, 1, std::max(left, 1)) <= 0) continue;
    char buffer[4096];
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    in.append(buffer, static_cast<size_t>(n));
  }
  return in;
}

// Sends `pieces` (with `gap` between them) on a fresh connection and returns all it gets back
// before the server closes, or "" if it did not answer within `timeout`.
std::string Exchange(int port, const std::vector<std::string>& pieces,
                     std::chrono::milliseconds gap = std::chrono::milliseconds(0),
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  int fd = ConnectTo(port);
  if (fd < 0) return "";
  for (const std::string& piece : pieces) {
    if (send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(piece.size())) {
      break;
    }
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
  }
  bool closed = false;
  std::string reply = ReadUntilClosed(fd, timeout, &closed);
  close(fd);
  return closed ? reply : "";
}

std::string StatusLine(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }

std::string Body(const std::string& reply) {
  size_t at = reply.find("\r\n\r\n");
  return at == std::string::npos ? "" : reply.substr(at + 4);
}

class OperatorPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start({"--demo"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  std::unique_ptr<ServeProcess> server_;
};

TEST_F(OperatorPortTest, AnswersWhatItServesAndRefusesTheRest) {
  const int port = server_->metrics_port();
  struct Case {
    std::string name;
    std::vector<std::string> pieces;
    std::string status_line;
    std::string body;  // exact, or empty to skip
  };
  const std::vector<Case> cases = {
      {"probe",
       {"GET /healthz HTTP/1.1\r\nHost: pod\r\nUser-Agent: kube-probe/1.30\r\n\r\n"},
       "HTTP/1.1 200 OK",
       "ok\n"},
      {"http 1.0", {"GET /readyz HTTP/1.0\r\n\r\n"}, "HTTP/1.1 200 OK", "ok\n"},
      {"query string ignored",
       {"GET /healthz?verbose=1 HTTP/1.1\r\n\r\n"},
       "HTTP/1.1 200 OK",
       "ok\n"},
      {"head has no body", {"HEAD /healthz HTTP/1.1\r\n\r\n"}, "HTTP/1.1 200 OK", ""},
      {"split across packets",
       {"GE", "T /hea", "lthz HTTP/1.1\r", "\n\r\n"},
       "HTTP/1.1 200 OK",
       "ok\n"},
      {"unknown route",
       {"GET /debug/pprof HTTP/1.1\r\n\r\n"},
       "HTTP/1.1 404 Not Found",
       "{\"error\":\"no such route\"}"},
      {"post",
       {"POST /healthz HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"},
       "HTTP/1.1 405 Method Not Allowed",
       "{\"error\":\"method not allowed\"}"},
      {"no version",
       {"GET /healthz\r\n\r\n"},
       "HTTP/1.1 400 Bad Request",
       "{\"error\":\"malformed request: bad target\"}"},
      {"http 2 preface",
       {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
       "HTTP/1.1 400 Bad Request",
       "{\"error\":\"malformed request: bad version\"}"},
      {"a body",
       {"GET /healthz HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"},
       "HTTP/1.1 400 Bad Request",
       "{\"error\":\"operator routes take no request body\"}"},
      {"garbage",
       {"\x16\x03\x01\x02\xfc\x03\x03 \xff\xfe\r\n\r\n"},
       "HTTP/1.1 400 Bad Request",
       ""},
      {"huge head",
       {absl::StrCat("GET /healthz HTTP/1.1\r\nX-Pad: ", std::string(20000, 'a'), "\r\n\r\n")},
       "HTTP/1.1 431 Request Header Fields Too Large",
       "{\"error\":\"request head too large (over 16384 bytes)\"}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string reply =
        Exchange(port, c.pieces, std::chrono::milliseconds(c.pieces.size() > 1 ? 50 : 0));
    EXPECT_EQ(StatusLine(reply), c.status_line) << reply;
    EXPECT_NE(reply.find("\r\nConnection: close\r\n"), std::string::npos) << reply;
    EXPECT_NE(reply.find("\r\nCache-Control: no-store\r\n"), std::string::npos) << reply;
    if (c.name == "post") {
      EXPECT_NE(reply.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << reply;
    }
    if (c.name == "head has no body") {
      EXPECT_NE(reply.find("\r\nContent-Length: 3\r\n"), std::string::npos) << reply;
    }
    if (!c.body.empty() || c.name == "head has no body") {
      EXPECT_EQ(Body(reply), c.body);
    }
  }
  // /metrics still parses after all that, and says nothing expired.
  ServeProcess::Response metrics = server_->Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(testing_support::SampleValue(
                metrics.body, "gpu_tenancy_request_deadline_expired_total{listener=\"operator\"}"),
            0.0);
  EXPECT_EQ(testing_support::PromtoolProblems(metrics.body), "");
}

// The attack that matters: kubelet restarts the pod when /healthz times out (1 s by default)
// three times in a row. Hundreds of silent connections and dozens of dripping ones, kept up for
// longer than the request deadline, must not delay a probe.
TEST_F(OperatorPortTest, SilentAndDrippingClientsNeverDelayAProbe) {
  const int port = server_->metrics_port();
  std::vector<int> silent, dripping;
  for (int i = 0; i < 700; ++i) {  // more than the 512 connections the listener keeps
    int fd = ConnectTo(port);
    ASSERT_GE(fd, 0) << i;
    silent.push_back(fd);
  }
  for (int i = 0; i < 40; ++i) {
    int fd = ConnectTo(port);
    ASSERT_GE(fd, 0) << i;
    dripping.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    while (!stop.load()) {
      for (int fd : dripping) send(fd, "G", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  // Probes for 5 s, past the 3 s request deadline, at the kubelet's pace and faster.
  int probes = 0;
  std::chrono::milliseconds slowest(0);
  for (Clock::time_point until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
    Clock::time_point start = Clock::now();
    std::string reply =
        Exchange(port, {"GET /healthz HTTP/1.1\r\n\r\n"}, {}, std::chrono::milliseconds(1000));
    ASSERT_EQ(StatusLine(reply), "HTTP/1.1 200 OK") << "probe " << probes << ": " << reply;
    slowest = std::max(slowest,
                       std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
    ++probes;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  dripper.join();
  EXPECT_GE(probes, 20);
  EXPECT_LT(slowest.count(), 1000);

  // Past their deadline, the dripping connections were closed by the server.
  int closed = 0;
  for (int fd : dripping) {
    bool was_closed = false;
    ReadUntilClosed(fd, std::chrono::milliseconds(100), &was_closed);
    closed += was_closed ? 1 : 0;
    close(fd);
  }
  EXPECT_EQ(closed, static_cast<int>(dripping.size()));
  for (int fd : silent) close(fd);
  ServeProcess::Response metrics = server_->Get("/metrics");
  std::optional<double> expired = testing_support::SampleValue(
      metrics.body, "gpu_tenancy_request_deadline_expired_total{listener=\"operator\"}");
  ASSERT_TRUE(expired.has_value()) << metrics.body;
  EXPECT_GE(*expired, static_cast<double>(dripping.size()));
  // The same count in the port's own families, beside the TLS port's.
  EXPECT_EQ(testing_support::SampleValue(
                metrics.body,
                "gpu_tenancy_operator_connections_closed_total{reason=\"request_deadline\"}"),
            *expired);
  EXPECT_EQ(testing_support::SampleValue(metrics.body,
                                         "gpu_tenancy_operator_connection_limit{scope=\"total\"}"),
            512.0);
}

// An operator port alone (as the node agent and `gpu-tenancy ui` run it), on 127.0.0.1.
std::unique_ptr<server::Listener> StartOperatorPort(std::vector<server::OperatorRoute> routes,
                                                    server::Listener::Options options = {}) {
  options.port = -1;
  if (!options.operator_port) options.operator_port.emplace();
  options.operator_port->host = "127.0.0.1";
  options.operator_port->port = 0;
  absl::StatusOr<std::unique_ptr<server::Listener>> listener =
      server::Listener::Bind(options, nullptr, {}, std::move(routes));
  EXPECT_TRUE(listener.ok()) << listener.status();
  if (!listener.ok()) return nullptr;
  (*listener)->Start();
  return *std::move(listener);
}

uint64_t Closed(const server::Listener& listener, server::CloseReason reason) {
  return listener.operator_stats().closed[static_cast<size_t>(reason)].load();
}

// In process, with handlers the test controls: a slow scrape (a /metrics waiting on the
// cluster-state lock during a relist) must not hold up a probe, and scrapes piling up behind it
// get a 503 instead of queueing without bound.
TEST(OperatorPortHandlersTest, ASlowHandlerDoesNotHoldUpProbes) {
  std::atomic<bool> release{false};
  std::atomic<int> slow_calls{0};
  std::vector<server::OperatorRoute> routes = {
      {"/healthz",
       [] {
         return server::OperatorReply{200, "text/plain", "ok\n"};
       },
       true},
      {"/metrics",
       [&] {
         ++slow_calls;
         while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
         return server::OperatorReply{200, "text/plain", "scraped\n"};
       }},
  };
  server::Listener::Options options;
  options.operator_port.emplace();
  options.operator_port->max_queued = 2;
  std::unique_ptr<server::Listener> listener = StartOperatorPort(routes, options);
  ASSERT_NE(listener, nullptr);
  const int port = listener->operator_port();

  // Two scrapes take the handler thread and its queue; both wait for `release`.
  std::string first, second;
  std::thread scrape1([&] {
    first = Exchange(port, {"GET /metrics HTTP/1.1\r\n\r\n"}, {}, std::chrono::milliseconds(5000));
  });
  while (slow_calls.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::thread scrape2([&] {
    second = Exchange(port, {"GET /metrics HTTP/1.1\r\n\r\n"}, {}, std::chrono::milliseconds(5000));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  // A third finds the queue full.
  std::string refused = Exchange(port, {"GET /metrics HTTP/1.1\r\n\r\n"});
  EXPECT_EQ(StatusLine(refused), "HTTP/1.1 503 Service Unavailable") << refused;
  EXPECT_EQ(Body(refused), "{\"error\":\"too many requests waiting; retry later\"}");

  // Probes are answered at once while the scrapes wait.
  for (int i = 0; i < 10; ++i) {
    Clock::time_point start = Clock::now();
    std::string probe =
        Exchange(port, {"GET /healthz HTTP/1.1\r\n\r\n"}, {}, std::chrono::milliseconds(1000));
    EXPECT_EQ(StatusLine(probe), "HTTP/1.1 200 OK") << probe;
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  }
  EXPECT_EQ(slow_calls.load(), 1);

  release = true;
  scrape1.join();
  scrape2.join();
  EXPECT_EQ(Body(first), "scraped\n") << first;
  EXPECT_EQ(Body(second), "scraped\n") << second;
  EXPECT_EQ(slow_calls.load(), 2);
  EXPECT_EQ(listener->operator_stats().rejected_busy.load(), 1u);
  EXPECT_EQ(Closed(*listener, server::CloseReason::kRequestDeadline), 0u);
  EXPECT_EQ(Closed(*listener, server::CloseReason::kReplyDeadline), 0u);
  listener->Stop();
}

// A caller that asks for a large reply and never reads it is cut off at the reply deadline,
// and others are served meanwhile: the loop never blocks on a full socket buffer.
TEST(OperatorPortHandlersTest, AReaderThatStallsIsCutOffAtTheReplyDeadline) {
  std::vector<server::OperatorRoute> routes = {
      {"/healthz",
       [] {
         return server::OperatorReply{200, "text/plain", "ok\n"};
       },
       true},
      {"/debug/big",
       [] {
         return server::OperatorReply{200, "application/json", std::string(16 << 20, ' ')};
       }},
  };
  server::Listener::Options options;
  options.operator_port.emplace();
  options.operator_port->reply_deadline = std::chrono::milliseconds(500);
  std::unique_ptr<server::Listener> listener = StartOperatorPort(routes, options);
  ASSERT_NE(listener, nullptr);
  const int port = listener->operator_port();

  // A small receive buffer, so most of the 16 MiB must wait in the server's socket.
  int staller = ConnectTo(port, 4096);
  ASSERT_GE(staller, 0);
  const std::string request = "GET /debug/big HTTP/1.1\r\n\r\n";
  ASSERT_EQ(send(staller, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 5; ++i) {
    std::string probe =
        Exchange(port, {"GET /healthz HTTP/1.1\r\n\r\n"}, {}, std::chrono::milliseconds(1000));
    EXPECT_EQ(StatusLine(probe), "HTTP/1.1 200 OK") << probe;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Generous: building the reply takes seconds under ThreadSanitizer.
  for (Clock::time_point until = Clock::now() + std::chrono::seconds(30);
       Closed(*listener, server::CloseReason::kReplyDeadline) == 0 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Closed(*listener, server::CloseReason::kReplyDeadline), 1u);
  // What the staller gets once it reads: part of the reply, then the end of the connection.
  bool closed = false;
  std::string partial = ReadUntilClosed(staller, std::chrono::milliseconds(10000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(StatusLine(partial), "HTTP/1.1 200 OK");
  EXPECT_LT(partial.size(), size_t{16} << 20);
  close(staller);
}

// Stop() lets a request on the handler thread finish for the drain timeout, like one on the TLS
// port, then closes its connection; it returns once the handler does.
TEST(OperatorPortHandlersTest, StopCutsOffAHandlerPastTheDrainTimeout) {
  std::atomic<bool> release{false};
  std::atomic<bool> called{false};
  std::vector<server::OperatorRoute> routes = {
      {"/debug/slow", [&] {
         called = true;
         while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
         return server::OperatorReply{200, "application/json", "{}"};
       }}};
  server::Listener::Options options;
  options.drain_timeout = std::chrono::milliseconds(300);
  std::unique_ptr<server::Listener> listener = StartOperatorPort(routes, options);
  ASSERT_NE(listener, nullptr);
  int fd = ConnectTo(listener->operator_port());
  ASSERT_GE(fd, 0);
  const std::string request = "GET /debug/slow HTTP/1.1\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  while (!called.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    listener->Stop();
    stopped = true;
  });
  // Closed at the drain timeout, with the handler still running and Stop() still waiting.
  bool closed = false;
  EXPECT_EQ(ReadUntilClosed(fd, std::chrono::milliseconds(3000), &closed), "");
  EXPECT_TRUE(closed);
  EXPECT_FALSE(stopped.load());
  release = true;
  stopper.join();
  EXPECT_EQ(Closed(*listener, server::CloseReason::kShutdown), 1u);
  close(fd);
}

}  // namespace
