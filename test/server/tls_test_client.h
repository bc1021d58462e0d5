// A bare OpenSSL client for the server tests: one TLS connection whose peer certificate can be
// read and on which HTTP/1.1 requests are sent one after another (keep-alive), so a test can
// tell which certificate a handshake saw and whether a connection survived a rotation.
#ifndef GPU_TENANCY_TEST_SERVER_TLS_TEST_CLIENT_H_
#define GPU_TENANCY_TEST_SERVER_TLS_TEST_CLIENT_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace testing_support {

struct ClientCredentials {
  std::string ca_file;    // verifies the server (required)
  std::string cert_file;  // client certificate, optional
  std::string key_file;
};

class TlsConnection {
 public:
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // Connects to 127.0.0.1:port and completes the handshake, verifying the server certificate
  // for "localhost". Unavailable with OpenSSL's reason when the connection or handshake fails.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TlsConnection>> Open(
      int port, const ClientCredentials& credentials);

  // Serial number of the server's certificate, upper-case hex as `openssl x509 -serial` prints.
  std::string PeerSerial() const;

  // POSTs `body` as JSON on this connection and returns the HTTP status. Unavailable when the
  // server closed the connection or refused it (for example at the first read after a TLS 1.3
  // handshake whose client certificate it rejected).
  [[nodiscard]] absl::StatusOr<int> Post(const std::string& path, const std::string& body);

  // Sends a POST and closes the connection without reading the answer: a caller that gave up,
  // as kube-scheduler does after its httpTimeout. `reset`: abort with RST instead of FIN.
  void PostAndHangUp(const std::string& path, const std::string& body, bool reset);

 private:
  TlsConnection() = default;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
};

// Serial of a PEM certificate file, as PeerSerial() prints it; empty if unreadable.
std::string CertificateFileSerial(const std::string& pem_file);

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SERVER_TLS_TEST_CLIENT_H_
