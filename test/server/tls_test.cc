// server/tls: loading a certificate pair (each file and mismatch error named), the server
// SSL_CTX policy (TLS >= 1.2, forward-secret AEAD suites for 1.2, no compression or
// renegotiation, optional client CA), and the certificate store consulted on every handshake.
// Handshakes run in memory over a BIO pair, both ends driven by the test: no sockets, no waits.
#include "server/tls.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace server {
namespace {

using testing_support::MakeTestCerts;
using testing_support::TempDir;

using CtxPtr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

std::string Reason() {
  unsigned long code = ERR_get_error();
  const char* reason = code ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason ? reason : (code ? "unnamed OpenSSL error" : "no OpenSSL error");
}

struct Outcome {
  bool ok = false;           // both ends completed the handshake
  std::string server_error;  // the first OpenSSL reason each end failed with, if any
  std::string client_error;
  int version = 0;
  std::string cipher;
  X509* peer = nullptr;  // what the client saw, owned
  int peer_chain = 0;    // certificates the client received, leaf included
  ~Outcome() { X509_free(peer); }
};

// One in-memory handshake. `server_ssl` may be made beforehand (to show when the certificate
// is chosen); otherwise it is made from `server`.
std::unique_ptr<Outcome> Handshake(SSL_CTX* server, SSL_CTX* client, SSL* server_ssl = nullptr) {
  auto out = std::make_unique<Outcome>();
  SSL* s = server_ssl ? server_ssl : SSL_new(server);
  SSL* c = SSL_new(client);
  BIO *bs = nullptr, *bc = nullptr;
  BIO_new_bio_pair(&bs, 0, &bc, 0);
  SSL_set_bio(s, bs, bs);
  SSL_set_bio(c, bc, bc);
  SSL_set_accept_state(s);
  SSL_set_connect_state(c);
  SSL_set1_host(c, "localhost");
  bool s_done = false, c_done = false, s_failed = false, c_failed = false;
  auto step = [](SSL* ssl, bool& done, bool& failed, std::string& error) {
    if (done || failed) return;
    int rc = SSL_do_handshake(ssl);
    if (rc == 1) {
      done = true;
      return;
    }
    int e = SSL_get_error(ssl, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      failed = true;
      error = Reason();
    }
  };
  // Each round moves every pending flight; a handshake takes a handful. Stop when both ends are
  // finished, or when neither has anything left to read.
  for (int round = 0; round < 20 && !((s_done || s_failed) && (c_done || c_failed)); ++round) {
    step(c, c_done, c_failed, out->client_error);
    step(s, s_done, s_failed, out->server_error);
    if (BIO_ctrl_pending(bs) == 0 && BIO_ctrl_pending(bc) == 0 && (s_failed || c_failed)) break;
  }
  out->ok = s_done && c_done;
  out->version = SSL_version(s);
  if (const char* name = SSL_get_cipher_name(s)) out->cipher = name;
  out->peer = SSL_get1_peer_certificate(c);
  if (STACK_OF(X509)* chain = SSL_get_peer_cert_chain(c)) out->peer_chain = sk_X509_num(chain);
  SSL_free(c);
  SSL_free(s);
  ERR_clear_error();
  return out;
}

class TlsTest : public ::testing::Test {
 protected:
  // "one" and "two": unrelated CAs, each with a serving and a client pair (MakeTestCerts).
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (const char* name : {"one", "two"}) {
      std::filesystem::create_directories(dir_->File(name));
      ASSERT_TRUE(MakeTestCerts(dir_->File(name)).ok());
    }
    // The serving certificate followed by its CA, as cert-manager writes tls.crt.
    std::ofstream(dir_->File("one/chain.crt")) << std::ifstream(dir_->File("one/tls.crt")).rdbuf()
                                               << std::ifstream(dir_->File("one/ca.crt")).rdbuf();
    std::ofstream empty(dir_->File("empty.pem"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string File(const std::string& name) { return dir_->File(name); }

  static std::shared_ptr<const CertPair> Pair(const std::string& ca) {
    absl::StatusOr<std::shared_ptr<const CertPair>> pair =
        CertPair::Load(File(ca + "/tls.crt"), File(ca + "/tls.key"));
    EXPECT_TRUE(pair.ok()) << pair.status();
    return pair.ok() ? *pair : nullptr;
  }

  static CtxPtr ServerCtx(CertStore* store, const std::string& client_ca = "") {
    CtxPtr ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    EXPECT_TRUE(ConfigureServerContext(*ctx, store, client_ca));
    return ctx;
  }

  // Trusts both CAs, checks the name "localhost"; `who` ("one/client") presents a certificate.
  static CtxPtr ClientCtx(int min_version, int max_version, const std::string& who = "") {
    CtxPtr ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    SSL_CTX_set_min_proto_version(ctx.get(), min_version);
    SSL_CTX_set_max_proto_version(ctx.get(), max_version);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), File("one/ca.crt").c_str(), nullptr), 1);
    EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), File("two/ca.crt").c_str(), nullptr), 1);
    if (!who.empty()) {
      EXPECT_EQ(
          SSL_CTX_use_certificate_file(ctx.get(), File(who + ".crt").c_str(), SSL_FILETYPE_PEM), 1);
      EXPECT_EQ(
          SSL_CTX_use_PrivateKey_file(ctx.get(), File(who + ".key").c_str(), SSL_FILETYPE_PEM), 1);
    }
    return ctx;
  }

  static TempDir* dir_;
};

TempDir* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, LoadsAMatchingPairAndItsExpiry) {
  std::shared_ptr<const CertPair> pair = Pair("one");
  ASSERT_NE(pair, nullptr);
  EXPECT_NE(pair->leaf(), nullptr);
  EXPECT_NE(pair->key(), nullptr);
  EXPECT_EQ(sk_X509_num(pair->chain()), 0) << "a lone leaf has no chain";
  // MakeTestCerts signs for two days.
  const int64_t now = std::time(nullptr);
  EXPECT_GT(pair->not_after_unix(), now + 86400);
  EXPECT_LE(pair->not_after_unix(), now + 2 * 86400 + 60);

  absl::StatusOr<std::shared_ptr<const CertPair>> chained =
      CertPair::Load(File("one/chain.crt"), File("one/tls.key"));
  ASSERT_TRUE(chained.ok()) << chained.status();
  EXPECT_EQ(sk_X509_num((*chained)->chain()), 1) << "the CA after the leaf";
  EXPECT_EQ(X509_cmp((*chained)->leaf(), pair->leaf()), 0) << "the first certificate is the leaf";
}

TEST_F(TlsTest, EachLoadFailureNamesItsFile) {
  struct Row {
    std::string name;
    std::string cert, key;
    std::string message;  // a prefix when it ends in ": "
  };
  const std::vector<Row> rows = {
      {"no certificate file", File("nope.crt"), File("one/tls.key"),
       "cannot read certificate " + File("nope.crt")},
      {"empty certificate file", File("empty.pem"), File("one/tls.key"),
       File("empty.pem") + ": no PEM certificate"},
      {"a key where the certificate goes", File("one/tls.key"), File("one/tls.key"),
       File("one/tls.key") + ": no PEM certificate"},
      {"no key file", File("one/tls.crt"), File("nope.key"),
       "cannot read private key " + File("nope.key")},
      {"a certificate where the key goes", File("one/tls.crt"), File("one/ca.crt"),
       File("one/ca.crt") + ": no PEM private key: "},
      {"empty key file", File("one/tls.crt"), File("empty.pem"),
       File("empty.pem") + ": no PEM private key: "},
      {"another certificate's key", File("one/tls.crt"), File("one/client.key"),
       File("one/client.key") + " does not match the certificate in " + File("one/tls.crt")},
      {"another CA's key", File("one/tls.crt"), File("two/tls.key"),
       File("two/tls.key") + " does not match the certificate in " + File("one/tls.crt")},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<std::shared_ptr<const CertPair>> pair = CertPair::Load(row.cert, row.key);
    EXPECT_EQ(pair.status().code(), absl::StatusCode::kInvalidArgument);
    if (absl::EndsWith(row.message, ": ")) {
      EXPECT_TRUE(absl::StartsWith(pair.status().message(), row.message)) << pair.status();
      EXPECT_GT(pair.status().message().size(), row.message.size()) << "OpenSSL's reason follows";
    } else {
      EXPECT_EQ(pair.status().message(), row.message);
    }
  }
  EXPECT_EQ(ERR_peek_error(), 0u) << "no OpenSSL error is left queued for the next caller";
}

TEST_F(TlsTest, ContextAllowsTls12AndUpWithoutCompressionOrRenegotiation) {
  CertStore store(Pair("one"));
  CtxPtr ctx = ServerCtx(&store);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx.get()), TLS1_2_VERSION);
  const uint64_t want =
      SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;
  EXPECT_EQ(SSL_CTX_get_options(ctx.get()) & want, want);
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx.get()), SSL_VERIFY_NONE) << "no client CA given";

  struct Row {
    std::string name;
    int min_version, max_version;
    const char* ciphers;  // the client's TLS 1.2 offer; null for its default
    bool ok;
    int version;
    std::string cipher_or_server_error;
  };
  const std::vector<Row> rows = {
      {"TLS 1.3", TLS1_2_VERSION, TLS1_3_VERSION, nullptr, true, TLS1_3_VERSION,
       "TLS_AES_256_GCM_SHA384"},
      {"TLS 1.2 takes the server's first suite", TLS1_2_VERSION, TLS1_2_VERSION, nullptr, true,
       TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"TLS 1.2 with ChaCha20 only", TLS1_2_VERSION, TLS1_2_VERSION,
       "ECDHE-ECDSA-CHACHA20-POLY1305", true, TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS 1.2 CBC suites are refused", TLS1_2_VERSION, TLS1_2_VERSION,
       "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA", false, 0, "no shared cipher"},
      {"TLS 1.1 is refused", TLS1_VERSION, TLS1_1_VERSION, "DEFAULT:@SECLEVEL=0", false, 0,
       "unsupported protocol"},
      {"TLS 1.0 is refused", TLS1_VERSION, TLS1_VERSION, "DEFAULT:@SECLEVEL=0", false, 0,
       "unsupported protocol"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    CtxPtr client = ClientCtx(row.min_version, row.max_version);
    if (row.ciphers) {
      ASSERT_EQ(SSL_CTX_set_cipher_list(client.get(), row.ciphers), 1);
    }
    std::unique_ptr<Outcome> o = Handshake(ctx.get(), client.get());
    EXPECT_EQ(o->ok, row.ok) << "server: " << o->server_error << ", client: " << o->client_error;
    if (row.ok) {
      EXPECT_EQ(o->version, row.version);
      EXPECT_EQ(o->cipher, row.cipher_or_server_error);
      EXPECT_EQ(X509_cmp(o->peer, store.Current()->leaf()), 0);
    } else {
      EXPECT_EQ(o->server_error, row.cipher_or_server_error);
    }
  }
}

TEST_F(TlsTest, EachHandshakeTakesTheStoresCurrentPair) {
  std::shared_ptr<const CertPair> one = Pair("one"), two = Pair("two");
  CertStore store(one);
  CtxPtr server = ServerCtx(&store);
  CtxPtr client = ClientCtx(TLS1_2_VERSION, TLS1_3_VERSION);
  std::unique_ptr<Outcome> first = Handshake(server.get(), client.get());
  ASSERT_TRUE(first->ok) << first->server_error;
  EXPECT_EQ(X509_cmp(first->peer, one->leaf()), 0);

  // A connection accepted before the swap but not yet handshaken presents the new pair too.
  SSL* accepted = SSL_new(server.get());
  store.Swap(two);
  one.reset();  // the store's old pair is not needed by later handshakes
  std::unique_ptr<Outcome> second = Handshake(server.get(), client.get(), accepted);
  ASSERT_TRUE(second->ok) << second->server_error;
  EXPECT_EQ(X509_cmp(second->peer, two->leaf()), 0);
  EXPECT_EQ(second->peer_chain, 1);

  absl::StatusOr<std::shared_ptr<const CertPair>> chained =
      CertPair::Load(File("one/chain.crt"), File("one/tls.key"));
  ASSERT_TRUE(chained.ok()) << chained.status();
  store.Swap(*chained);
  std::unique_ptr<Outcome> third = Handshake(server.get(), client.get());
  ASSERT_TRUE(third->ok) << third->server_error;
  EXPECT_EQ(third->peer_chain, 2) << "the chain is sent after the leaf";

  store.Swap(nullptr);
  std::unique_ptr<Outcome> none = Handshake(server.get(), client.get());
  EXPECT_FALSE(none->ok) << "no pair, no handshake";
  EXPECT_NE(none->server_error, "no OpenSSL error");
}

TEST_F(TlsTest, AClientCaRequiresACertificateItIssued) {
  CertStore store(Pair("one"));
  CtxPtr ctx = ServerCtx(&store, File("one/ca.crt"));
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx.get()), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  STACK_OF(X509_NAME)* names = SSL_CTX_get_client_CA_list(ctx.get());
  ASSERT_EQ(sk_X509_NAME_num(names), 1);
  char name[256];
  X509_NAME_oneline(sk_X509_NAME_value(names, 0), name, sizeof(name));
  EXPECT_STREQ(name, "/CN=gpu-tenancy test CA");

  struct Row {
    std::string name;
    int version;
    std::string client;
    bool ok;
    std::string server_error;
  };
  const std::vector<Row> rows = {
      {"TLS 1.3, issued by the CA", TLS1_3_VERSION, "one/client", true, ""},
      {"TLS 1.2, issued by the CA", TLS1_2_VERSION, "one/client", true, ""},
      {"TLS 1.3, no certificate", TLS1_3_VERSION, "", false, "peer did not return a certificate"},
      {"TLS 1.2, no certificate", TLS1_2_VERSION, "", false, "peer did not return a certificate"},
      {"TLS 1.3, another CA's certificate", TLS1_3_VERSION, "two/client", false,
       "certificate verify failed"},
      {"TLS 1.2, another CA's certificate", TLS1_2_VERSION, "two/client", false,
       "certificate verify failed"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    CtxPtr client = ClientCtx(row.version, row.version, row.client);
    std::unique_ptr<Outcome> o = Handshake(ctx.get(), client.get());
    EXPECT_EQ(o->ok, row.ok) << "server: " << o->server_error << ", client: " << o->client_error;
    EXPECT_EQ(o->server_error, row.server_error);
  }
}

TEST_F(TlsTest, AClientCaThatCannotBeLoadedFailsTheContext) {
  CertStore store(Pair("one"));
  for (const std::string& ca : {File("nope-ca.crt"), File("empty.pem"), File("one/tls.key")}) {
    SCOPED_TRACE(ca);
    CtxPtr ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    EXPECT_FALSE(ConfigureServerContext(*ctx, &store, ca));
    EXPECT_EQ(ERR_peek_error(), 0u) << "the reason was taken off the queue and logged";
  }
}

}  // namespace
}  // namespace server
