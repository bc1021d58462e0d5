#include "test/server/tls_listener_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace server::listener_test {
namespace {

[[maybe_unused]] const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

}  // namespace

void Gate::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return open_; });
}

void Gate::WaitForWaiters(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, std::chrono::seconds(5), [&] { return waiting_ >= n; });
}

void Gate::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
  changed_.notify_all();
}

Client::Client(int port, const char* from) {
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

Client::~Client() {
  if (ssl_) SSL_free(ssl_);
  if (fd_ >= 0) close(fd_);
}

bool Client::Handshake() {
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

bool Client::Send(const std::string& bytes) {
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

std::string Client::ReadResponse(milliseconds wait) {
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

bool Client::ClosedByServer(milliseconds wait) {
  auto until = Clock::now() + wait;
  while (ReadSome(until)) in_.clear();
  return ended_;
}

bool Client::QuietAndOpen() {
  if (ended_ || !ssl_) return false;
  char buf[256];
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (SSL_pending(ssl_) == 0 && poll(&p, 1, 0) <= 0) return true;
    int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n <= 0 && SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ) continue;  // e.g. a ticket
    ended_ = true;  // close_notify, FIN, a reset, or bytes nobody asked for
    return false;
  }
}

bool Client::ReadSome(Clock::time_point until) {
  char buf[16384];
  for (;;) {
    if (!ssl_ || SSL_pending(ssl_) == 0) {
      int left =
          static_cast<int>(std::chrono::duration_cast<milliseconds>(until - Clock::now()).count());
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, left) <= 0) return false;
    }
    int n = ssl_ ? SSL_read(ssl_, buf, sizeof(buf)) : static_cast<int>(read(fd_, buf, sizeof(buf)));
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

std::string Post(const std::string& path, const std::string& body, const std::string& extra_headers,
                 const std::string& version) {
  return absl::StrCat("POST ", path, " ", version, "\r\nHost: localhost\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n",
                      extra_headers, "\r\n", body);
}

int Status(const std::string& response) {
  int status = 0;
  if (response.size() >= 12) (void)absl::SimpleAtoi(response.substr(9, 3), &status);
  return status;
}

std::string Body(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

uint64_t Closed(const Listener& l, CloseReason r) {
  return l.stats().closed[static_cast<size_t>(r)].load();
}

int64_t Open(const Listener& l, ConnectionState s) {
  return l.stats().open[static_cast<size_t>(s)].load();
}

void TlsListenerTest::SetUp() {
  ASSERT_TRUE(testing_support::MakeTestCerts(dir_.path()).ok());
  absl::StatusOr<std::shared_ptr<const CertPair>> pair =
      CertPair::Load(dir_.File("tls.crt"), dir_.File("tls.key"));
  ASSERT_TRUE(pair.ok()) << pair.status();
  certs_ = std::make_unique<CertStore>(*pair);
}

void TlsListenerTest::Start(Listener::Options options, std::vector<TlsRoute> extra,
                            std::vector<OperatorRoute> operator_routes) {
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
  for (TlsRoute& r : extra) routes.push_back(std::move(r));
  absl::StatusOr<std::unique_ptr<Listener>> l =
      Listener::Bind(options, ctx, std::move(routes), std::move(operator_routes));
  ASSERT_TRUE(l.ok()) << l.status();
  listener_ = *std::move(l);
  listener_->Start();
}

void TlsListenerTest::TearDown() {
  gate_.Open();
  if (listener_) listener_->Stop();
}

}  // namespace server::listener_test
