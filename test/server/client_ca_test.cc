// Mutual TLS: with --client-ca, the TLS listener serves only callers that present a certificate
// issued by that CA (kube-apiserver and kube-scheduler configured as docs/install.md's "Mutual TLS"
// says); everyone else is refused during the handshake and gets no response at all. The plain
// health and metrics listener is unaffected.
#include <httplib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/server/tls_test_client.h"
#include "test/support/serve_process.h"
#include "test/support/test_inputs.h"

namespace {

namespace fs = std::filesystem;
using testing_support::ClientCredentials;
using testing_support::MakeTestCerts;
using testing_support::ServeProcess;
using testing_support::TempDir;
using testing_support::TlsConnection;

using testing_support::kDemoMigFilterRequest;

class ClientCaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // "trusted": the CA the server trusts for clients (and its serving pair); "other": an
    // unrelated CA with its own client certificate.
    for (const char* name : {"trusted", "other"}) {
      fs::create_directories(dir_->File(name));
      ASSERT_TRUE(MakeTestCerts(dir_->File(name)).ok());
    }
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
        {"--demo", "--tls-cert", dir_->File("trusted/tls.crt"), "--tls-key",
         dir_->File("trusted/tls.key"), "--client-ca", dir_->File("trusted/ca.crt")});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  // POST /extender/filter the way kube-scheduler does; 0 when no HTTP response came back.
  static int PostFilter(const std::string& cert, const std::string& key) {
    std::unique_ptr<httplib::SSLClient> client =
        cert.empty()
            ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->tls_port())
            : std::make_unique<httplib::SSLClient>("127.0.0.1", server_->tls_port(), cert, key);
    client->set_ca_cert_path(dir_->File("trusted/ca.crt").c_str());
    client->enable_server_certificate_verification(true);
    client->set_read_timeout(10, 0);
    httplib::Result r = client->Post("/extender/filter", kDemoMigFilterRequest, "application/json");
    return r ? r->status : 0;
  }

  static TempDir* dir_;
  static ServeProcess* server_;
};

TempDir* ClientCaTest::dir_ = nullptr;
ServeProcess* ClientCaTest::server_ = nullptr;

TEST_F(ClientCaTest, OnlyClientsWithACertificateFromTheCaAreServed) {
  struct Case {
    const char* name;
    std::string cert;  // relative to the temp dir; empty: no client certificate
    std::string key;
    bool served;
  };
  const std::vector<Case> cases = {
      {"no client certificate", "", "", false},
      {"client certificate from another CA", "other/client.crt", "other/client.key", false},
      {"client certificate from the trusted CA", "trusted/client.crt", "trusted/client.key", true},
      {"no client certificate again, after a served one", "", "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string cert = c.cert.empty() ? "" : dir_->File(c.cert);
    std::string key = c.key.empty() ? "" : dir_->File(c.key);
    EXPECT_EQ(PostFilter(cert, key), c.served ? 200 : 0);

    // The same at the TLS level: a refused client gets no HTTP response on its connection.
    absl::StatusOr<std::unique_ptr<TlsConnection>> conn = TlsConnection::Open(
        server_->tls_port(), ClientCredentials{dir_->File("trusted/ca.crt"), cert, key});
    bool served = false;
    if (conn.ok()) {  // TLS 1.3: the client finishes its handshake before the server's verdict
      absl::StatusOr<int> status = (*conn)->Post("/extender/filter", kDemoMigFilterRequest);
      served = status.ok() && *status == 200;
    }
    EXPECT_EQ(served, c.served) << (conn.ok() ? "" : conn.status().ToString());
  }
}

TEST_F(ClientCaTest, HealthAndMetricsStayPlainHttp) {
  // Probes and Prometheus do not hold client certificates; that listener never asks for one.
  EXPECT_EQ(server_->Get("/healthz").status, 200);
  EXPECT_EQ(server_->Get("/readyz").status, 200);
  EXPECT_EQ(server_->Get("/metrics").status, 200);
}

TEST(ClientCaStartupTest, UnreadableClientCaRefusesToStart) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
      {"--demo", "--client-ca", dir.File("missing-ca.crt")}, dir.File("serve.log"));
  EXPECT_FALSE(s.ok()) << "the server started without the client CA it was told to require";
  // Refused because of that file, and said so.
  const std::string log = testing_support::ReadFile(dir.File("serve.log"));
  EXPECT_TRUE(
      absl::StrContains(log, "msg=\"cannot load client CA\" file=" + dir.File("missing-ca.crt")))
      << log;
  EXPECT_TRUE(absl::StrContains(log, "error: TLS setup failed")) << log;
}

}  // namespace
