#include "test/server/tls_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace testing_support {
namespace {

// A server that refuses or drops a connection makes the next write raise SIGPIPE; the tests
// want the EPIPE error instead (as Go callers get it), not a dead test binary.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

std::string OpenSslError(absl::string_view what) {
  unsigned long code = ERR_get_error();
  char buf[256] = "no OpenSSL error queued";
  if (code != 0) ERR_error_string_n(code, buf, sizeof(buf));
  ERR_clear_error();
  return absl::StrCat(what, ": ", buf);
}

std::string SerialHex(X509* cert) {
  if (!cert) return "";
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(cert), nullptr);
  if (!bn) return "";
  char* hex = BN_bn2hex(bn);
  std::string out = hex ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

}  // namespace

TlsConnection::~TlsConnection() {
  if (ssl_) {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::unique_ptr<TlsConnection>> TlsConnection::Open(
    int port, const ClientCredentials& credentials) {
  std::unique_ptr<TlsConnection> c(new TlsConnection());
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (!c->ctx_) return absl::InternalError(OpenSslError("SSL_CTX_new"));
  if (SSL_CTX_load_verify_locations(c->ctx_, credentials.ca_file.c_str(), nullptr) != 1) {
    return absl::InternalError(OpenSslError("loading the CA"));
  }
  SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, nullptr);
  if (!credentials.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(c->ctx_, credentials.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(c->ctx_, credentials.key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return absl::InternalError(OpenSslError("loading the client certificate"));
  }
  c->fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (c->fd_ < 0 || connect(c->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to port ", port));
  }
  timeval timeout{10, 0};
  setsockopt(c->fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  c->ssl_ = SSL_new(c->ctx_);
  SSL_set_fd(c->ssl_, c->fd_);
  SSL_set_tlsext_host_name(c->ssl_, "localhost");
  SSL_set1_host(c->ssl_, "localhost");
  if (SSL_connect(c->ssl_) != 1) return absl::UnavailableError(OpenSslError("handshake"));
  return c;
}

std::string TlsConnection::PeerSerial() const {
  X509* cert = SSL_get1_peer_certificate(ssl_);
  std::string out = SerialHex(cert);
  X509_free(cert);
  return out;
}

absl::StatusOr<int> TlsConnection::Post(const std::string& path, const std::string& body) {
  std::string request = absl::StrCat("POST ", path,
                                     " HTTP/1.1\r\nHost: localhost\r\n"
                                     "Content-Type: application/json\r\nContent-Length: ",
                                     body.size(), "\r\n\r\n", body);
  if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) {
    return absl::UnavailableError(OpenSslError("write"));
  }
  std::string in;
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  char buf[4096];
  while (true) {
    if (header_end != std::string::npos && in.size() >= header_end + 4 + content_length) break;
    int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n <= 0) return absl::UnavailableError(OpenSslError("read"));
    in.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos &&
        (header_end = in.find("\r\n\r\n")) != std::string::npos) {
      std::string headers = absl::AsciiStrToLower(in.substr(0, header_end));
      size_t at = headers.find("\r\ncontent-length:");
      if (at != std::string::npos) {
        size_t eol = headers.find("\r\n", at + 2);
        std::string value(absl::StripAsciiWhitespace(headers.substr(at + 17, eol - at - 17)));
        if (!absl::SimpleAtoi(value, &content_length)) {
          return absl::InternalError("unreadable Content-Length");
        }
      }
    }
  }
  int status = 0;
  if (!absl::StartsWith(in, "HTTP/1.1 ") || !absl::SimpleAtoi(in.substr(9, 3), &status)) {
    return absl::InternalError(absl::StrCat("not an HTTP response: ", in.substr(0, 40)));
  }
  return status;
}

void TlsConnection::PostAndHangUp(const std::string& path, const std::string& body, bool reset) {
  std::string request = absl::StrCat("POST ", path,
                                     " HTTP/1.1\r\nHost: localhost\r\n"
                                     "Content-Type: application/json\r\nContent-Length: ",
                                     body.size(), "\r\n\r\n", body);
  SSL_write(ssl_, request.data(), static_cast<int>(request.size()));
  if (reset) {
    linger abort{1, 0};  // close() then sends RST instead of FIN
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  }
  close(fd_);
  fd_ = -1;
  SSL_free(ssl_);  // no SSL_shutdown: the socket is gone
  ssl_ = nullptr;
}

std::string CertificateFileSerial(const std::string& pem_file) {
  FILE* f = std::fopen(pem_file.c_str(), "r");
  if (!f) return "";
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  std::string out = SerialHex(cert);
  X509_free(cert);
  return out;
}

}  // namespace testing_support
