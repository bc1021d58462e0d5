// The payloads captured from a real kube-apiserver v1.28 (test/testdata/apiserver/, kept
// unchanged; see docs/wire/README.md) replayed byte for byte by a small HTTPS server: the list
// pages with their real continue token, the pod list, the namespace list, the chunked watch
// stream with its bookmarks and the 410 of a compacted watch. The client must parse them
// unchanged.
#include <httplib.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kube/reflector.h"
#include "test/kube/live_test_util.h"
#include "wire/k8s_codec.h"

namespace kube_test {
namespace {

using testing_support::ReadTestData;

// The chunks of an HTTP/1.1 chunked body, as sent.
std::vector<std::string> Dechunk(const std::string& raw) {
  std::vector<std::string> chunks;
  size_t at = 0;
  while (at < raw.size()) {
    size_t eol = raw.find("\r\n", at);
    if (eol == std::string::npos) break;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(raw.substr(at, eol - at), &size) || size == 0) break;
    chunks.push_back(raw.substr(eol + 2, size));
    at = eol + 2 + size + 2;
  }
  return chunks;
}

std::string ContinueOf(const std::string& list_json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(list_json);
  if (!doc.ok()) return "";
  const common::JsonValue* meta = common::FindMember(*doc, "metadata");
  return meta ? std::string(common::StringOr(*meta, "continue")) : "";
}

// Serves the captures. Pod watches replay, in turn: the 410 of a compacted resourceVersion,
// then the captured event stream; every other watch stays open (idle) until it is stopped.
class ReplayServer {
 public:
  ReplayServer() {
    EXPECT_TRUE(testing_support::MakeTestCerts(certs_.path()).ok());
    server_ = std::make_unique<httplib::SSLServer>(certs_.File("tls.crt").c_str(),
                                                   certs_.File("tls.key").c_str());
    server_->new_task_queue = [] { return new httplib::ThreadPool(16); };
    nodes_page1_ = ReadTestData("apiserver/list-nodes-page1.json");
    nodes_page2_ = ReadTestData("apiserver/list-nodes-page2.json");
    pods_ = ReadTestData("apiserver/list-pods.json");
    namespaces_ = ReadTestData("apiserver/list-namespaces.json");
    too_old_ = Dechunk(ReadTestData("apiserver/watch-too-old.raw"));
    events_ = Dechunk(ReadTestData("apiserver/watch-pods.raw"));
    EXPECT_EQ(too_old_.size(), 1u);
    EXPECT_GE(events_.size(), 6u);
    server_->Get(".*",
                 [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(1ms);
  }
  ~ReplayServer() {
    stop_.store(true);
    server_->stop();
    thread_.join();
  }

  kube::ApiConfig Config() const {
    kube::ApiConfig c;
    c.host = "127.0.0.1";
    c.port = port_;
    c.ca_pem = ReadFile(certs_.File("ca.crt"));
    c.token = "replay";
    return c;
  }
  std::vector<std::string> Targets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }
  int Count(absl::string_view path, absl::string_view query) const {
    int n = 0;
    for (const std::string& t : Targets()) {
      n += absl::StartsWith(t, absl::StrCat(path, "?")) && absl::StrContains(t, query);
    }
    return n;
  }
  bool bad_request() const { return bad_request_.load(); }

 private:
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      targets_.push_back(req.target);
    }
    if (req.get_header_value("Authorization") != "Bearer replay") bad_request_.store(true);
    const bool watch = req.get_param_value("watch") == "1";
    if (watch) {
      std::vector<std::string> script;
      if (req.path == "/api/v1/pods") {
        int n = pod_watches_.fetch_add(1);
        if (n == 0) script = too_old_;
        if (n == 1) script = events_;
      }
      res.set_chunked_content_provider(
          "application/json",
          [this, script, sent = size_t{0}](size_t, httplib::DataSink& sink) mutable {
            if (sent < script.size()) {
              const std::string& chunk = script[sent++];
              return sink.write(chunk.data(), chunk.size());
            }
            if (!script.empty()) {  // the capture ends the body here
              sink.done();
              return true;
            }
            for (int i = 0; i < 100 && !stop_.load(); ++i) std::this_thread::sleep_for(10ms);
            sink.done();  // an idle watch that timed out
            return true;
          });
      return;
    }
    if (req.path == "/apis/resource.k8s.io") {
      // v1.28 serves resource.k8s.io/v1alpha2 only when enabled, and it was not: no DRA.
      res.status = 404;
      res.set_content(
          R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
          R"("message":"the server could not find the requested resource","reason":"NotFound",)"
          R"("details":{},"code":404})",
          "application/json");
      return;
    }
    std::string body;
    if (req.path == "/api/v1/nodes") {
      if (req.get_param_value("limit") != "2") bad_request_.store(true);
      body = req.has_param("continue")
                 ? (req.get_param_value("continue") == ContinueOf(nodes_page1_) ? nodes_page2_ : "")
                 : nodes_page1_;
    } else if (req.path == "/api/v1/pods") {
      body = pods_;
    } else if (req.path == "/api/v1/namespaces") {
      body = namespaces_;
    } else if (req.path == "/apis/policy/v1/poddisruptionbudgets") {
      // Not part of the capture (the cluster had no budgets): the empty list it would serve.
      body = R"({"kind":"PodDisruptionBudgetList","apiVersion":"policy/v1",)"
             R"("metadata":{"resourceVersion":"1"},"items":[]})";
    }
    if (body.empty()) {
      bad_request_.store(true);
      res.status = 400;
      return;
    }
    res.set_content(body, "application/json");
  }

  testing_support::TempDir certs_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::string nodes_page1_, nodes_page2_, pods_, namespaces_;
  std::vector<std::string> too_old_, events_;
  std::atomic<int> pod_watches_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> bad_request_{false};
  mutable std::mutex mu_;
  std::vector<std::string> targets_;
};

kube::ReflectorOptions ReplayOptions() {
  kube::ReflectorOptions o;
  o.page_size = 2;  // what the capture of the node pages asked for
  o.resync = 60s;
  o.backoff_initial = 20ms;
  o.backoff_max = 100ms;
  o.read_timeout_seconds = 10;
  return o;
}

TEST(FixtureReplayTest, ReflectorReadsTheCapturedListAndWatchUnchanged) {
  ReplayServer server;
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> client =
      kube::ApiClient::Create(server.Config());
  ASSERT_TRUE(client.ok()) << client.status();
  std::mutex mu;
  std::vector<std::string> listed, events;
  int lists = 0;
  kube::Reflector pods(
      **client, "/api/v1/pods",
      kube::ReflectorHandler{[&](const std::vector<const common::JsonValue*>& items) {
                               std::lock_guard<std::mutex> lock(mu);
                               ++lists;
                               listed.clear();
                               for (const common::JsonValue* item : items) {
                                 absl::StatusOr<topology::PodFacts> p = wire::ParsePod(*item);
                                 EXPECT_TRUE(p.ok()) << p.status();
                                 if (p.ok())
                                   listed.push_back(absl::StrCat(p->name, "@", p->node_name));
                               }
                             },
                             [&](absl::string_view type, const common::JsonValue& object) {
                               absl::StatusOr<topology::PodFacts> p = wire::ParsePod(object);
                               EXPECT_TRUE(p.ok()) << p.status();
                               std::lock_guard<std::mutex> lock(mu);
                               events.push_back(absl::StrCat(type, " ", p.ok() ? p->name : "?"));
                             }},
      ReplayOptions());
  pods.Start();
  // 410 on the first watch -> a second list; then the captured events; then the watch resumes
  // from the last bookmark's resourceVersion.
  ASSERT_TRUE(WaitFor([&] { return server.Count("/api/v1/pods", "resourceVersion=306") >= 1; }))
      << "targets: " << server.Targets().size();
  pods.Stop();
  EXPECT_FALSE(server.bad_request());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(lists, 2) << "the 410 must cause exactly one relist";
  EXPECT_EQ(server.Count("/api/v1/pods", "limit=2"), 2);
  EXPECT_EQ(server.Count("/api/v1/pods", "resourceVersion=296"), 2);
  EXPECT_EQ(listed.size(), 8u);
  EXPECT_EQ(listed.front(), "pod-admit@gpu-node-a");
  EXPECT_EQ(events, (std::vector<std::string>{"ADDED watch-probe", "MODIFIED watch-probe",
                                              "MODIFIED watch-probe", "DELETED watch-probe"}));
  EXPECT_EQ(pods.counters().events.load(), 4u);  // bookmarks are not events
  EXPECT_GE(pods.counters().watch_restarts.load(), 1u);
}

TEST(FixtureReplayTest, LiveSourceBuildsTheCapturedCluster) {
  ReplayServer server;
  Replica replica(server.Config(), [] {
    kube::LiveSourceOptions o;
    o.reflector = ReplayOptions();
    return o;
  }());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(WaitFor([&] { return replica.source->synced(); }));
  // The node pages were joined with the capture's own continue token.
  EXPECT_EQ(server.Count("/api/v1/nodes", "continue="), 1);
  ASSERT_TRUE(WaitFor([&] { return server.Count("/api/v1/pods", "resourceVersion=306") >= 1; }));
  EXPECT_FALSE(server.bad_request());

  kube::ClusterState& state = *replica.state;
  std::shared_ptr<const topology::ModelState> s = state.Current();
  ASSERT_NE(s, nullptr);
  for (const char* n : {"cpu-node-c", "gpu-node-a", "gpu-node-b"}) {
    EXPECT_NE(s->snapshot->FindNode(n), nullptr) << n;
  }
  EXPECT_EQ(s->snapshot->NamespaceLabels("gpu-team").at("harness.example/webhooks"), "enabled");
  // pod-admit (a 1g.10gb slice) and pod-warn (2 GPUs) on gpu-node-a; pod-gpu on gpu-node-b,
  // where the watch's probe pod came and went.
  EXPECT_EQ(Used(state, "gpu-node-a", "nvidia.com/mig-1g.10gb"), 1);
  EXPECT_EQ(Used(state, "gpu-node-a", "nvidia.com/gpu"), 2);
  EXPECT_EQ(Used(state, "gpu-node-b", "nvidia.com/gpu"), 1);
  EXPECT_TRUE(state.OccupancyConsistent());
}

}  // namespace
}  // namespace kube_test
