// TLS for the serving face: an SSL_CTX that allows TLS 1.2 and 1.3 only, picks its certificate
// per handshake from a pair that can be swapped at any time (certificate rotation without a
// restart or a dropped connection), and optionally requires client certificates from a CA.
#ifndef GPU_TENANCY_SERVER_TLS_H_
#define GPU_TENANCY_SERVER_TLS_H_

#include <openssl/ssl.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace server {

// A certificate chain and its private key, loaded from PEM files and checked to match.
class CertPair {
 public:
  ~CertPair();
  CertPair(const CertPair&) = delete;
  CertPair& operator=(const CertPair&) = delete;

  // InvalidArgument when a file is unreadable, not PEM, or the key does not match the leaf.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<const CertPair>> Load(
      const std::string& cert_file, const std::string& key_file);

  X509* leaf() const { return leaf_; }
  EVP_PKEY* key() const { return key_; }
  STACK_OF(X509) * chain() const { return chain_; }
  // Seconds since the epoch at which the leaf expires.
  int64_t not_after_unix() const { return not_after_unix_; }

 private:
  CertPair() = default;
  X509* leaf_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
  int64_t not_after_unix_ = 0;
};

// The certificate the server presents; Swap() takes effect from the next handshake.
class CertStore {
 public:
  explicit CertStore(std::shared_ptr<const CertPair> initial) : current_(std::move(initial)) {}
  std::shared_ptr<const CertPair> Current() const { return current_.load(); }
  void Swap(std::shared_ptr<const CertPair> next) { current_.store(std::move(next)); }

 private:
  std::atomic<std::shared_ptr<const CertPair>> current_;
};

// Configures a server SSL_CTX: TLS >= 1.2, no compression or renegotiation, certificate from
// `store` on every handshake, and client-certificate verification against `client_ca_file`
// when it is not empty. Returns false (and logs why) on failure.
bool ConfigureServerContext(SSL_CTX& ctx, CertStore* store, const std::string& client_ca_file);

}  // namespace server

#endif  // GPU_TENANCY_SERVER_TLS_H_
