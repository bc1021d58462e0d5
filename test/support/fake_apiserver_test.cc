// The kube-apiserver emulation over real HTTPS, driven with a plain httplib::SSLClient (and raw
// TLS where the chunked bytes matter), and compared with the captures from a real v1.28
// apiserver in test/testdata/apiserver/.
#include "test/support/fake_apiserver.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace testing_support {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "test-token";

// ---- helpers ----------------------------------------------------------------------------------

std::set<std::string> Keys(const rapidjson::Value& v) {
  std::set<std::string> out;
  if (!v.IsObject()) return out;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) out.insert(it->name.GetString());
  return out;
}

std::string Str(const rapidjson::Value& obj, const char* key) {
  return std::string(common::StringOr(obj, key));
}

std::string Meta(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* m = common::FindMember(obj, "metadata");
  return m == nullptr ? "" : Str(*m, key);
}

std::vector<std::string> ItemNames(const rapidjson::Value& list) {
  std::vector<std::string> out;
  const rapidjson::Value* items = common::FindMember(list, "items");
  if (items == nullptr || !items->IsArray()) return out;
  for (const auto& item : items->GetArray()) out.push_back(Meta(item, "name"));
  return out;
}

void EraseMetadataField(rapidjson::Value& obj, const char* key) {
  auto m = obj.FindMember("metadata");
  if (m != obj.MemberEnd() && m->value.IsObject()) m->value.RemoveMember(key);
}

bool ContainsIgnoreCase(absl::string_view haystack, absl::string_view needle) {
  return absl::StrContains(absl::AsciiStrToLower(haystack), absl::AsciiStrToLower(needle));
}

// "too old resource version: 1 (295)" and "... 7 (9)" compare equal.
std::string NoDigits(const std::string& s) {
  return std::regex_replace(s, std::regex("[0-9]+"), "N");
}

// Splits a raw chunked body into its chunks; *terminated says whether the 0-chunk was seen.
std::vector<std::string> Chunks(const std::string& raw, bool* terminated) {
  std::vector<std::string> out;
  *terminated = false;
  size_t i = 0;
  while (i < raw.size()) {
    size_t eol = raw.find("\r\n", i);
    if (eol == std::string::npos) break;
    size_t n = std::stoul(raw.substr(i, eol - i), nullptr, 16);
    if (n == 0) {
      *terminated = raw.compare(eol, 4, "\r\n\r\n") == 0;
      break;
    }
    out.push_back(raw.substr(eol + 2, n));
    i = eol + 2 + n + 2;
  }
  return out;
}

// A captured Status reply: the JSON, then a line "HTTP 409".
std::pair<std::string, int> CapturedReply(const std::string& text) {
  size_t at = text.rfind("\nHTTP ");
  return {text.substr(0, at + 1), std::stoi(text.substr(at + 6))};
}

std::string PodJson(const std::string& ns, const std::string& name, const std::string& node = "",
                    const std::string& app = "w") {
  std::string spec = node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)");
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"(","namespace":")", ns, R"(","labels":{"app":")", app, R"("}},"spec":{)",
                      spec,
                      R"("containers":[{"name":"main","image":"registry.k8s.io/pause:3.9"}]},)"
                      R"("status":{"phase":"Pending"}})");
}

std::string BindingJson(const std::string& ns, const std::string& name, const std::string& node,
                        const std::string& extra_meta = "") {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")", name,
                      R"(","namespace":")", ns, "\"", extra_meta,
                      R"(},"target":{"apiVersion":"v1","kind":"Node","name":")", node, R"("}})");
}

std::unique_ptr<httplib::SSLClient> MakeClient(const FakeApiServer& server,
                                               const std::string& token = kToken) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server.port());
  c->set_ca_cert_path(server.ca_file().c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_read_timeout(10, 0);
  c->set_connection_timeout(5, 0);
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  return c;
}

// A watch read through httplib in a background thread, line by line.
class WatchStream {
 public:
  WatchStream(const FakeApiServer& server, const std::string& path,
              const std::string& token = kToken)
      : client_(MakeClient(server, token)) {
    client_->set_read_timeout(30, 0);
    thread_ = std::thread([this, path] {
      httplib::Result r = client_->Get(path.c_str(), [this](const char* data, size_t n) {
        std::lock_guard<std::mutex> lock(mu_);
        buffer_.append(data, n);
        for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
          lines_.push_back(buffer_.substr(0, nl));
          buffer_.erase(0, nl + 1);
        }
        cv_.notify_all();
        return !cancel_.load();
      });
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      ok_ = static_cast<bool>(r);
      status_ = r ? r->status : 0;
      body_ = r ? r->body : "";
      cv_.notify_all();
    });
  }

  ~WatchStream() {
    cancel_ = true;
    client_->stop();
    thread_.join();
  }

  // The next line, or "" when none came within the timeout or the stream ended.
  std::string Next(milliseconds timeout = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return !lines_.empty() || done_; });
    if (lines_.empty()) return "";
    std::string line = lines_.front();
    lines_.pop_front();
    return line;
  }

  // The next line whose type is `type` (others are skipped), or "".
  std::string NextOfType(const std::string& type, milliseconds timeout = milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string line = Next(
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (line.empty()) return "";
      if (absl::StrContains(line, absl::StrCat(R"({"type":")", type, "\""))) return line;
    }
    return "";
  }

  // The next event that is not a BOOKMARK.
  std::string NextEvent(milliseconds timeout = milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string line = Next(
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (line.empty() || !absl::StrContains(line, R"({"type":"BOOKMARK")")) return line;
    }
    return "";
  }

  bool WaitDone(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return done_; });
  }
  bool ok() {  // the response completed (terminating chunk seen)
    std::lock_guard<std::mutex> lock(mu_);
    return ok_;
  }
  int status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::unique_ptr<httplib::SSLClient> client_;
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buffer_;
  std::deque<std::string> lines_;
  bool done_ = false;
  bool ok_ = false;
  int status_ = 0;
  std::string body_;
};

struct RawResponse {
  std::string head;  // status line and headers
  std::string body;  // exactly as sent (chunk sizes included)
};

// One HTTP/1.1 request over TLS with OpenSSL directly, reading until the chunked body ends, the
// server closes, or 10 s pass: what a tcpdump of the exchange would show.
RawResponse RawHttps(int port, const std::string& ca_file, const std::string& target,
                     const std::string& token = kToken) {
  RawResponse out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = inet_addr("127.0.0.1");
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  SSL* ssl = SSL_new(ctx);
  std::string data;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1) {
    std::string request =
        absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: 127.0.0.1:", port,
                     "\r\nAccept: application/json\r\nAuthorization: Bearer ", token, "\r\n\r\n");
    SSL_write(ssl, request.data(), static_cast<int>(request.size()));
    char buf[16384];
    while (true) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) break;
      data.append(buf, static_cast<size_t>(n));
      size_t head_end = data.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      std::string body = data.substr(head_end + 4);
      if (body == "0\r\n\r\n" || absl::EndsWith(body, "\r\n0\r\n\r\n")) break;
      if (!ContainsIgnoreCase(data.substr(0, head_end), "chunked") &&
          ContainsIgnoreCase(data.substr(0, head_end), "content-length")) {
        break;  // a short non-streamed reply fits in one read here
      }
    }
  }
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  size_t head_end = data.find("\r\n\r\n");
  if (head_end == std::string::npos) return out;
  out.head = data.substr(0, head_end);
  out.body = data.substr(head_end + 4);
  return out;
}

// The lines of the capture watch-pods.raw, one per chunk.
std::vector<std::string> CapturedWatchLines() {
  bool terminated;
  return Chunks(ReadTestData("apiserver/watch-pods.raw"), &terminated);
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeApiServer::Options options;
    options.bookmark_interval = milliseconds(200);
    auto server = FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::unique_ptr<FakeApiServer> server_;
};

#define ASSERT_OK(expr)                                \
  do {                                                 \
    absl::Status gt_s_ = (expr);                       \
    ASSERT_TRUE(gt_s_.ok()) << #expr << ": " << gt_s_; \
  } while (0)

// ---- lists ------------------------------------------------------------------------------------

TEST_F(FakeApiServerTest, PaginatedNodeListHasTheShapeOfTheRealOne) {
  ASSERT_OK(server_->LoadTestData("apiserver/list-nodes-page1.json"));
  ASSERT_OK(server_->LoadTestData("apiserver/list-nodes-page2.json"));
  rapidjson::Document real1 = ParseOrDie(ReadTestData("apiserver/list-nodes-page1.json"));
  rapidjson::Document real2 = ParseOrDie(ReadTestData("apiserver/list-nodes-page2.json"));
  auto client = MakeClient(*server_);

  httplib::Result r1 = client->Get("/api/v1/nodes?limit=2");
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->get_header_value("Content-Type"), "application/json");
  rapidjson::Document page1 = ParseOrDie(r1->body);
  EXPECT_EQ(Keys(page1), Keys(real1));
  EXPECT_EQ(Str(page1, "kind"), "NodeList");
  EXPECT_EQ(Str(page1, "apiVersion"), "v1");
  EXPECT_EQ(Keys(page1["metadata"]),
            Keys(real1["metadata"]));  // resourceVersion, continue, remainingItemCount
  EXPECT_EQ(page1["metadata"]["remainingItemCount"].GetInt64(), 1);
  EXPECT_EQ(ItemNames(page1), ItemNames(real1));  // etcd key order: cpu-node-c, gpu-node-a
  ASSERT_EQ(page1["items"].Size(), real1["items"].Size());
  for (rapidjson::SizeType i = 0; i < page1["items"].Size(); ++i) {
    // Items carry no kind/apiVersion and come back as loaded, but for resourceVersion.
    EXPECT_EQ(Keys(page1["items"][i]), Keys(real1["items"][i]));
    EraseMetadataField(page1["items"][i], "resourceVersion");
    EraseMetadataField(real1["items"][i], "resourceVersion");
    EXPECT_TRUE(page1["items"][i] == real1["items"][i]) << common::ToJson(page1["items"][i]);
  }
  EXPECT_EQ(Meta(page1, "resourceVersion"), absl::StrCat(server_->resource_version()));

  // The continue token is what kube-apiserver mints: base64url of {"v","rv","start"}.
  auto token = [](const rapidjson::Value& list) {
    std::string decoded;
    EXPECT_TRUE(absl::WebSafeBase64Unescape(Meta(list, "continue"), &decoded));
    return ParseOrDie(decoded);
  };
  rapidjson::Document ours = token(page1);
  rapidjson::Document theirs = token(real1);
  EXPECT_EQ(Keys(ours), Keys(theirs));
  EXPECT_TRUE(ours["start"] == theirs["start"]);  // "gpu-node-a\u0000"
  EXPECT_EQ(ours["rv"].GetInt64(), server_->resource_version());

  httplib::Result r2 =
      client->Get(absl::StrCat("/api/v1/nodes?limit=2&continue=", Meta(page1, "continue")));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
  rapidjson::Document page2 = ParseOrDie(r2->body);
  EXPECT_EQ(Keys(page2), Keys(real2));
  EXPECT_EQ(Keys(page2["metadata"]), Keys(real2["metadata"]));  // the last page: no continue
  EXPECT_EQ(ItemNames(page2), ItemNames(real2));
  EXPECT_EQ(Meta(page2, "resourceVersion"), Meta(page1, "resourceVersion"));

  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes", "limit=2"), 2);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes", "continue="), 1);

  // resourceVersion=0 is served from the watch cache, which ignores limit.
  httplib::Result cached = client->Get("/api/v1/nodes?limit=2&resourceVersion=0");
  ASSERT_TRUE(cached);
  rapidjson::Document all = ParseOrDie(cached->body);
  EXPECT_EQ(ItemNames(all).size(), 3u);
  EXPECT_EQ(Keys(all["metadata"]), std::set<std::string>{"resourceVersion"});

  // A continue token together with a resourceVersion is refused, as by the real validation.
  httplib::Result both = client->Get(
      absl::StrCat("/api/v1/nodes?limit=2&resourceVersion=5&continue=", Meta(page1, "continue")));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 400);
}

TEST_F(FakeApiServerTest, PodAndNamespaceListsMatchTheCaptures) {
  ASSERT_OK(server_->LoadTestData("apiserver/list-pods.json"));
  ASSERT_OK(server_->LoadTestData("apiserver/list-namespaces.json"));
  auto client = MakeClient(*server_);
  for (const auto& [path, file, kind] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"/api/v1/pods", "apiserver/list-pods.json", "PodList"},
           {"/api/v1/namespaces", "apiserver/list-namespaces.json", "NamespaceList"}}) {
    SCOPED_TRACE(path);
    rapidjson::Document real = ParseOrDie(ReadTestData(file));
    httplib::Result r = client->Get(path.c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    rapidjson::Document list = ParseOrDie(r->body);
    EXPECT_EQ(Keys(list), Keys(real));
    EXPECT_EQ(Keys(list["metadata"]), Keys(real["metadata"]));
    EXPECT_EQ(Str(list, "kind"), kind);
    EXPECT_EQ(ItemNames(list), ItemNames(real));
    for (rapidjson::SizeType i = 0; i < list["items"].Size(); ++i) {
      EXPECT_EQ(Keys(list["items"][i]), Keys(real["items"][i]));
    }
  }
  httplib::Result team = client->Get("/api/v1/namespaces/gpu-team/pods");
  ASSERT_TRUE(team);
  EXPECT_EQ(ItemNames(ParseOrDie(team->body)).size(), 8u);
  httplib::Result none = client->Get("/api/v1/namespaces/default/pods");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->body.find(R"("items":[])") != std::string::npos, true) << none->body;

  httplib::Result one = client->Get("/api/v1/namespaces/gpu-team/pods/pod-gpu");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  rapidjson::Document pod = ParseOrDie(one->body);
  EXPECT_EQ(Str(pod, "kind"), "Pod");  // single objects do carry kind/apiVersion
  EXPECT_EQ(Str(pod, "apiVersion"), "v1");

  httplib::Result node = client->Get("/api/v1/nodes/nope");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->status, 404);
  rapidjson::Document missing = ParseOrDie(node->body);
  EXPECT_EQ(Str(missing, "reason"), "NotFound");
  EXPECT_EQ(Str(missing, "message"), R"(nodes "nope" not found)");
  EXPECT_EQ(Str(missing["details"], "kind"), "nodes");
  EXPECT_EQ(missing["code"].GetInt(), 404);
}

TEST_F(FakeApiServerTest, SelectorsFilterListsAndWatches) {
  ASSERT_OK(server_->AddPod(PodJson("team", "p1", "", "a")));
  ASSERT_OK(server_->AddPod(PodJson("team", "p2", "node-1", "b")));
  auto client = MakeClient(*server_);
  auto names = [&](const std::string& query) {
    httplib::Result r = client->Get(absl::StrCat("/api/v1/pods?", query));
    return r ? ItemNames(ParseOrDie(r->body)) : std::vector<std::string>{"<transport error>"};
  };
  EXPECT_EQ(names("labelSelector=app%3Da"), std::vector<std::string>{"p1"});
  EXPECT_EQ(names("labelSelector=app%20in%20(a,b)"), (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(names("labelSelector=app!%3Da"), std::vector<std::string>{"p2"});
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3D"), std::vector<std::string>{"p1"});
  EXPECT_EQ(names("fieldSelector=spec.nodeName!%3D,status.phase!%3DSucceeded"),
            std::vector<std::string>{"p2"});
  httplib::Result bad = client->Get("/api/v1/pods?fieldSelector=spec.foo%3Dx");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Str(ParseOrDie(bad->body), "message"), "field label not supported: spec.foo");

  // Under a selector a pod that starts matching is ADDED, one that stops matching is DELETED.
  WatchStream w(*server_, absl::StrCat("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dnode-1"
                                       "&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "team", "p1", R"({"spec":{"nodeName":"node-1"}})"));
  std::string added = w.NextEvent();
  EXPECT_TRUE(absl::StartsWith(added, R"({"type":"ADDED")")) << added;
  EXPECT_EQ(Meta(ParseOrDie(added)["object"], "name"), "p1");
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "team", "p2", R"({"spec":{"nodeName":"node-2"}})"));
  std::string gone = w.NextEvent();
  EXPECT_TRUE(absl::StartsWith(gone, R"({"type":"DELETED")")) << gone;
  rapidjson::Document gone_doc = ParseOrDie(gone);
  EXPECT_EQ(Meta(gone_doc["object"], "name"), "p2");
  EXPECT_EQ(gone_doc["object"]["spec"]["nodeName"].GetString(),
            std::string("node-1"));  // old content
  EXPECT_EQ(Meta(gone_doc["object"], "resourceVersion"),
            absl::StrCat(server_->resource_version()));  // new resourceVersion
}

// ---- watches ----------------------------------------------------------------------------------

TEST_F(FakeApiServerTest, WatchReplaysThenStreamsLiveEventsBookmarksAndDeletes) {
  ASSERT_OK(server_->AddPod(PodJson("watchns", "a")));
  int64_t from = server_->resource_version();
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "watchns", "a", R"({"metadata":{"labels":{"x":"1"}}})"));
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/watchns/pods?watch=1&"
                                       "allowWatchBookmarks=true&resourceVersion=",
                                       from));
  std::string replayed = w.NextEvent();
  rapidjson::Document first = ParseOrDie(replayed);
  EXPECT_EQ(Str(first, "type"), "MODIFIED");
  EXPECT_EQ(Meta(first["object"], "resourceVersion"), absl::StrCat(from + 1));
  EXPECT_EQ(first["object"]["metadata"]["labels"]["x"].GetString(), std::string("1"));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));

  ASSERT_OK(server_->AddPod(PodJson("elsewhere", "c")));  // another namespace: not seen
  ASSERT_OK(server_->AddPod(PodJson("watchns", "b")));
  rapidjson::Document added = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(added, "type"), "ADDED");
  EXPECT_EQ(Meta(added["object"], "name"), "b");
  EXPECT_EQ(Str(added["object"], "kind"), "Pod");  // watch objects carry kind/apiVersion

  ASSERT_OK(server_->DeletePod("watchns", "a"));
  rapidjson::Document deleted = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(deleted, "type"), "DELETED");
  EXPECT_EQ(Meta(deleted["object"], "name"), "a");
  EXPECT_EQ(Meta(deleted["object"], "resourceVersion"), absl::StrCat(server_->resource_version()));

  // The bookmark is byte for byte the captured one, but for its resourceVersion.
  std::string bookmark = w.NextOfType("BOOKMARK", milliseconds(3000));
  ASSERT_FALSE(bookmark.empty());
  std::string captured;
  for (const std::string& line : CapturedWatchLines()) {
    if (absl::StrContains(line, "\"BOOKMARK\"")) captured = line;
  }
  ASSERT_FALSE(captured.empty());
  EXPECT_EQ(
      bookmark + "\n",
      absl::StrReplaceAll(
          captured, {{R"("resourceVersion":"306")",
                      absl::StrCat(R"("resourceVersion":")", server_->resource_version(), "\"")}}));

  // Without resourceVersion the watch starts with the current state as ADDED events.
  WatchStream fresh(*server_, "/api/v1/namespaces/watchns/pods?watch=true");
  rapidjson::Document initial = ParseOrDie(fresh.NextEvent());
  EXPECT_EQ(Str(initial, "type"), "ADDED");
  EXPECT_EQ(Meta(initial["object"], "name"), "b");
}

TEST_F(FakeApiServerTest, WatchBytesHaveTheShapeOfTheCapture) {
  std::vector<std::string> captured = CapturedWatchLines();
  ASSERT_GE(captured.size(), 4u);
  rapidjson::Document captured_added = ParseOrDie(captured[0]);
  ASSERT_EQ(Str(captured_added, "type"), "ADDED");
  int64_t from = server_->resource_version();
  // The captured pod, loaded as it was streamed.
  ASSERT_OK(server_->AddPod(common::ToJson(captured_added["object"])));
  ASSERT_OK(server_->MergePatch(Resource::kPods, "watchns", "watch-probe",
                                R"({"metadata":{"labels":{"step":"2"}}})"));
  ASSERT_OK(server_->DeletePod("watchns", "watch-probe"));

  RawResponse raw = RawHttps(server_->port(), server_->ca_file(),
                             absl::StrCat("/api/v1/pods?watch=1&allowWatchBookmarks=true&"
                                          "resourceVersion=",
                                          from, "&timeoutSeconds=1"));
  EXPECT_TRUE(absl::StartsWith(raw.head, "HTTP/1.1 200 OK")) << raw.head;
  std::string real_head = ReadTestData("apiserver/watch-pods.headers");
  for (const char* header : {"Content-Type: application/json", "Transfer-Encoding: chunked",
                             "Cache-Control: no-cache, private"}) {
    EXPECT_TRUE(ContainsIgnoreCase(real_head, header)) << header;
    EXPECT_TRUE(ContainsIgnoreCase(raw.head, header)) << header << " in\n" << raw.head;
  }
  EXPECT_TRUE(ContainsIgnoreCase(raw.head, "Audit-Id: "));

  bool terminated = false;
  std::vector<std::string> chunks = Chunks(raw.body, &terminated);
  EXPECT_TRUE(terminated) << "timeoutSeconds ends the body with the 0-chunk";
  ASSERT_GE(chunks.size(), 3u);
  std::vector<std::string> types;
  for (const std::string& chunk : chunks) {
    // As in the capture: one event per chunk, one line per event.
    EXPECT_EQ(chunk.find('\n'), chunk.size() - 1) << chunk;
    rapidjson::Document event = ParseOrDie(chunk);
    EXPECT_EQ(Keys(event), (std::set<std::string>{"type", "object"}));
    types.push_back(Str(event, "type"));
  }
  for (const std::string& chunk : captured) EXPECT_EQ(chunk.find('\n'), chunk.size() - 1);
  EXPECT_EQ(std::vector<std::string>(types.begin(), types.begin() + 3),
            (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));

  // The ADDED line is the captured line, byte for byte, but for the resourceVersion.
  std::string expected = absl::StrReplaceAll(
      captured[0],
      {{R"("resourceVersion":"303")", absl::StrCat(R"("resourceVersion":")", from + 1, "\"")}});
  EXPECT_EQ(chunks[0], expected);
}

TEST_F(FakeApiServerTest, CompactedResourceVersionGets410LikeTheRealOne) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  int64_t old = server_->resource_version();
  ASSERT_OK(server_->AddPod(PodJson("ns", "b")));
  auto client = MakeClient(*server_);
  httplib::Result page = client->Get("/api/v1/pods?limit=1");
  ASSERT_TRUE(page);
  std::string cont = Meta(ParseOrDie(page->body), "continue");
  ASSERT_FALSE(cont.empty());
  ASSERT_OK(server_->AddPod(PodJson("ns", "c")));
  server_->Compact();

  RawResponse raw = RawHttps(server_->port(), server_->ca_file(),
                             absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", old));
  EXPECT_TRUE(absl::StartsWith(raw.head, "HTTP/1.1 200 OK")) << raw.head;
  bool terminated = false;
  std::vector<std::string> chunks = Chunks(raw.body, &terminated);
  bool real_terminated = false;
  std::vector<std::string> real =
      Chunks(ReadTestData("apiserver/watch-too-old.raw"), &real_terminated);
  EXPECT_TRUE(terminated);
  EXPECT_TRUE(real_terminated);
  ASSERT_EQ(chunks.size(), 1u);
  ASSERT_EQ(real.size(), 1u);
  EXPECT_EQ(NoDigits(chunks[0]), NoDigits(real[0]));
  EXPECT_TRUE(absl::StrContains(chunks[0], absl::StrCat("too old resource version: ", old, " (",
                                                        server_->resource_version(), ")")));

  // From the compacted resourceVersion itself the watch is fine.
  WatchStream ok(
      *server_, absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  ASSERT_OK(server_->AddPod(PodJson("ns", "d")));
  EXPECT_TRUE(absl::StartsWith(ok.NextEvent(), R"({"type":"ADDED")"));

  // A continue token minted before the compaction has expired too.
  httplib::Result expired = client->Get(absl::StrCat("/api/v1/pods?limit=1&continue=", cont));
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->status, 410);
  rapidjson::Document status = ParseOrDie(expired->body);
  EXPECT_EQ(Str(status, "reason"), "Expired");
  EXPECT_FALSE(Meta(status, "continue").empty());  // the inconsistent-continuation token
}

TEST_F(FakeApiServerTest, WatchTimeoutEndsTheBodyCleanly) {
  auto start = std::chrono::steady_clock::now();
  WatchStream w(*server_, "/api/v1/nodes?watch=1&timeoutSeconds=1");
  ASSERT_TRUE(w.WaitDone(milliseconds(4000)));
  EXPECT_TRUE(w.ok());
  EXPECT_EQ(w.status(), 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(900));
}

TEST_F(FakeApiServerTest, DropWatchesEndsEveryStream) {
  {
    WatchStream pods(*server_, "/api/v1/pods?watch=1");
    WatchStream nodes(*server_, "/api/v1/nodes?watch=true&allowWatchBookmarks=true");
    ASSERT_TRUE(server_->WaitForWatches(2, seconds(5)));
    server_->DropWatches();
    ASSERT_TRUE(pods.WaitDone(milliseconds(3000)));
    ASSERT_TRUE(nodes.WaitDone(milliseconds(3000)));
    EXPECT_FALSE(pods.ok()) << "dropped mid-stream: no terminating chunk";
    EXPECT_FALSE(nodes.ok());
  }
  for (int i = 0; i < 100 && server_->OpenWatches() > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server_->OpenWatches(), 0);

  WatchStream clean(*server_, "/api/v1/pods?watch=1");
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  server_->DropWatches(/*graceful=*/true);
  ASSERT_TRUE(clean.WaitDone(milliseconds(3000)));
  EXPECT_TRUE(clean.ok());
  EXPECT_EQ(clean.status(), 200);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/pods", "watch=1"), 2);
}

TEST_F(FakeApiServerTest, AClientThatHangsUpFreesItsWatch) {
  {
    WatchStream w(*server_, "/api/v1/pods?watch=1");
    ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  }
  for (int i = 0; i < 100 && server_->OpenWatches() > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server_->OpenWatches(), 0);
}

// ---- writes -----------------------------------------------------------------------------------

TEST_F(FakeApiServerTest, BindingCreatesThenConflictsLikeTheRealOne) {
  ASSERT_OK(server_->AddPod(PodJson("watchns", "bind-probe")));
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/watchns/pods/bind-probe/binding";
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/watchns/pods?watch=1&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));

  httplib::Result created =
      client->Post(path,
                   BindingJson("watchns", "bind-probe", "gpu-node-b",
                               R"(,"annotations":{"gpu-tenancy.io/tenant":"labs"})"),
                   "application/json");
  ASSERT_TRUE(created);
  auto [real_created, real_created_code] =
      CapturedReply(ReadTestData("apiserver/binding-created.txt"));
  EXPECT_EQ(created->status, real_created_code);
  EXPECT_TRUE(ParseOrDie(created->body) == ParseOrDie(real_created)) << created->body;

  rapidjson::Document pod =
      ParseOrDie(server_->GetObject(Resource::kPods, "watchns", "bind-probe"));
  EXPECT_EQ(std::string(pod["spec"]["nodeName"].GetString()), "gpu-node-b");
  EXPECT_EQ(std::string(pod["metadata"]["annotations"]["gpu-tenancy.io/tenant"].GetString()),
            "labs");
  EXPECT_EQ(std::string(pod["metadata"]["labels"]["app"].GetString()), "w");
  bool scheduled = false;
  for (const auto& c : pod["status"]["conditions"].GetArray()) {
    scheduled |= Str(c, "type") == "PodScheduled" && Str(c, "status") == "True";
  }
  EXPECT_TRUE(scheduled);
  rapidjson::Document modified = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(modified, "type"), "MODIFIED");
  EXPECT_EQ(std::string(modified["object"]["spec"]["nodeName"].GetString()), "gpu-node-b");

  httplib::Result again =
      client->Post(path, BindingJson("watchns", "bind-probe", "gpu-node-a"), "application/json");
  ASSERT_TRUE(again);
  auto [real_conflict, real_conflict_code] =
      CapturedReply(ReadTestData("apiserver/binding-conflict.txt"));
  EXPECT_EQ(again->status, real_conflict_code);
  EXPECT_TRUE(ParseOrDie(again->body) == ParseOrDie(real_conflict)) << again->body;
  EXPECT_EQ(server_->CountRequests("POST", path), 2);

  httplib::Result missing =
      client->Post("/api/v1/namespaces/watchns/pods/ghost/binding",
                   BindingJson("watchns", "ghost", "gpu-node-a"), "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Str(ParseOrDie(missing->body), "reason"), "NotFound");

  ASSERT_OK(server_->AddPod(PodJson("watchns", "uid-probe")));
  httplib::Result wrong_uid =
      client->Post("/api/v1/namespaces/watchns/pods/uid-probe/binding",
                   BindingJson("watchns", "uid-probe", "gpu-node-a", R"(,"uid":"not-the-uid")"),
                   "application/json");
  ASSERT_TRUE(wrong_uid);
  EXPECT_EQ(wrong_uid->status, 409);
  EXPECT_TRUE(absl::StrContains(Str(ParseOrDie(wrong_uid->body), "message"),
                                "Precondition failed: UID in precondition: not-the-uid"));
}

TEST_F(FakeApiServerTest, BindingLatencyHoldsNoLock) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "slow")));
  server_->SetLatency(milliseconds(600));
  std::chrono::steady_clock::duration bind_took{};
  int bind_status = 0;
  std::thread binder([&] {
    auto client = MakeClient(*server_);
    auto start = std::chrono::steady_clock::now();
    httplib::Result r = client->Post("/api/v1/namespaces/ns/pods/slow/binding",
                                     BindingJson("ns", "slow", "n1"), "application/json");
    bind_took = std::chrono::steady_clock::now() - start;
    bind_status = r ? r->status : 0;
  });
  std::this_thread::sleep_for(milliseconds(150));
  auto client = MakeClient(*server_);
  auto start = std::chrono::steady_clock::now();
  httplib::Result get = client->Get("/api/v1/namespaces/ns/pods/slow");
  auto get_took = std::chrono::steady_clock::now() - start;
  binder.join();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_LT(get_took, milliseconds(400));
  EXPECT_EQ(bind_status, 201);
  EXPECT_GE(bind_took, milliseconds(550));
}

TEST_F(FakeApiServerTest, InjectedFailuresComeFirstThenNormalService) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "p")));
  server_->InjectFailure("POST", "/api/v1/namespaces/ns/pods/p/binding", 503, 1);
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/ns/pods/p/binding";
  httplib::Result first = client->Post(path, BindingJson("ns", "p", "n1"), "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 503);
  EXPECT_EQ(first->get_header_value("Retry-After"), "1");
  EXPECT_EQ(Str(ParseOrDie(first->body), "reason"), "ServiceUnavailable");
  httplib::Result second = client->Post(path, BindingJson("ns", "p", "n1"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201);
}

TEST_F(FakeApiServerTest, MergePatchMatchesTheRealReply) {
  rapidjson::Document real = ParseOrDie(ReadTestData("apiserver/patch-pod-merge.json"));
  // The pod as it was before the captured patch: no annotations, no managedFields from curl.
  rapidjson::Document before;
  before.CopyFrom(real, before.GetAllocator());
  before["metadata"].RemoveMember("annotations");
  rapidjson::Value& managed = before["metadata"]["managedFields"];
  for (rapidjson::SizeType i = 0; i < managed.Size(); ++i) {
    if (Str(managed[i], "manager") == "curl") {
      managed.Erase(managed.Begin() + i);
      break;
    }
  }
  ASSERT_OK(server_->AddPod(common::ToJson(before)));
  int64_t rv = server_->resource_version();
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/watchns/pods/bind-probe";
  const std::string patch = R"({"metadata":{"annotations":{"gpu-tenancy.io/tenant":"labs"}}})";

  httplib::Result r = client->Patch(path, patch, "application/merge-patch+json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  rapidjson::Document patched = ParseOrDie(r->body);
  EXPECT_EQ(Meta(patched, "resourceVersion"), absl::StrCat(rv + 1));
  EXPECT_EQ(Keys(patched), Keys(real));
  EXPECT_EQ(Keys(patched["metadata"]), Keys(real["metadata"]));
  for (rapidjson::Document* d : {&patched, &real}) {
    EraseMetadataField(*d, "resourceVersion");
    EraseMetadataField(*d, "managedFields");  // server-side field tracking is not emulated
  }
  EXPECT_TRUE(patched == real) << r->body;

  // The same patch again changes nothing: same resourceVersion, as kube-apiserver.
  httplib::Result noop = client->Patch(path, patch, "application/merge-patch+json");
  ASSERT_TRUE(noop);
  EXPECT_EQ(Meta(ParseOrDie(noop->body), "resourceVersion"), absl::StrCat(rv + 1));
  EXPECT_EQ(server_->resource_version(), rv + 1);

  httplib::Result strategic = client->Patch(path, R"({"metadata":{"labels":{"tier":"gpu"}}})",
                                            "application/strategic-merge-patch+json");
  ASSERT_TRUE(strategic);
  rapidjson::Document s = ParseOrDie(strategic->body);
  EXPECT_EQ(std::string(s["metadata"]["labels"]["app"].GetString()), "w");
  EXPECT_EQ(std::string(s["metadata"]["labels"]["tier"].GetString()), "gpu");

  httplib::Result json_patch =
      client->Patch(path, R"([{"op":"add","path":"/metadata/labels/extra","value":"1"}])",
                    "application/json-patch+json");
  ASSERT_TRUE(json_patch);
  EXPECT_EQ(json_patch->status, 200);
  EXPECT_EQ(std::string(ParseOrDie(json_patch->body)["metadata"]["labels"]["extra"].GetString()),
            "1");

  httplib::Result stale =
      client->Patch(path, R"({"metadata":{"resourceVersion":"1","labels":{"z":"1"}}})",
                    "application/merge-patch+json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(Str(ParseOrDie(stale->body), "reason"), "Conflict");

  httplib::Result apply = client->Patch(path, "{}", "application/apply-patch+yaml");
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->status, 415);

  httplib::Result missing =
      client->Patch("/api/v1/namespaces/watchns/pods/ghost", patch, "application/merge-patch+json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(FakeApiServerTest, CreateUpdateAndDeleteThroughTheApi) {
  auto client = MakeClient(*server_);
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/ns/pods?watch=1&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  const std::string pods = "/api/v1/namespaces/ns/pods";
  std::string pod_json = PodJson("ns", "p", "node-1");
  absl::StrReplaceAll({{R"(,"status":{"phase":"Pending"})", ""}}, &pod_json);
  httplib::Result created = client->Post(pods, pod_json, "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  rapidjson::Document pod = ParseOrDie(created->body);
  EXPECT_EQ(std::string(pod["status"]["phase"].GetString()), "Pending");  // defaulted
  EXPECT_FALSE(Meta(pod, "uid").empty());

  httplib::Result second = client->Post(pods, PodJson("ns", "q"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201);
  pod["metadata"]["name"].SetString("r");
  httplib::Result rv_set = client->Post(pods, common::ToJson(pod), "application/json");
  ASSERT_TRUE(rv_set);
  EXPECT_EQ(rv_set->status, 500);  // "resourceVersion should not be set on objects to be created"

  // Pods allow unconditional updates: a PUT without resourceVersion goes through.
  pod["metadata"]["name"].SetString("p");
  pod["metadata"].RemoveMember("resourceVersion");
  pod["metadata"]["labels"]["app"].SetString("changed");
  httplib::Result put = client->Put(pods + "/p", common::ToJson(pod), "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200);
  httplib::Result wrong_name =
      client->Put(pods + "/other", common::ToJson(pod), "application/json");
  ASSERT_TRUE(wrong_name);
  EXPECT_EQ(wrong_name->status, 400);

  // A bound pod goes MODIFIED (deletionTimestamp) then DELETED, as in watch-pods.raw.
  httplib::Result deleted = client->Delete(pods + "/p");
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  httplib::Result again = client->Delete(pods + "/p");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);

  std::vector<std::string> seen;
  for (int i = 0; i < 5; ++i) {
    rapidjson::Document e = ParseOrDie(w.NextEvent());
    seen.push_back(absl::StrCat(Str(e, "type"), " ", Meta(e["object"], "name"),
                                Meta(e["object"], "deletionTimestamp").empty() ? "" : " deleting"));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED p", "ADDED q", "MODIFIED p",
                                            "MODIFIED p deleting", "DELETED p deleting"}));

  httplib::Result unknown = client->Get("/api/v1/services");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  httplib::Result collection = client->Delete(pods);
  ASSERT_TRUE(collection);
  EXPECT_EQ(collection->status, 405);
}

TEST_F(FakeApiServerTest, LeasesUseOptimisticConcurrency) {
  auto client = MakeClient(*server_);
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  const std::string lease =
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"gpu-tenancy",)"
      R"("namespace":"kube-system"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}})";
  httplib::Result created = client->Post(leases, lease, "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  rapidjson::Document stored = ParseOrDie(created->body);
  EXPECT_EQ(Str(stored, "kind"), "Lease");
  EXPECT_EQ(Str(stored, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_FALSE(Meta(stored, "uid").empty());
  EXPECT_FALSE(Meta(stored, "creationTimestamp").empty());
  std::string rv1 = Meta(stored, "resourceVersion");

  httplib::Result dup = client->Post(leases, lease, "application/json");
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->status, 409);
  rapidjson::Document exists = ParseOrDie(dup->body);
  EXPECT_EQ(Str(exists, "reason"), "AlreadyExists");
  EXPECT_EQ(Str(exists, "message"), R"(leases.coordination.k8s.io "gpu-tenancy" already exists)");
  EXPECT_EQ(Str(exists["details"], "group"), "coordination.k8s.io");
  EXPECT_EQ(Str(exists["details"], "kind"), "leases");

  httplib::Result got = client->Get(leases + "/gpu-tenancy");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);

  stored["spec"]["holderIdentity"].SetString("b");
  httplib::Result renewed =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(renewed);
  EXPECT_EQ(renewed->status, 200);
  rapidjson::Document after = ParseOrDie(renewed->body);
  EXPECT_EQ(std::string(after["spec"]["holderIdentity"].GetString()), "b");
  EXPECT_NE(Meta(after, "resourceVersion"), rv1);
  EXPECT_EQ(Meta(after, "uid"), Meta(stored, "uid"));

  stored["spec"]["holderIdentity"].SetString("c");  // still carries rv1
  httplib::Result stale =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  rapidjson::Document conflict = ParseOrDie(stale->body);
  EXPECT_EQ(Str(conflict, "reason"), "Conflict");
  EXPECT_EQ(Str(conflict, "message"),
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"gpu-tenancy\": the "
            "object has been modified; please apply your changes to the latest version and try "
            "again");

  stored["metadata"].RemoveMember("resourceVersion");
  httplib::Result unconditional =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(unconditional);
  EXPECT_EQ(unconditional->status, 422);  // Lease does not allow unconditional updates

  httplib::Result missing = client->Get(leases + "/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Str(ParseOrDie(missing->body), "message"),
            R"(leases.coordination.k8s.io "other" not found)");

  httplib::Result list = client->Get(leases);
  ASSERT_TRUE(list);
  rapidjson::Document l = ParseOrDie(list->body);
  EXPECT_EQ(Str(l, "kind"), "LeaseList");
  EXPECT_EQ(Str(l, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(ItemNames(l), std::vector<std::string>{"gpu-tenancy"});
}

TEST_F(FakeApiServerTest, PostedEventsAreRecorded) {
  auto client = MakeClient(*server_);
  httplib::Result core = client->Post(
      "/api/v1/namespaces/gpu-team/events",
      R"({"metadata":{"name":"pod-gpu.1"},"involvedObject":{"kind":"Pod","namespace":"gpu-team",)"
      R"("name":"pod-gpu"},"reason":"Scheduled","message":"assigned","type":"Normal"})",
      "application/json");
  ASSERT_TRUE(core);
  EXPECT_EQ(core->status, 201);
  httplib::Result modern = client->Post(
      "/apis/events.k8s.io/v1/namespaces/gpu-team/events",
      R"({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"generateName":"pod-gpu."},)"
      R"("regarding":{"kind":"Pod","namespace":"gpu-team","name":"pod-gpu"},"reason":"GpuAssigned",)"
      R"("note":"mig-1g.10gb","type":"Normal","action":"Binding","reportingController":"gpu-tenancy",)"
      R"("reportingInstance":"x","eventTime":"2026-11-30T16:40:55.000000Z"})",
      "application/json");
  ASSERT_TRUE(modern);
  EXPECT_EQ(modern->status, 201);
  EXPECT_TRUE(absl::StartsWith(Meta(ParseOrDie(modern->body), "name"), "pod-gpu."));
  httplib::Result wrong_ns =
      client->Post("/api/v1/namespaces/gpu-team/events",
                   R"({"metadata":{"name":"x","namespace":"other"}})", "application/json");
  ASSERT_TRUE(wrong_ns);
  EXPECT_EQ(wrong_ns->status, 400);

  std::vector<std::string> events = server_->Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(Str(ParseOrDie(events[0]), "reason"), "Scheduled");
  EXPECT_EQ(Str(ParseOrDie(events[1]), "reason"), "GpuAssigned");
  EXPECT_EQ(Str(ParseOrDie(events[1]), "apiVersion"), "events.k8s.io/v1");
}

// ---- auth and life ----------------------------------------------------------------------------

TEST_F(FakeApiServerTest, RejectsWrongTokensAndFollowsRotation) {
  auto status_with = [&](const std::string& token) {
    httplib::Result r = MakeClient(*server_, token)->Get("/api/v1/nodes");
    return r ? r->status : 0;
  };
  httplib::Result denied = MakeClient(*server_, "wrong")->Get("/api/v1/nodes");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  rapidjson::Document status = ParseOrDie(denied->body);
  EXPECT_EQ(Str(status, "kind"), "Status");
  EXPECT_EQ(Str(status, "status"), "Failure");
  EXPECT_EQ(Str(status, "reason"), "Unauthorized");
  EXPECT_EQ(status["code"].GetInt(), 401);
  EXPECT_EQ(status_with(""), 401);
  EXPECT_EQ(status_with(kToken), 200);

  server_->AcceptTokens({"old", "new"});
  EXPECT_EQ(status_with("old"), 200);
  EXPECT_EQ(status_with("new"), 200);
  server_->AcceptTokens({"new"});
  EXPECT_EQ(status_with("old"), 401);
  EXPECT_EQ(status_with("new"), 200);

  WatchStream watch(*server_, "/api/v1/pods?watch=1", "old");  // no stream without auth
  ASSERT_TRUE(watch.WaitDone(milliseconds(3000)));
  EXPECT_EQ(watch.status(), 401);

  std::vector<RequestRecord> log = server_->Requests();
  ASSERT_GE(log.size(), 8u);
  EXPECT_EQ(log[0].token, "wrong");
  EXPECT_EQ(log[0].status, 401);
  EXPECT_EQ(log[0].method, "GET");
  EXPECT_EQ(log[0].target, "/api/v1/nodes");
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes"), 7);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/pods", "watch=1"), 1);
  server_->ClearRequests();
  EXPECT_EQ(server_->CountRequests("", "/"), 0);
}

TEST_F(FakeApiServerTest, RestartKeepsThePortAndOptionallyTheState) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  int port = server_->port();
  auto client = MakeClient(*server_);
  httplib::Result before = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 200);

  auto start = std::chrono::steady_clock::now();
  server_->Stop();  // the client's kept-alive connection must not hold it up
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_FALSE(server_->running());
  httplib::Result down = MakeClient(*server_)->Get("/api/v1/namespaces/ns/pods/a");
  EXPECT_FALSE(down);

  ASSERT_OK(server_->Restart());
  EXPECT_EQ(server_->port(), port);
  httplib::Result kept = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200);

  int64_t rv = server_->resource_version();
  ASSERT_OK(server_->Restart(/*keep_state=*/false));
  EXPECT_EQ(server_->port(), port);
  httplib::Result gone = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  WatchStream w(*server_, absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", rv - 1));
  EXPECT_TRUE(absl::StrContains(w.NextEvent(), R"("reason":"Expired","code":410)"));
}

TEST_F(FakeApiServerTest, DeleteSilentlyLeavesWatchersUnaware) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  ASSERT_OK(server_->AddPod(PodJson("ns", "b")));
  WatchStream w(*server_,
                absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  EXPECT_TRUE(server_->DeleteSilently(Resource::kPods, "ns", "a"));
  EXPECT_FALSE(server_->DeleteSilently(Resource::kPods, "ns", "a"));
  ASSERT_OK(server_->DeletePod("ns", "b"));
  rapidjson::Document next = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Meta(next["object"], "name"), "b");  // nothing about "a"
  EXPECT_TRUE(server_->GetObject(Resource::kPods, "ns", "a").empty());
  httplib::Result list = MakeClient(*server_)->Get("/api/v1/pods");
  ASSERT_TRUE(list);
  EXPECT_TRUE(ItemNames(ParseOrDie(list->body)).empty());
}

TEST(FakeApiServerClientCertTest, AClientCertificateAuthenticatesWithoutAToken) {
  FakeApiServer::Options options;
  options.require_client_cert = true;
  options.tokens = {"only-this"};
  auto started = FakeApiServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  FakeApiServer& server = **started;
  httplib::SSLClient with_cert("127.0.0.1", server.port(), server.client_cert_file(),
                               server.client_key_file());
  with_cert.set_ca_cert_path(server.ca_file().c_str());
  with_cert.enable_server_certificate_verification(true);
  httplib::Result r = with_cert.Get("/api/v1/nodes");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::vector<RequestRecord> log = server.Requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].client_cn, "client");
  EXPECT_EQ(log[0].token, "");

  auto without_cert = MakeClient(server, "only-this");
  EXPECT_FALSE(without_cert->Get("/api/v1/nodes"));  // the TLS handshake fails
}

}  // namespace
}  // namespace testing_support
