#include "server/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace server {
namespace {

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

int SelectCertificate(SSL* ssl, void* arg) {
  auto* store = static_cast<CertStore*>(arg);
  std::shared_ptr<const CertPair> pair = store->Current();
  if (!pair) return 0;
  // SSL_use_* take their own references, so the pair may be swapped out right after.
  if (SSL_use_certificate(ssl, pair->leaf()) != 1 || SSL_use_PrivateKey(ssl, pair->key()) != 1) {
    return 0;
  }
  if (pair->chain() && SSL_set1_chain(ssl, pair->chain()) != 1) return 0;
  return 1;
}

}  // namespace

CertPair::~CertPair() {
  X509_free(leaf_);
  EVP_PKEY_free(key_);
  if (chain_) sk_X509_pop_free(chain_, X509_free);
}

absl::StatusOr<std::shared_ptr<const CertPair>> CertPair::Load(const std::string& cert_file,
                                                               const std::string& key_file) {
  std::shared_ptr<CertPair> pair(new CertPair());
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot read certificate ", cert_file));
  pair->leaf_ = PEM_read_X509(f, nullptr, nullptr, nullptr);
  if (pair->leaf_) {
    pair->chain_ = sk_X509_new_null();
    while (X509* extra = PEM_read_X509(f, nullptr, nullptr, nullptr))
      sk_X509_push(pair->chain_, extra);
  }
  std::fclose(f);
  ERR_clear_error();  // the chain loop ends on a "no start line" error by design
  if (!pair->leaf_) {
    return absl::InvalidArgumentError(absl::StrCat(cert_file, ": no PEM certificate"));
  }
  f = std::fopen(key_file.c_str(), "r");
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot read private key ", key_file));
  // A passphrase callback that gives none: an encrypted key fails to load instead of OpenSSL
  // prompting on the terminal, which would hang `serve` or a certificate reload.
  pair->key_ = PEM_read_PrivateKey(
      f, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
  std::fclose(f);
  if (!pair->key_) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_file, ": no PEM private key: ", OpenSslError()));
  }
  if (X509_check_private_key(pair->leaf_, pair->key_) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(key_file, " does not match the certificate in ", cert_file));
  }
  const ASN1_TIME* not_after = X509_get0_notAfter(pair->leaf_);
  struct tm tm_after = {};
  if (not_after && ASN1_TIME_to_tm(not_after, &tm_after) == 1) {
    pair->not_after_unix_ = static_cast<int64_t>(timegm(&tm_after));
  }
  return std::shared_ptr<const CertPair>(std::move(pair));
}

bool ConfigureServerContext(SSL_CTX& ctx, CertStore* store, const std::string& client_ca_file) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Forward-secret AEAD suites only for TLS 1.2; TLS 1.3 suites are all fine.
  if (SSL_CTX_set_cipher_list(&ctx,
                              "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                              "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                              "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305") != 1) {
    common::Log(common::LogLevel::kError, "TLS cipher setup failed", {{"error", OpenSslError()}});
    return false;
  }
  SSL_CTX_set_cert_cb(&ctx, SelectCertificate, store);
  if (!client_ca_file.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca_file.c_str());
    if (!names || SSL_CTX_load_verify_locations(&ctx, client_ca_file.c_str(), nullptr) != 1) {
      if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
      common::Log(common::LogLevel::kError, "cannot load client CA",
                  {{"file", client_ca_file}, {"error", OpenSslError()}});
      return false;
    }
    SSL_CTX_set_client_CA_list(&ctx, names);
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

}  // namespace server
