// kube::ApiClient against the kube-apiserver emulation over HTTPS: PEM checks at Create(), every
// HTTP reply handed back as a response (errors only for the transport), the bearer token from
// the config or a trimmed token file, server-certificate verification and the server-name
// override, client-certificate auth, the retry on a connection the server closed, and
// StreamLines' lines, non-200 bodies, cancel and interrupt. DescribeError's wording too.
#include "kube/api_client.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The HTTP status of a reply; -1 when the call failed at the transport.
int StatusOf(const absl::StatusOr<kube::ApiResponse>& r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->status : -1;
}

std::unique_ptr<kube::ApiClient> MakeClient(kube::ApiConfig config) {
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(std::move(config));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

class ApiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeApiServer::Options options;
    options.bookmark_interval = std::chrono::hours(1);  // watches stay silent unless told
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace("team").ok());
    client_ = MakeClient(ConfigFor(*api_));
    ASSERT_NE(client_, nullptr);
  }
  // A pod watch whose lines are all taken and ignored.
  absl::StatusOr<int> WatchPods(kube::ApiClient::Stream* handle) {
    return client_->StreamLines(
        "/api/v1/pods?watch=1", [](absl::string_view) { return true; }, handle, 60);
  }
  // The bearer token of the latest request, as the server received it.
  std::string LastToken() const {
    std::vector<testing_support::RequestRecord> all = api_->Requests();
    return all.empty() ? "<no request>" : all.back().token;
  }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::ApiClient> client_;
};

TEST(ApiClientCreateTest, RefusesPemItCannotRead) {
  testing_support::TempDir dir;
  ASSERT_TRUE(testing_support::MakeTestCerts(dir.path()).ok());
  const std::string cert = ReadFile(dir.File("client.crt"));
  const std::string key = ReadFile(dir.File("client.key"));
  struct Row {
    const char* name;
    std::string ca, cert, key;
    std::string error;  // "" when Create succeeds
  };
  const Row rows[] = {
      {"no CA: the system roots", "", "", "", ""},
      {"a CA and a client pair", ReadFile(dir.File("ca.crt")), cert, key, ""},
      {"CA that is not PEM", "not a certificate", "", "", "API server CA: no PEM certificate"},
      {"client certificate that is not PEM", "", "garbage", key,
       "client certificate: no PEM certificate"},
      {"client certificate without its key", "", cert, "", "client key: no PEM private key"},
      {"client key that is not PEM", "", cert, "-----BEGIN PRIVATE KEY-----\nxx\n",
       "client key: no PEM private key"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    kube::ApiConfig config;
    config.host = "127.0.0.1";
    config.ca_pem = row.ca;
    config.client_cert_pem = row.cert;
    config.client_key_pem = row.key;
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(config);
    if (row.error.empty()) {
      EXPECT_TRUE(c.ok()) << c.status();
      continue;
    }
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().message(), row.error);
  }
}

TEST(DescribeErrorTest, TheStatusMessageOrTheStartOfTheBody) {
  struct Row {
    const char* name;
    kube::ApiResponse response;
    std::string described;
  };
  const Row rows[] = {
      {"Status with a message",
       {409, R"({"kind":"Status","code":409,"message":"the object has been modified"})"},
       "HTTP 409: the object has been modified"},
      {"JSON without a message", {500, R"({"kind":"Status"})"}, R"(HTTP 500: {"kind":"Status"})"},
      {"empty message", {403, R"({"message":""})"}, R"(HTTP 403: {"message":""})"},
      {"not JSON", {502, "Bad Gateway"}, "HTTP 502: Bad Gateway"},
      {"no body", {503, ""}, "HTTP 503: "},
      {"a long body is cut at 200 bytes",
       {500, std::string(500, 'x')},
       "HTTP 500: " + std::string(200, 'x')},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(kube::DescribeError(row.response), row.described);
  }
}

TEST_F(ApiClientTest, EveryHttpReplyIsAResponseWithItsStatusAndBody) {
  struct Row {
    const char* name;
    int inject;  // 0: served as is
    std::string path;
    int status;
    std::string described;
  };
  const Row rows[] = {
      {"found", 0, "/api/v1/namespaces/team", 200, ""},
      {"not found", 0, "/api/v1/namespaces/team/pods/ghost", 404,
       "HTTP 404: pods \"ghost\" not found"},
      {"conflict", 409, "/api/v1/nodes", 409, "HTTP 409: injected conflict"},
      {"too many requests", 429, "/api/v1/nodes", 429,
       "HTTP 429: The server has received too many requests and has asked us to try again later"},
      {"internal error", 500, "/api/v1/nodes", 500,
       "HTTP 500: Internal error occurred: injected failure"},
      {"unavailable", 503, "/api/v1/nodes", 503,
       "HTTP 503: the server is currently unable to handle the request"},
      {"timeout", 504, "/api/v1/nodes", 504,
       "HTTP 504: the server was unable to return a response in the time allotted"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    if (row.inject) api_->InjectFailure("GET", row.path, row.inject);
    absl::StatusOr<kube::ApiResponse> r = client_->Get(row.path);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, row.status);
    if (row.status == 200) {
      EXPECT_THAT(r->body, HasSubstr(R"("name":"team")"));
    } else {
      EXPECT_EQ(kube::DescribeError(*r), row.described);
    }
  }
}

TEST_F(ApiClientTest, PostPutAndPatchCarryTheirBodies) {
  absl::StatusOr<kube::ApiResponse> created = client_->Post(
      "/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n2"}})");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->status, 201);
  EXPECT_NE(api_->GetObject(Resource::kNamespaces, "", "n2"), "");
  absl::StatusOr<kube::ApiResponse> again =
      client_->Post("/api/v1/namespaces", R"({"metadata":{"name":"n2"}})");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status, 409);

  absl::StatusOr<kube::ApiResponse> patched =
      client_->Patch("/api/v1/namespaces/n2", R"({"metadata":{"labels":{"tier":"gold"}}})",
                     "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->status, 200);
  EXPECT_THAT(api_->GetObject(Resource::kNamespaces, "", "n2"), HasSubstr(R"("tier":"gold")"));

  // An update from a resourceVersion that is no longer current is refused, as a response.
  absl::StatusOr<kube::ApiResponse> stale =
      client_->Put("/api/v1/namespaces/n2", R"({"metadata":{"name":"n2","resourceVersion":"1"}})");
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(stale->status, 409);
  EXPECT_THAT(kube::DescribeError(*stale), HasSubstr("the object has been modified"));
}

TEST_F(ApiClientTest, SendsTheConfiguredBearerTokenAndNoneWithoutOne) {
  ASSERT_EQ(StatusOf(client_->Get("/api/v1/nodes")), 200);
  EXPECT_EQ(LastToken(), "test-token");

  std::unique_ptr<kube::ApiClient> anonymous = MakeClient(ConfigFor(*api_, ""));
  absl::StatusOr<kube::ApiResponse> r = anonymous->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(LastToken(), "");

  // A static token that is refused is not sent again: there is nothing fresher to send.
  api_->ClearRequests();
  std::unique_ptr<kube::ApiClient> wrong = MakeClient(ConfigFor(*api_, "wrong"));
  EXPECT_EQ(StatusOf(wrong->Get("/api/v1/nodes")), 401);
  EXPECT_EQ(api_->CountRequests("GET", "/api/v1/nodes"), 1);
}

TEST_F(ApiClientTest, ATokenFileIsTrimmedAndARefusedOneIsNotResentUnchanged) {
  testing_support::TempDir dir;
  const std::string token_file = dir.File("token");
  std::ofstream(token_file) << "  test-token\n";
  kube::ApiConfig config = ConfigFor(*api_, "ignored-when-a-file-is-given");
  config.token_file = token_file;
  std::unique_ptr<kube::ApiClient> client = MakeClient(config);
  ASSERT_EQ(StatusOf(client->Get("/api/v1/nodes")), 200);
  EXPECT_EQ(LastToken(), "test-token");

  // A 401 makes the client read the file again, but it says the same: one request only.
  api_->AcceptTokens({"rotated"});
  api_->ClearRequests();
  EXPECT_EQ(StatusOf(client->Get("/api/v1/nodes")), 401);
  EXPECT_EQ(api_->CountRequests("GET", "/api/v1/nodes"), 1);
}

TEST_F(ApiClientTest, TransportFailuresAreUnavailableAndNameTheServerOrThePath) {
  const int port = api_->port();
  api_->Stop();
  for (int attempt = 0; attempt < 2; ++attempt) {  // with and without a pooled connection
    SCOPED_TRACE(attempt);
    absl::StatusOr<kube::ApiResponse> r = client_->Get("/api/v1/nodes");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(r.status().message()),
                StartsWith(absl::StrCat("kube-apiserver 127.0.0.1:", port, ": ")));
  }
  absl::StatusOr<int> stream = WatchPods(nullptr);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(stream.status().message()), StartsWith("watch /api/v1/pods?watch=1: "));
}

TEST_F(ApiClientTest, AKeptAliveConnectionTheServerClosedIsReplacedTransparently) {
  ASSERT_EQ(StatusOf(client_->Get("/api/v1/nodes")), 200);  // leaves a pooled connection
  ASSERT_TRUE(api_->Restart().ok());                        // which the restart cut
  absl::StatusOr<kube::ApiResponse> r = client_->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
}

TEST_F(ApiClientTest, TheServerCertificateIsVerifiedForTheConfiguredName) {
  testing_support::TempDir other;
  ASSERT_TRUE(testing_support::MakeTestCerts(other.path()).ok());
  struct Row {
    const char* name;
    std::string ca;
    std::string server_name;
    bool served;
    // OpenSSL's system bundle for this row (SSL_CERT_FILE), when set.
    std::string system_bundle = "";
  };
  const Row rows[] = {
      {"its own CA, checked for the host", ReadFile(api_->ca_file()), "", true},
      {"a name in the certificate, dialling the IP", ReadFile(api_->ca_file()), "localhost", true},
      {"a name the certificate lacks", ReadFile(api_->ca_file()), "api.example.com", false},
      {"an unrelated CA", ReadFile(other.File("ca.crt")), "", false},
      // The kubeconfig's CA is the only trust anchor: a CA the system trusts is not one.
      {"an unrelated CA, the server's CA in the system bundle", ReadFile(other.File("ca.crt")), "",
       false, api_->ca_file()},
      {"no CA configured: the system bundle decides", "", "", true, api_->ca_file()},
      {"no CA configured, the system bundle without the server's", "", "", false,
       other.File("ca.crt")},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    kube::ApiConfig config = ConfigFor(*api_);
    config.ca_pem = row.ca;
    config.tls_server_name = row.server_name;
    if (!row.system_bundle.empty()) setenv("SSL_CERT_FILE", row.system_bundle.c_str(), 1);
    std::unique_ptr<kube::ApiClient> client = MakeClient(config);
    absl::StatusOr<kube::ApiResponse> r = client->Get("/api/v1/nodes");
    unsetenv("SSL_CERT_FILE");
    if (row.served) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->status, 200);
    } else {
      ASSERT_FALSE(r.ok()) << "served despite the certificate";
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    }
  }
}

TEST(ApiClientClientCertTest, AClientCertificateAuthenticatesWithoutAToken) {
  FakeApiServer::Options options;
  options.require_client_cert = true;
  absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
  ASSERT_TRUE(api.ok()) << api.status();
  kube::ApiConfig config = ConfigFor(**api, "");
  config.client_cert_pem = ReadFile((*api)->client_cert_file());
  config.client_key_pem = ReadFile((*api)->client_key_file());
  std::unique_ptr<kube::ApiClient> client = MakeClient(config);
  absl::StatusOr<kube::ApiResponse> r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  std::vector<testing_support::RequestRecord> requests = (*api)->Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].client_cn, "client");
  EXPECT_EQ(requests[0].token, "");
}

// ---- StreamLines --------------------------------------------------------------------------

TEST_F(ApiClientTest, StreamLinesHandsOverWholeLinesUntilTheCallerStops) {
  const int64_t from = api_->resource_version();
  for (const char* ns : {"a", "b", "c"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
  std::vector<std::string> lines;
  absl::StatusOr<int> status = client_->StreamLines(
      absl::StrCat("/api/v1/namespaces?watch=1&resourceVersion=", from),
      [&](absl::string_view line) {
        lines.emplace_back(line);
        return lines.size() < 2;
      },
      nullptr, 10);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 200);
  ASSERT_EQ(lines.size(), 2u) << "a line after the caller said stop";
  for (const std::string& line : lines) {
    absl::StatusOr<rapidjson::Document> event = common::ParseJson(line);
    ASSERT_TRUE(event.ok()) << line;
    EXPECT_EQ(common::StringOr(*event, "type"), "ADDED");
  }
  EXPECT_THAT(lines[1], HasSubstr(R"("name":"b")"));
  EXPECT_EQ(LastToken(), "test-token");
}

TEST_F(ApiClientTest, StreamLinesDeliversANonOkBodyAsOneLine) {
  api_->InjectFailure("GET", "/api/v1/pods", 500);
  std::vector<std::string> lines;
  absl::StatusOr<int> status = client_->StreamLines(
      "/api/v1/pods?watch=1",
      [&](absl::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      nullptr, 10);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 500);
  ASSERT_EQ(lines.size(), 1u);
  absl::StatusOr<rapidjson::Document> body = common::ParseJson(lines[0]);
  ASSERT_TRUE(body.ok()) << lines[0];
  EXPECT_EQ(common::StringOr(*body, "reason"), "InternalError");
}

// Runs one idle watch through `handle` on a thread; the result is there after Join().
class BackgroundStream {
 public:
  BackgroundStream(kube::ApiClient& client, kube::ApiClient::Stream& handle)
      : thread_([this, &client, &handle] {
          result_ = client.StreamLines(
              "/api/v1/pods?watch=1", [](absl::string_view) { return true; }, &handle, 60);
        }) {}
  ~BackgroundStream() { Join(); }
  // Joins, and says how long that took.
  std::chrono::steady_clock::duration Join() {
    auto start = std::chrono::steady_clock::now();
    if (thread_.joinable()) thread_.join();
    return std::chrono::steady_clock::now() - start;
  }
  const absl::StatusOr<int>& result() const { return result_; }

 private:
  absl::StatusOr<int> result_ = absl::UnknownError("not run");
  std::thread thread_;
};

TEST_F(ApiClientTest, CancelEndsARunningStreamAndEveryLaterOne) {
  kube::ApiClient::Stream handle;
  {
    BackgroundStream stream(*client_, handle);
    ASSERT_TRUE(api_->WaitForWatches(1, 10s));
    handle.Cancel();
    EXPECT_LT(stream.Join(), 10s) << "the 60 s read timeout ended it, not Cancel()";
    EXPECT_EQ(stream.result().status().code(), absl::StatusCode::kCancelled);
  }
  EXPECT_TRUE(handle.cancelled());
  api_->ClearRequests();
  absl::StatusOr<int> later = WatchPods(&handle);
  EXPECT_EQ(later.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(api_->CountRequests("", "/"), 0) << "a cancelled handle still called the server";
}

TEST_F(ApiClientTest, InterruptEndsOnlyTheCurrentOrNextStream) {
  kube::ApiClient::Stream handle;
  {
    BackgroundStream stream(*client_, handle);
    ASSERT_TRUE(api_->WaitForWatches(1, 10s));
    handle.Interrupt();
    EXPECT_LT(stream.Join(), 10s);
    EXPECT_EQ(stream.result().status().code(), absl::StatusCode::kAborted);
  }
  // An interrupt with no stream running is kept for the next one, which ends at once...
  handle.Interrupt();
  api_->ClearRequests();
  absl::StatusOr<int> next = WatchPods(&handle);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(api_->CountRequests("", "/"), 0);
  // ...and only that one: the handle streams again.
  const int64_t from = api_->resource_version();
  ASSERT_TRUE(api_->AddNamespace("late").ok());
  std::string line;
  absl::StatusOr<int> after = client_->StreamLines(
      absl::StrCat("/api/v1/namespaces?watch=1&resourceVersion=", from),
      [&](absl::string_view l) {
        line = std::string(l);
        return false;
      },
      &handle, 60);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, 200);
  EXPECT_THAT(line, HasSubstr(R"("name":"late")"));
  EXPECT_FALSE(handle.cancelled());
}

}  // namespace
}  // namespace kube_test
