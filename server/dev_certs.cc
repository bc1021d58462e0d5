#include "server/dev_certs.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"

namespace server {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

absl::Status Internal(absl::string_view what) {
  return absl::InternalError(absl::StrCat("dev certificates: ", what));
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

CertPtr MakeCert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key) {
  CertPtr cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("gpu-tenancy dev"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok;
  if (!issuer) {
    ok = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE") &&
         AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    ok = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
         AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature") &&
         AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth") &&
         AddExtension(cert.get(), signer, NID_subject_alt_name,
                      "DNS:localhost,IP:127.0.0.1,IP:::1") &&
         AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  if (!ok || X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0)
    return nullptr;
  return cert;
}

absl::Status WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  if (key) {
    // Created 0600, and an existing file is made 0600 before the key goes in.
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
      if (fd >= 0) close(fd);
      return Internal(absl::StrCat("cannot write ", path));
    }
    FILE* f = fdopen(fd, "w");
    if (!f) {
      close(fd);
      return Internal(absl::StrCat("cannot write ", path));
    }
    bool ok = PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(f);
    return ok ? absl::OkStatus() : Internal(absl::StrCat("cannot write key ", path));
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Internal(absl::StrCat("cannot write ", path));
  bool ok = PEM_write_X509(f, cert) == 1;
  std::fclose(f);
  return ok ? absl::OkStatus() : Internal(absl::StrCat("cannot write certificate ", path));
}

}  // namespace

absl::StatusOr<DevCertFiles> WriteDevCerts(const std::string& dir) {
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!ca_key || !key) return Internal("key generation failed");
  CertPtr ca = MakeCert(ca_key.get(), "gpu-tenancy dev CA", nullptr, nullptr);
  if (!ca) return Internal("CA certificate failed");
  CertPtr leaf = MakeCert(key.get(), "localhost", ca.get(), ca_key.get());
  if (!leaf) return Internal("serving certificate failed");
  DevCertFiles files{dir + "/ca.crt", dir + "/tls.crt", dir + "/tls.key"};
  absl::Status s = WritePem(files.ca_cert, ca.get(), nullptr);
  if (s.ok()) s = WritePem(files.cert, leaf.get(), nullptr);
  if (s.ok()) s = WritePem(files.key, nullptr, key.get());
  if (!s.ok()) return s;
  return files;
}

}  // namespace server
