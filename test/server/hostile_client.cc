#include "test/server/hostile_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace hostile_test {
namespace {

using Clock = std::chrono::steady_clock;

Outcome ParseResponse(const std::string& in, bool timed_out) {
  Outcome out;
  out.timed_out = timed_out;
  if (in.rfind("HTTP/1.", 0) == 0 && in.size() >= 12) {
    (void)absl::SimpleAtoi(in.substr(9, 3), &out.status);
  }
  size_t end = in.find("\r\n\r\n");
  if (end != std::string::npos) out.body = in.substr(end + 4);
  return out;
}

// A whole response with a Content-Length has arrived (keep-alive would hold the socket open).
bool Complete(const std::string& in) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string head = absl::AsciiStrToLower(in.substr(0, end));
  size_t at = head.find("\r\ncontent-length:");
  if (at == std::string::npos) return false;
  size_t eol = head.find("\r\n", at + 2);
  size_t length = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(head.substr(at + 17, eol - at - 17)), &length)) {
    return false;
  }
  return in.size() >= end + 4 + length;
}

Outcome SendRawTcp(const Case& c, int fd) {
  (void)!write(fd, c.raw.data(), c.raw.size());
  Outcome o;  // whatever comes back (a TLS alert) is not an HTTP answer
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) o.timed_out = true;
    if (n <= 0) break;
  }
  return o;
}

Outcome SendTls(const Case& c, int fd) {
  std::string in;
  bool timed_out = false;
  SSL* ssl = SSL_new(ClientContext());
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) == 1) {
    if (c.transport == Transport::kDripHttps) {
      for (char ch : c.raw) {
        if (SSL_write(ssl, &ch, 1) <= 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } else {
      size_t sent = 0;
      while (sent < c.raw.size()) {
        int chunk = static_cast<int>(std::min<size_t>(16384, c.raw.size() - sent));
        int n = SSL_write(ssl, c.raw.data() + sent, chunk);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    }
    char buf[4096];
    for (;;) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) timed_out = true;
        break;
      }
      in.append(buf, static_cast<size_t>(n));
      if (Complete(in)) break;
    }
  }
  SSL_free(ssl);
  return ParseResponse(in, timed_out);
}

}  // namespace

bool Alive(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{kCaseTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

SSL_CTX* ClientContext() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* x = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(x, SSL_VERIFY_NONE, nullptr);
    return x;
  }();
  return ctx;
}

Outcome SendCase(const Case& c, int port) {
  int fd = Connect(port);
  if (fd < 0) return Outcome{};
  Outcome o = c.transport == Transport::kRawTcp ? SendRawTcp(c, fd) : SendTls(c, fd);
  close(fd);
  return o;
}

WellBehavedClient::WellBehavedClient(int port, const std::string& ca) {
  thread_ = std::thread([this, port, ca] {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(ca.c_str());
    client.enable_server_certificate_verification(true);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // as Go's clients: else Nagle adds ~40 ms to every POST
    client.set_read_timeout(5, 0);
    client.set_write_timeout(5, 0);
    while (!stop_.load()) {
      auto start = Clock::now();
      httplib::Result r = client.Post("/extender/filter", kFilterBody, "application/json");
      double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (r && r->status == 200 && seconds < 5.0) {
        ok_.fetch_add(1);
      } else {
        failed_.fetch_add(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
}

void WellBehavedClient::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

bool WellBehavedClient::WaitForOkAbove(int than, double seconds) const {
  auto until = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (ok() <= than && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ok() > than;
}

}  // namespace hostile_test
