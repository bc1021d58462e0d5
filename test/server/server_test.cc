// server::Server in process over real TLS on loopback: POST routes answered by their handlers
// with a Server-Timing header and counted per route and code on /metrics (with the certificate
// expiry, the deadline counters and the caller's extra metrics); the operator port's health,
// readiness and JSON routes; a graceful Stop() that fails readiness first and keeps serving
// through the shutdown delay; no operator port when asked; what Create() refuses; and the
// serving pair reloaded when its files change.
#include "server/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/server/tls_test_client.h"
#include "test/support/serve_process.h"

namespace server {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testing_support::SampleValue;
using testing_support::TempDir;
using Steady = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

template <typename F>
bool Eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  for (auto until = Steady::now() + limit; Steady::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// A TCP port on 127.0.0.1 that stays taken while this lives.
class TakenPort {
 public:
  TakenPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
    listen(fd_, 1);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class ServerTest : public ::testing::Test {
 protected:
  // Two unrelated CAs with a serving pair each; clients trust both (ca-bundle.crt).
  static void SetUpTestSuite() {
    certs_ = new TempDir();
    for (const char* name : {"a", "b"}) {
      fs::create_directories(certs_->File(name));
      ASSERT_TRUE(testing_support::MakeTestCerts(certs_->File(name)).ok());
    }
    std::ofstream(certs_->File("ca-bundle.crt"))
        << ReadFile(certs_->File("a/ca.crt")) << ReadFile(certs_->File("b/ca.crt"));
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void TearDown() override { server_.reset(); }

  static Options BaseOptions() {
    Options o;
    o.listen_host = "127.0.0.1";
    o.listen_port = 0;
    o.metrics_host = "127.0.0.1";
    o.metrics_port = 0;
    o.tls_cert_file = certs_->File("a/tls.crt");
    o.tls_key_file = certs_->File("a/tls.key");
    o.worker_threads = 4;
    return o;
  }
  absl::StatusOr<std::unique_ptr<Server>> Create(Options o) {
    std::vector<PostRoute> routes = {
        {"/echo",
         [this](absl::string_view body) {
           last_body_ = std::string(body);
           return Reply{200, std::string(body), {}};
         }},
        {"/created",
         [](absl::string_view) {
           return Reply{201, R"({"made":1})", {}};
         },
         false},
        {"/fail",
         [](absl::string_view) {
           return Reply{500, R"({"error":"boom"})", {}};
         }},
        {"/odd",
         [](absl::string_view) {
           return Reply{418, "{}", {}};
         }},
    };
    std::vector<ReadyCheck> readiness = {{"/readyz", [this] { return ready_.load(); }},
                                         {"/readyz/always", nullptr}};
    std::vector<GetRoute> get_routes = {
        {"/debug/state",
         [] {
           return Reply{200, R"({"ok":true})", {}};
         }},
        {"/debug/missing",
         [] {
           return Reply{404, R"({"error":"none"})", {}};
         }},
    };
    return Server::Create(
        std::move(o), std::move(routes), std::move(readiness),
        [](common::MetricsText& out) {
          out.Family("test_extra", common::MetricsText::kGauge, "A series of the caller's.");
          out.Sample("test_extra", {}, 7);
        },
        std::move(get_routes));
  }
  void Start(Options o = BaseOptions()) {
    absl::StatusOr<std::unique_ptr<Server>> s = Create(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    server_->Start();
  }
  httplib::Result Post(const std::string& path, const std::string& body) {
    httplib::SSLClient client("127.0.0.1", server_->tls_port());
    client.set_ca_cert_path(certs_->File("ca-bundle.crt").c_str());
    client.enable_server_certificate_verification(true);
    client.set_read_timeout(10, 0);
    return client.Post(path.c_str(), body, "application/json");
  }
  httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", server_->metrics_port());
    client.set_read_timeout(10, 0);
    return client.Get(path.c_str());
  }
  int GetStatus(const std::string& path) {
    httplib::Result r = Get(path);
    return r ? r->status : 0;
  }

  static inline TempDir* certs_ = nullptr;
  std::atomic<bool> ready_{true};
  std::string last_body_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, PostRoutesAnswerWithTheirHandlersReplyAndItsServerTime) {
  Start();
  const std::string body = R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["n1"]})";
  httplib::Result echo = Post("/echo", body);
  ASSERT_TRUE(echo) << httplib::to_string(echo.error());
  EXPECT_EQ(echo->status, 200);
  EXPECT_EQ(echo->body, body);
  EXPECT_EQ(last_body_, body);
  EXPECT_THAT(echo->get_header_value("Server-Timing"), MatchesRegex("app;dur=[0-9.e+-]+"));
  httplib::Result created = Post("/created", "{}");  // runs on the event loop, same reply path
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  EXPECT_EQ(created->body, R"({"made":1})");
  EXPECT_TRUE(created->has_header("Server-Timing"));
}

TEST_F(ServerTest, MetricsCountEachRouteAndCodeAndCarryTheServersOwnSeries) {
  Start();
  for (const char* path : {"/echo", "/echo", "/fail", "/odd"}) ASSERT_TRUE(Post(path, "{}"));
  httplib::Result r = Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = r->body;
  struct Row {
    std::string series;
    double value;
  };
  absl::StatusOr<std::shared_ptr<const CertPair>> pair =
      CertPair::Load(certs_->File("a/tls.crt"), certs_->File("a/tls.key"));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const Row rows[] = {
      {R"(gpu_tenancy_http_requests_total{route="/echo",code="200"})", 2},
      {R"(gpu_tenancy_http_requests_total{route="/fail",code="500"})", 1},
      {R"(gpu_tenancy_http_requests_total{route="/odd",code="other"})", 1},
      {R"(gpu_tenancy_http_request_duration_seconds_count{route="/echo"})", 2},
      {R"(gpu_tenancy_http_request_duration_seconds_count{route="/created"})", 0},
      {"gpu_tenancy_tls_certificate_expiry_seconds",
       static_cast<double>((*pair)->not_after_unix())},
      {R"(gpu_tenancy_request_deadline_expired_total{listener="tls"})", 0},
      {R"(gpu_tenancy_request_deadline_expired_total{listener="operator"})", 0},
      {"test_extra", 7},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.series);
    std::optional<double> value = SampleValue(m, row.series);
    ASSERT_TRUE(value.has_value()) << m;
    EXPECT_EQ(*value, row.value);
  }
  EXPECT_EQ(testing_support::PromtoolProblems(m), "");
}

TEST_F(ServerTest, ThePlainListenerServesHealthReadinessAndJsonRoutes) {
  Start();
  struct Row {
    const char* path;
    int status;
    std::string content_type;
    std::string body;
  };
  const Row rows[] = {
      {"/healthz", 200, "text/plain", "ok\n"},
      {"/readyz", 200, "text/plain", "ok\n"},
      {"/readyz/always", 200, "text/plain", "ok\n"},
      {"/debug/state", 200, "application/json", R"({"ok":true})"},
      {"/debug/missing", 404, "application/json", R"({"error":"none"})"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.path);
    httplib::Result r = Get(row.path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, row.status);
    EXPECT_EQ(r->get_header_value("Content-Type"), row.content_type);
    EXPECT_EQ(r->body, row.body);
  }
  ready_ = false;
  httplib::Result not_ready = Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_EQ(not_ready->body, "not ready\n");
  EXPECT_EQ(GetStatus("/readyz/always"), 200);
  ready_ = true;
  EXPECT_EQ(GetStatus("/readyz"), 200);
}

TEST_F(ServerTest, StopFailsReadinessAtOnceAndServesThroughTheDelay) {
  Options o = BaseOptions();
  o.shutdown_delay = absl::Seconds(3);
  Start(o);
  Steady::time_point start = Steady::now();
  std::thread stopper([&] { server_->Stop(); });
  ASSERT_TRUE(Eventually([&] { return server_->stopping(); }));
  EXPECT_EQ(GetStatus("/readyz"), 503);
  EXPECT_EQ(GetStatus("/readyz/always"), 503) << "a check without a condition still fails";
  EXPECT_EQ(GetStatus("/healthz"), 200);
  httplib::Result during = Post("/echo", "{}");
  ASSERT_TRUE(during) << "not served during the shutdown delay";
  EXPECT_EQ(during->status, 200);
  stopper.join();
  EXPECT_GE(Steady::now() - start, std::chrono::milliseconds(3000));
  EXPECT_FALSE(Post("/echo", "{}")) << "still serving after Stop()";
  Steady::time_point again = Steady::now();
  server_->Stop();  // a second Stop() has nothing left to do, the delay included
  EXPECT_LT(Steady::now() - again, std::chrono::milliseconds(1000));
}

TEST_F(ServerTest, AMetricsPortOfMinusOneMeansNoOperatorPort) {
  Options o = BaseOptions();
  o.metrics_port = -1;
  Start(o);
  EXPECT_EQ(server_->metrics_port(), 0);
  EXPECT_GT(server_->tls_port(), 0);
  httplib::Result r = Post("/echo", "{}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, CreateRefusesWhatCannotServe) {
  TakenPort taken;
  struct Row {
    const char* name;
    std::function<void(Options&)> change;
    absl::StatusCode code;
    std::string message;  // a substring
  };
  const Row rows[] = {
      {"certificate file missing", [](Options& o) { o.tls_cert_file = "/nonexistent/tls.crt"; },
       absl::StatusCode::kInvalidArgument, "/nonexistent/tls.crt"},
      {"the key of another pair", [](Options& o) { o.tls_key_file = certs_->File("b/tls.key"); },
       absl::StatusCode::kInvalidArgument, ""},
      {"client CA unreadable", [](Options& o) { o.client_ca_file = "/nonexistent/ca.crt"; },
       absl::StatusCode::kInvalidArgument, "TLS setup failed"},
      {"TLS port taken", [&](Options& o) { o.listen_port = taken.port(); },
       absl::StatusCode::kUnavailable, "cannot listen on"},
      {"metrics port taken", [&](Options& o) { o.metrics_port = taken.port(); },
       absl::StatusCode::kUnavailable, "cannot listen on"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Options o = BaseOptions();
    row.change(o);
    absl::StatusOr<std::unique_ptr<Server>> s = Create(o);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), row.code) << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(row.message));
  }
}

TEST_F(ServerTest, TheServingPairIsReloadedWhenItsFilesChange) {
  TempDir live;
  const std::string cert = live.File("tls.crt");
  const std::string key = live.File("tls.key");
  fs::copy_file(certs_->File("a/tls.crt"), cert);
  fs::copy_file(certs_->File("a/tls.key"), key);
  Options o = BaseOptions();
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.cert_poll_interval = absl::Milliseconds(20);
  Start(o);
  auto serial = [&]() -> std::string {
    absl::StatusOr<std::unique_ptr<testing_support::TlsConnection>> c =
        testing_support::TlsConnection::Open(server_->tls_port(),
                                             {certs_->File("ca-bundle.crt"), "", ""});
    return c.ok() ? (*c)->PeerSerial() : std::string(c.status().message());
  };
  const std::string a = testing_support::CertificateFileSerial(certs_->File("a/tls.crt"));
  const std::string b = testing_support::CertificateFileSerial(certs_->File("b/tls.crt"));
  ASSERT_NE(a, b);
  EXPECT_EQ(serial(), a);
  // Each file replaced in one rename, the way a careful writer updates them.
  for (const char* name : {"tls.crt", "tls.key"}) {
    fs::copy_file(certs_->File(absl::StrCat("b/", name)), live.File(absl::StrCat(name, ".new")));
    fs::rename(live.File(absl::StrCat(name, ".new")), live.File(name));
  }
  EXPECT_TRUE(Eventually([&] { return serial() == b; })) << serial();
}

}  // namespace
}  // namespace server
