// The development certificates of `serve --demo`: three PEM files, the key private to its
// owner; a P-256 CA that is a CA, and a serving certificate it signed that is not, valid for a
// day from about now, for localhost, 127.0.0.1 and ::1 only; a pair the server's own loader
// accepts; fresh keys and serials on every call; Internal naming the file it cannot write.
#include "server/dev_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/tls.h"
#include "test/support/serve_process.h"

namespace server {
namespace {

struct X509Free {
  void operator()(X509* c) const { X509_free(c); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Cert = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Cert ReadCert(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return nullptr;
  Cert c(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  return c;
}

Key ReadKey(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return nullptr;
  Key k(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  return k;
}

// Seconds from now to `t` (negative when `t` has passed).
int64_t SecondsFromNow(const ASN1_TIME* t) {
  int days = 0, seconds = 0;
  if (ASN1_TIME_diff(&days, &seconds, nullptr, t) != 1) return INT64_MIN;
  return int64_t{days} * 86400 + seconds;
}

// True when `ca` verifies `leaf` for a TLS server.
bool Verifies(X509* ca, X509* leaf) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

class DevCertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<DevCertFiles> files = WriteDevCerts(dir_.path());
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = *files;
    ca_ = ReadCert(files_.ca_cert);
    leaf_ = ReadCert(files_.cert);
    key_ = ReadKey(files_.key);
    ASSERT_NE(ca_, nullptr);
    ASSERT_NE(leaf_, nullptr);
    ASSERT_NE(key_, nullptr);
  }
  testing_support::TempDir dir_;
  DevCertFiles files_;
  Cert ca_, leaf_;
  Key key_;
};

TEST_F(DevCertsTest, ThreeFilesInTheDirectoryAndTheKeyIsTheOwnersOnly) {
  EXPECT_EQ(files_.ca_cert, dir_.File("ca.crt"));
  EXPECT_EQ(files_.cert, dir_.File("tls.crt"));
  EXPECT_EQ(files_.key, dir_.File("tls.key"));
  struct stat st = {};
  ASSERT_EQ(stat(files_.key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The umask is restored: files made afterwards get the usual mode.
  mode_t now = umask(022);
  umask(now);
  EXPECT_NE(now, 077u);
}

TEST(DevCertsModeTest, AKeyFileThatExistedWithWiderModeIsMadeTheOwnersOnly) {
  testing_support::TempDir dir;
  const std::string key = dir.File("tls.key");
  {
    std::ofstream old(key);
    old << "old key";
  }
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  ASSERT_TRUE(WriteDevCerts(dir.path()).ok());
  struct stat st = {};
  ASSERT_EQ(stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(ReadKey(key), nullptr);  // and it holds the new key, not the old bytes
}

TEST_F(DevCertsTest, TheCaIsACaAndSignedTheServingCertificateWhichIsNot) {
  EXPECT_EQ(X509_check_ca(ca_.get()), 1);
  EXPECT_EQ(X509_check_ca(leaf_.get()), 0);
  EXPECT_EQ(X509_check_issued(ca_.get(), ca_.get()), X509_V_OK) << "the CA is self-signed";
  EXPECT_EQ(X509_check_issued(ca_.get(), leaf_.get()), X509_V_OK);
  EXPECT_TRUE(Verifies(ca_.get(), leaf_.get()));
  EXPECT_TRUE(X509_check_purpose(leaf_.get(), X509_PURPOSE_SSL_SERVER, 0) == 1);
}

TEST_F(DevCertsTest, ServesLocalhostAndTheLoopbackAddressesOnly) {
  struct Row {
    const char* name;
    bool host;  // else an IP address
    const char* value;
    bool matches;
  };
  const Row rows[] = {
      {"localhost", true, "localhost", true},
      {"IPv4 loopback", false, "127.0.0.1", true},
      {"IPv6 loopback", false, "::1", true},
      {"another name", true, "gpu-tenancy.example.com", false},
      {"a subdomain of localhost", true, "api.localhost", false},
      {"another address", false, "10.0.0.1", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    int r = row.host ? X509_check_host(leaf_.get(), row.value, 0, 0, nullptr)
                     : X509_check_ip_asc(leaf_.get(), row.value, 0);
    EXPECT_EQ(r == 1, row.matches);
  }
}

TEST_F(DevCertsTest, ValidForADayFromAboutNow) {
  for (X509* c : {ca_.get(), leaf_.get()}) {
    int64_t not_before = SecondsFromNow(X509_get0_notBefore(c));
    int64_t not_after = SecondsFromNow(X509_get0_notAfter(c));
    EXPECT_LE(not_before, 0) << "not valid yet";
    EXPECT_GE(not_before, -600) << "backdated by more than a little clock skew";
    EXPECT_GT(not_after, 24 * 3600 - 600);
    EXPECT_LE(not_after, 24 * 3600);
  }
}

TEST_F(DevCertsTest, TheKeyIsP256AndMatchesTheServingCertificate) {
  EXPECT_EQ(EVP_PKEY_base_id(key_.get()), EVP_PKEY_EC);
  EXPECT_EQ(EVP_PKEY_get_bits(key_.get()), 256);
  EXPECT_EQ(X509_check_private_key(leaf_.get(), key_.get()), 1);
  // The serving key is its own, not the CA's.
  EXPECT_EQ(X509_check_private_key(ca_.get(), key_.get()), 0);
  absl::StatusOr<std::shared_ptr<const CertPair>> pair = CertPair::Load(files_.cert, files_.key);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_NEAR(static_cast<double>((*pair)->not_after_unix()),
              static_cast<double>(std::time(nullptr) + 24 * 3600), 600);
}

TEST_F(DevCertsTest, EachCallMakesNewKeysAndSerials) {
  testing_support::TempDir again;
  ASSERT_TRUE(WriteDevCerts(again.path()).ok());
  Cert leaf2 = ReadCert(again.File("tls.crt"));
  Cert ca2 = ReadCert(again.File("ca.crt"));
  ASSERT_NE(leaf2, nullptr);
  ASSERT_NE(ca2, nullptr);
  EXPECT_NE(
      ASN1_INTEGER_cmp(X509_get0_serialNumber(leaf_.get()), X509_get0_serialNumber(leaf2.get())),
      0);
  EXPECT_NE(
      ASN1_INTEGER_cmp(X509_get0_serialNumber(leaf_.get()), X509_get0_serialNumber(ca_.get())), 0);
  EXPECT_FALSE(Verifies(ca2.get(), leaf_.get())) << "two runs share a CA key";
  // Serials are positive, as RFC 5280 requires.
  for (X509* c : {ca_.get(), leaf_.get(), leaf2.get()}) {
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), nullptr);
    EXPECT_FALSE(BN_is_negative(bn));
    EXPECT_FALSE(BN_is_zero(bn));
    BN_free(bn);
  }
}

TEST(DevCertsErrorTest, AMissingDirectoryIsInternalNamingTheFile) {
  absl::StatusOr<DevCertFiles> files = WriteDevCerts("/nonexistent/gpu-tenancy-dev-certs");
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(files.status().message(),
            "dev certificates: cannot write /nonexistent/gpu-tenancy-dev-certs/ca.crt");
}

}  // namespace
}  // namespace server
