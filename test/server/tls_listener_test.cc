// TlsListener in process: HTTP framing answers, keep-alive and pipelining, connection limits
// per address and in all, the busy-worker 503, each deadline, and a drain on Stop(). Clients
// are bare OpenSSL connections from chosen loopback addresses (127.0.0.x), so per-address
// limits can be exercised on one machine.
#include "server/tls_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/tls.h"
#include "test/support/serve_process.h"

namespace server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

[[maybe_unused]] const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A handler that blocks until released, to hold a worker or a request in flight.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void WaitForWaiters(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(5), [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

// Plain TCP, then optionally TLS, from a chosen loopback source address.
class Client {
 public:
  explicit Client(int port, const char* from = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from, &local.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
  }
  bool Handshake() {
    static SSL_CTX* ctx = [] {
      SSL_CTX* c = SSL_CTX_new(TLS_client_method());
      SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
      return c;
    }();
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    if (!connected_ || SSL_connect(ssl_) != 1) return false;
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
    return true;
  }
  // Sends every byte (the socket is non-blocking after the handshake: waits when it is full).
  bool Send(const std::string& bytes) {
    if (!ssl_) return write(fd_, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    size_t sent = 0;
    for (auto until = Clock::now() + std::chrono::seconds(5); sent < bytes.size();) {
      int chunk = static_cast<int>(std::min<size_t>(16384, bytes.size() - sent));
      int n = SSL_write(ssl_, bytes.data() + sent, chunk);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      int e = SSL_get_error(ssl_, n);
      if ((e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ) || Clock::now() > until) {
        return false;
      }
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, 100);
    }
    return true;
  }
  // The next whole response (head and Content-Length body), or "" when the connection ended
  // or nothing came within `wait`.
  std::string ReadResponse(milliseconds wait = milliseconds(5000)) {
    auto until = Clock::now() + wait;
    for (;;) {
      size_t end = in_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        size_t at = in_.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          (void)absl::SimpleAtoi(in_.substr(at + 16, in_.find("\r\n", at) - at - 16), &length);
        }
        if (in_.size() >= end + 4 + length) {
          std::string response = in_.substr(0, end + 4 + length);
          in_.erase(0, end + 4 + length);
          return response;
        }
      }
      if (!ReadSome(until)) return "";
    }
  }
  // True when the server closed the connection within `wait` (bytes before it are dropped).
  bool ClosedByServer(milliseconds wait) {
    auto until = Clock::now() + wait;
    while (ReadSome(until)) in_.clear();
    return ended_;
  }

 private:
  // Non-blocking reads (after the handshake), so a TLS 1.3 ticket never blocks a read.
  bool ReadSome(Clock::time_point until) {
    char buf[16384];
    for (;;) {
      if (!ssl_ || SSL_pending(ssl_) == 0) {
        int left = static_cast<int>(
            std::chrono::duration_cast<milliseconds>(until - Clock::now()).count());
        pollfd p{fd_, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0) return false;
      }
      int n =
          ssl_ ? SSL_read(ssl_, buf, sizeof(buf)) : static_cast<int>(read(fd_, buf, sizeof(buf)));
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (ssl_) {
        int e = SSL_get_error(ssl_, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        continue;
      }
      ended_ = true;
      return false;
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  bool ended_ = false;
  SSL* ssl_ = nullptr;
  std::string in_;
};

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "", const std::string& version = "HTTP/1.1") {
  return absl::StrCat("POST ", path, " ", version, "\r\nHost: localhost\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n",
                      extra_headers, "\r\n", body);
}

int Status(const std::string& response) {
  int status = 0;
  if (response.size() >= 12) (void)absl::SimpleAtoi(response.substr(9, 3), &status);
  return status;
}

uint64_t Closed(const TlsListener& l, CloseReason r) {
  return l.stats().closed[static_cast<size_t>(r)].load();
}

// Waits (bounded) until `done` holds.
template <typename F>
bool Eventually(F done, milliseconds wait = milliseconds(5000)) {
  for (auto until = Clock::now() + wait; Clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

class TlsListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing_support::MakeTestCerts(dir_.path()).ok());
    absl::StatusOr<std::shared_ptr<const CertPair>> pair =
        CertPair::Load(dir_.File("tls.crt"), dir_.File("tls.key"));
    ASSERT_TRUE(pair.ok()) << pair.status();
    certs_ = std::make_unique<CertStore>(*pair);
  }
  // Starts a listener with `options` (host and port are set here) and routes /echo (replies
  // with the body), /block (waits on gate_) and /throw.
  void Start(TlsListener::Options options) {
    options.host = "127.0.0.1";
    options.port = 0;
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    ASSERT_TRUE(ConfigureServerContext(*ctx, certs_.get(), ""));
    std::vector<TlsRoute> routes = {
        {"/echo",
         [](absl::string_view body) {
           return TlsReply{200, std::string(body), {}};
         }},
        {"/pure",
         [](absl::string_view body) {
           return TlsReply{200, std::string(body), {}};
         },
         /*waits_on_io=*/false},
        {"/block",
         [this](absl::string_view) {
           gate_.Wait();
           return TlsReply{200, "{}", {}};
         }},
        {"/big",
         [this](absl::string_view) {
           return TlsReply{200, std::string(big_, 'x'), {}};
         }},
        {"/throw", [](absl::string_view) -> TlsReply { throw std::runtime_error("boom"); }},
    };
    absl::StatusOr<std::unique_ptr<TlsListener>> l =
        TlsListener::Bind(options, ctx, std::move(routes));
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
    listener_->Start();
  }
  void TearDown() override {
    gate_.Open();
    if (listener_) listener_->Stop();
  }
  int port() const { return listener_->port(); }

  testing_support::TempDir dir_;
  std::unique_ptr<CertStore> certs_;
  std::unique_ptr<TlsListener> listener_;
  Gate gate_;
  size_t big_ = 0;
};

TEST_F(TlsListenerTest, AnswersFramingErrorsWithJsonReasons) {
  TlsListener::Options o;
  o.max_body_bytes = 1024;
  o.max_header_bytes = 2048;
  Start(o);
  struct Row {
    const char* name;
    std::string request;
    int status;
    const char* mentions;
  };
  std::vector<Row> rows = {
      {"unknown route", Post("/nope", "{}"), 404, "no such route"},
      {"GET", "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method"},
      {"text/plain",
       absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: text/plain\r\n",
                    "Content-Length: 2\r\n\r\n{}"),
       415, "Content-Type"},
      {"body over the cap", Post("/echo", std::string(2000, ' ')), 413, "too large (over 1024"},
      {"head over the cap", Post("/echo", "{}", "X-A: " + std::string(3000, 'a') + "\r\n"), 431,
       "head too large"},
      {"HTTP/9.9", Post("/echo", "{}", "", "HTTP/9.9"), 400, "version"},
      {"no version", "POST /echo\r\n\r\n", 400, "malformed"},
      {"bad chunk",
       absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                    "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
       400, "malformed"},
      {"handler throws", Post("/throw", "{}"), 500, "internal error"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Client c(port());
    ASSERT_TRUE(c.Handshake());
    ASSERT_TRUE(c.Send(row.request));
    std::string response = c.ReadResponse();
    EXPECT_EQ(Status(response), row.status) << response;
    EXPECT_NE(response.find(row.mentions), std::string::npos) << response;
    EXPECT_NE(response.find("application/json"), std::string::npos) << response;
    if (row.status == 405) {
      EXPECT_NE(response.find("Allow: POST"), std::string::npos);
    }
  }
}

TEST_F(TlsListenerTest, KeepAlivePipeliningHttp10ChunkedAndContinue) {
  Start({});
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  // Two requests in one write: both answered, in order, on the same connection.
  ASSERT_TRUE(c.Send(Post("/echo", "[1]") + Post("/echo", "[2]")));
  std::string first = c.ReadResponse(), second = c.ReadResponse();
  EXPECT_EQ(Status(first), 200);
  EXPECT_NE(first.find("\r\n\r\n[1]"), std::string::npos) << first;
  EXPECT_NE(second.find("\r\n\r\n[2]"), std::string::npos) << second;
  ASSERT_TRUE(c.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                                  "Transfer-Encoding: chunked\r\n\r\n3\r\n[3]\r\n0\r\n\r\n")));
  EXPECT_NE(c.ReadResponse().find("\r\n\r\n[3]"), std::string::npos);
  ASSERT_TRUE(c.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                                  "Content-Length: 3\r\nExpect: 100-continue\r\n\r\n")));
  EXPECT_EQ(Status(c.ReadResponse()), 100);
  ASSERT_TRUE(c.Send("[4]"));
  EXPECT_NE(c.ReadResponse().find("\r\n\r\n[4]"), std::string::npos);

  Client old(port());
  ASSERT_TRUE(old.Handshake());
  ASSERT_TRUE(old.Send(Post("/echo", "[5]", "", "HTTP/1.0")));
  std::string reply = old.ReadResponse();
  EXPECT_EQ(reply.rfind("HTTP/1.0 200", 0), 0u) << reply;
  EXPECT_TRUE(old.ClosedByServer(milliseconds(3000)));
}

TEST_F(TlsListenerTest, AnAddressAtItsLimitLosesItsOldestIdleConnection) {
  TlsListener::Options o;
  o.io_threads = 1;  // one table sees every connection (two loops would hold a share each)
  o.max_connections_per_peer = 3;
  Start(o);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<Client>(port(), "127.0.0.2"));
  ASSERT_TRUE(Eventually([&] { return listener_->stats().open[0].load() == 3; }));
  Client newest(port(), "127.0.0.2");
  EXPECT_TRUE(idle[0]->ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(idle[1]->ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
  // Another address is not affected, and the newcomer is served.
  Client other(port(), "127.0.0.3");
  ASSERT_TRUE(other.Handshake());
  ASSERT_TRUE(other.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(other.ReadResponse()), 200);
  ASSERT_TRUE(newest.Handshake());
  ASSERT_TRUE(newest.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(newest.ReadResponse()), 200);
}

TEST_F(TlsListenerTest, AtTheTotalLimitTheBiggestHolderMakesRoom) {
  TlsListener::Options o;
  o.io_threads = 1;
  o.max_connections = 4;
  o.max_connections_per_peer = 4;
  Start(o);
  Client small(port(), "127.0.0.3");  // the oldest connection, but of a small holder
  std::vector<std::unique_ptr<Client>> big;
  for (int i = 0; i < 3; ++i) big.push_back(std::make_unique<Client>(port(), "127.0.0.2"));
  ASSERT_TRUE(Eventually([&] { return listener_->stats().open[0].load() == 4; }));
  Client newcomer(port(), "127.0.0.4");
  EXPECT_TRUE(big[0]->ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(small.ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedTotal), 1u);
}

TEST_F(TlsListenerTest, RequestsInFlightAreNeverEvictedAndNewcomersAreRefusedInstead) {
  TlsListener::Options o;
  o.io_threads = 1;
  o.max_connections_per_peer = 1;
  Start(o);
  Client busy(port(), "127.0.0.2");
  ASSERT_TRUE(busy.Handshake());
  ASSERT_TRUE(busy.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  Client refused(port(), "127.0.0.2");
  EXPECT_TRUE(refused.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kRefused), 1u);
  gate_.Open();
  EXPECT_EQ(Status(busy.ReadResponse()), 200);
}

TEST_F(TlsListenerTest, SaturatedWorkersAnswer503AtOnce) {
  TlsListener::Options o;
  o.worker_threads = 1;
  o.max_queued = 0;
  Start(o);
  Client holder(port());
  ASSERT_TRUE(holder.Handshake());
  ASSERT_TRUE(holder.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  Client late(port());
  ASSERT_TRUE(late.Handshake());
  ASSERT_TRUE(late.Send(Post("/echo", "{}")));
  std::string response = late.ReadResponse(milliseconds(2000));
  EXPECT_EQ(Status(response), 503) << response;
  // A pure handler of a small body runs on the loop, so it is served all the same; a larger
  // body goes to the workers like any other request.
  ASSERT_TRUE(late.Send(Post("/pure", "[1]")));
  EXPECT_EQ(Status(late.ReadResponse(milliseconds(2000))), 200);
  ASSERT_TRUE(late.Send(Post("/pure", std::string(o.inline_body_bytes + 1, ' '))));
  EXPECT_EQ(Status(late.ReadResponse(milliseconds(2000))), 503);
  gate_.Open();
  EXPECT_EQ(Status(holder.ReadResponse()), 200);
  // The 503 kept the connection: it is served once a worker is free.
  ASSERT_TRUE(late.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(late.ReadResponse()), 200);
  EXPECT_EQ(listener_->stats().rejected_busy.load(), 2u);
}

TEST_F(TlsListenerTest, EachDeadlineClosesItsConnectionAndIsCounted) {
  TlsListener::Options o;
  o.request_deadline = milliseconds(400);
  o.idle_timeout = milliseconds(400);
  o.reply_deadline = milliseconds(400);
  Start(o);
  big_ = 64u << 20;        // far more than the socket buffers hold
  Client silent(port());   // connects, sends nothing
  Client stalled(port());  // half a TLS record
  ASSERT_TRUE(stalled.Send(std::string("\x16\x03\x01\x02\x00", 5)));
  Client idle(port());
  ASSERT_TRUE(idle.Handshake());
  Client dripper(port());
  ASSERT_TRUE(dripper.Handshake());
  ASSERT_TRUE(dripper.Send("POST /echo HTTP/1.1\r\n"));
  Client reader(port());  // asks for a large reply and never reads it
  ASSERT_TRUE(reader.Handshake());
  ASSERT_TRUE(reader.Send(Post("/big", "{}")));
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    dripper.Send("X");
  }
  EXPECT_TRUE(silent.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(stalled.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(idle.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(dripper.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(Eventually([&] { return Closed(*listener_, CloseReason::kReplyDeadline) == 1; }));
  EXPECT_EQ(Closed(*listener_, CloseReason::kHandshakeDeadline), 2u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kIdleTimeout), 1u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kRequestDeadline), 1u);
  for (const auto& open : listener_->stats().open) EXPECT_EQ(open.load(), 0);
}

TEST_F(TlsListenerTest, StopClosesIdleConnectionsAndFinishesRequestsInFlight) {
  Start({});
  Client idle(port());
  ASSERT_TRUE(idle.Handshake());
  Client busy(port());
  ASSERT_TRUE(busy.Handshake());
  ASSERT_TRUE(busy.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  std::thread stopper([&] { listener_->Stop(); });
  EXPECT_TRUE(idle.ClosedByServer(milliseconds(3000)));
  gate_.Open();
  // The request in flight is answered, told not to come back, and its connection closed.
  std::string response = busy.ReadResponse();
  EXPECT_EQ(Status(response), 200);
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
  EXPECT_TRUE(busy.ClosedByServer(milliseconds(3000)));
  stopper.join();
  EXPECT_EQ(Closed(*listener_, CloseReason::kShutdown), 1u);
}

}  // namespace
}  // namespace server
