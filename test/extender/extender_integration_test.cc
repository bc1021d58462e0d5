// The extender over real HTTPS: the gpu-tenancy binary serves on loopback port 0 and is driven
// with kube-scheduler's own payloads and with golden requests for each placement rule.
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::ServeProcess;
using testing_support::SharedServeSuite;

constexpr char kDemoNodes[] = R"(["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"])";

// A names-only filter request for a one-container pod of priority `priority` (the demo's pods
// are all at 0).
std::string FilterRequest(const std::string& ns, const std::string& limits_json,
                          const std::string& annotations_json = "{}",
                          const std::string& labels_json = "{}",
                          const std::string& names_json = kDemoNodes, int priority = 1000) {
  return absl::StrCat(
      R"({"Pod":{"metadata":{"name":"p","namespace":")", ns, R"(","uid":"u-1","labels":)",
      labels_json, R"(,"annotations":)", annotations_json, R"(},"spec":{"priority":)", priority,
      R"(,"containers":[{"name":"main","resources":{"limits":)", limits_json, R"(,"requests":)",
      limits_json, R"(}}]},"status":{"phase":"Pending"}},"Nodes":null,"NodeNames":)", names_json,
      "}");
}

std::vector<std::string> Names(const rapidjson::Value& array) {
  std::vector<std::string> out;
  if (!array.IsArray()) return out;
  for (const auto& v : array.GetArray()) out.push_back(v.GetString());
  return out;
}

std::map<std::string, std::string> Reasons(const rapidjson::Value& object) {
  std::map<std::string, std::string> out;
  if (!object.IsObject()) return out;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    out[it->name.GetString()] = it->value.GetString();
  }
  return out;
}

struct FilterView {
  int status = 0;
  std::vector<std::string> kept;
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> unresolvable;
  std::string error;
};

FilterView Filter(ServeProcess& server, const std::string& body) {
  ServeProcess::Response r = server.Post("/extender/filter", body);
  FilterView v;
  v.status = r.status;
  if (r.status != 200) return v;
  rapidjson::Document doc = ParseOrDie(r.body);
  const rapidjson::Value* names = common::FindMember(doc, "NodeNames");
  if (names) v.kept = Names(*names);
  v.failed = Reasons(*common::FindMember(doc, "FailedNodes"));
  v.unresolvable = Reasons(*common::FindMember(doc, "FailedAndUnresolvableNodes"));
  v.error = std::string(common::StringOr(doc, "Error"));
  return v;
}

class DemoExtenderTest : public SharedServeSuite<DemoExtenderTest> {
 public:
  static std::vector<std::string> ServeArgs() { return {"--demo"}; }
};

struct RuleCase {
  std::string name;
  std::string request;
  std::vector<std::string> kept;
  std::map<std::string, std::string> failed;        // only the entries checked
  std::map<std::string, std::string> unresolvable;  // only the entries checked
};

TEST_F(DemoExtenderTest, GoldenRepliesForEachRule) {
  const std::string kNoGpu = "no NVIDIA GPU on node";
  const std::string kReconfiguring =
      "MIG reconfiguration in progress (nvidia.com/mig.config.state=pending)";
  std::vector<RuleCase> cases = {
      {"untrusted MIG pod: free slices, exhausted slices, pool gate, reconfiguration",
       FilterRequest("acme", R"({"nvidia.com/mig-3g.40gb":"1"})"),
       {"mig-a"},
       {{"mig-b", "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2"}},
       {{"mig-c", kReconfiguring},
        {"ts-a", "pool gpu-timeslice (timeslice) is not allowed for tier untrusted"},
        {"excl-a", "nvidia.com/mig-3g.40gb: not offered by node"},
        {"cpu-a", kNoGpu}}},
      {"a pod that may preempt no holder: the full node is unresolvable",
       FilterRequest("acme", R"({"nvidia.com/mig-3g.40gb":"1"})", "{}", "{}", kDemoNodes, 0),
       {"mig-a"},
       {},
       {{"mig-b",
         "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2; no pod here that it may preempt "
         "would free enough"}}},
      {"tenant by namespace label selector",
       FilterRequest("bank-prod", R"({"nvidia.com/mig-3g.40gb":"1"})"),
       {"mig-a"},
       {{"mig-b", "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2"}},
       {}},
      {"trusted shared replica with memory headroom on one GPU",
       FilterRequest("research", R"({"nvidia.com/gpu.shared":"1"})",
                     R"({"gpu-tenancy.io/gpu-memory":"16Gi"})"),
       {"ts-a"},
       {},
       {{"mig-a", "nvidia.com/gpu.shared: not offered by node"}}},
      {"shared memory larger than any free GPU heap waits",
       FilterRequest("research", R"({"nvidia.com/gpu.shared":"1"})",
                     R"({"gpu-tenancy.io/gpu-memory":"36Gi"})"),
       {},
       {{"ts-a", "GPU memory: requested 36864 MiB, largest free on one GPU 32768 MiB of 40960"}},
       {}},
      {"shared memory larger than one GPU never fits",
       FilterRequest("research", R"({"nvidia.com/gpu.shared":"1"})",
                     R"({"gpu-tenancy.io/gpu-memory":"48Gi"})"),
       {},
       {},
       {{"ts-a", "GPU memory: requested 49152 MiB, larger than one GPU (40960 MiB)"}}},
      {"whole GPUs: one left",
       FilterRequest("research", R"({"nvidia.com/gpu":"2"})"),
       {},
       {{"excl-a", "nvidia.com/gpu: requested 2, free 1 of 4"}},
       {}},
      {"more GPUs than any node has",
       FilterRequest("research", R"({"nvidia.com/gpu":"8"})"),
       {},
       {},
       {{"excl-a", "nvidia.com/gpu: requested 8, node has 4"}}},
      {"unknown tenant is denied GPUs",
       FilterRequest("nobody", R"({"nvidia.com/mig-1g.10gb":"1"})"),
       {},
       {},
       {{"mig-a", "tenant unknown is not allowed GPUs by policy"},
        {"cpu-a", "tenant unknown is not allowed GPUs by policy"}}},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    FilterView v = Filter(*server_, c.request);
    ASSERT_EQ(v.status, 200);
    EXPECT_EQ(v.error, "");
    EXPECT_EQ(v.kept, c.kept);
    for (const auto& [node, reason] : c.failed) EXPECT_EQ(v.failed[node], reason) << node;
    for (const auto& [node, reason] : c.unresolvable)
      EXPECT_EQ(v.unresolvable[node], reason) << node;
    // Every candidate is accounted for exactly once.
    EXPECT_EQ(v.kept.size() + v.failed.size() + v.unresolvable.size(), 7u);
  }
}

TEST_F(DemoExtenderTest, PodWithoutGpuDemandPassesEveryNode) {
  FilterView v = Filter(*server_, FilterRequest("nobody", R"({"cpu":"1"})"));
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(v.kept, (std::vector<std::string>{"mig-a", "mig-b", "mig-c", "mig-1g", "ts-a", "excl-a",
                                              "cpu-a"}));
  EXPECT_TRUE(v.failed.empty());
  EXPECT_TRUE(v.unresolvable.empty());
}

std::map<std::string, int64_t> Scores(ServeProcess& server, const std::string& body) {
  ServeProcess::Response r = server.Post("/extender/prioritize", body);
  EXPECT_EQ(r.status, 200) << r.body;
  std::map<std::string, int64_t> out;
  rapidjson::Document doc = ParseOrDie(r.body);
  EXPECT_TRUE(doc.IsArray());
  if (!doc.IsArray()) return out;
  for (const auto& hp : doc.GetArray()) out[hp["Host"].GetString()] = hp["Score"].GetInt64();
  return out;
}

TEST_F(DemoExtenderTest, PrioritizeScoresEveryCandidateBinpackOrSpread) {
  std::string names = R"(["mig-a","mig-1g","cpu-a"])";
  std::map<std::string, int64_t> binpack = Scores(
      *server_, FilterRequest("research", R"({"nvidia.com/mig-1g.10gb":"1"})", "{}", "{}", names));
  // mig-a already holds one of its four 1g instances; mig-1g is empty: binpack fills mig-a.
  EXPECT_EQ(binpack, (std::map<std::string, int64_t>{{"mig-a", 5}, {"mig-1g", 1}, {"cpu-a", 0}}));
  std::map<std::string, int64_t> spread = Scores(
      *server_, FilterRequest("research", R"({"nvidia.com/mig-1g.10gb":"1"})",
                              R"({"gpu-tenancy.io/scheduling-policy":"spread"})", "{}", names));
  EXPECT_EQ(spread, (std::map<std::string, int64_t>{{"mig-a", 5}, {"mig-1g", 9}, {"cpu-a", 0}}));
}

TEST_F(DemoExtenderTest, MalformedRequestsGet400AndServerKeepsServing) {
  struct Bad {
    std::string name;
    std::string body;
    std::string content_type;
    int status;
    std::string error_mentions;
  };
  std::vector<Bad> cases = {
      {"not JSON", "{\"Pod\":", "application/json", 400, "invalid JSON"},
      {"no Pod", R"({"Nodes":null,"NodeNames":["a"]})", "application/json", 400, "Pod"},
      {"no candidates", R"({"Pod":{"metadata":{},"spec":{}},"Nodes":null,"NodeNames":null})",
       "application/json", 400, "NodeNames"},
      {"NodeNames not a list", R"({"Pod":{"metadata":{},"spec":{}},"NodeNames":"a"})",
       "application/json", 400, "NodeNames"},
      {"junk quantity", FilterRequest("research", R"({"nvidia.com/gpu":"lots"})"),
       "application/json", 400, "ExtenderArgs.Pod.spec.containers[0].resources"},
      {"bad scheduling-policy annotation",
       FilterRequest("research", R"({"nvidia.com/gpu":"1"})",
                     R"({"gpu-tenancy.io/scheduling-policy":"random"})"),
       "application/json", 400, "binpack or spread"},
      {"wrong content type", FilterRequest("research", "{}"), "text/plain", 415, "Content-Type"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    ServeProcess::Response r = server_->Post("/extender/filter", c.body, c.content_type);
    EXPECT_EQ(r.status, c.status);
    rapidjson::Document doc = ParseOrDie(r.body);
    EXPECT_NE(common::StringOr(doc, "error").find(c.error_mentions), absl::string_view::npos)
        << r.body;
  }
  FilterView ok = Filter(*server_, FilterRequest("acme", R"({"nvidia.com/mig-3g.40gb":"1"})"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.kept, std::vector<std::string>{"mig-a"});
}

TEST_F(DemoExtenderTest, MetricsShowInventoryAndDecisionsAndPassPromtool) {
  ASSERT_EQ(Filter(*server_, FilterRequest("acme", R"({"nvidia.com/mig-3g.40gb":"1"})")).status,
            200);
  ServeProcess::Response metrics = server_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string& text = metrics.body;
  for (const char* line : {
           "gpu_tenancy_node_resource_free{node=\"mig-b\",pool=\"gpu-mig\",resource=\"nvidia.com/"
           "mig-3g.40gb\",kind=\"mig\"} 0\n",
           "gpu_tenancy_node_resource_free{node=\"mig-a\",pool=\"gpu-mig\",resource=\"nvidia.com/"
           "mig-1g.10gb\",kind=\"mig\"} 3\n",
           "gpu_tenancy_pool_resource_free{pool=\"gpu-mig\",resource=\"nvidia.com/"
           "mig-3g.40gb\",kind=\"mig\"} 4\n",
           "gpu_tenancy_node_shared_memory_free_mib{node=\"ts-a\",pool=\"gpu-timeslice\"} 49152\n",
           "gpu_tenancy_nodes_mig_unsettled 1\n",
           "gpu_tenancy_cache_synced 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line;
  }
  EXPECT_NE(
      text.find(
          "gpu_tenancy_filter_rejections_total{verdict=\"unschedulable\",rule=\"exhausted\"}"),
      std::string::npos);
  EXPECT_NE(
      text.find("gpu_tenancy_filter_rejections_total{verdict=\"unresolvable\",rule=\"tier-pool\"}"),
      std::string::npos);
  EXPECT_EQ(testing_support::SampleValue(text,
                                         "gpu_tenancy_tenant_mig_instances_held{tenant=\"bank\","
                                         "tier=\"untrusted\",profile=\"3g.40gb\"}"),
            1);
  EXPECT_EQ(testing_support::SampleValue(
                text, "gpu_tenancy_tenant_gpus_held{tenant=\"research\",tier=\"trusted\"}"),
            3);
  // The exposition format itself, as Prometheus' own linter reads it.
  EXPECT_EQ(testing_support::PromtoolProblems(text), "");
}

TEST_F(DemoExtenderTest, HealthAndReadiness) {
  ASSERT_EQ(Filter(*server_, FilterRequest("acme", R"({"nvidia.com/mig-3g.40gb":"1"})")).status,
            200);
  EXPECT_EQ(server_->Get("/healthz").status, 200);
  EXPECT_EQ(server_->Get("/readyz").status, 200);
  ServeProcess::Response metrics = server_->Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("gpu_tenancy_http_requests_total{route=\"/extender/filter\""),
            std::string::npos);
}

// kube-scheduler's captured payloads against the cluster they were captured from.
class FixtureExtenderTest : public SharedServeSuite<FixtureExtenderTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/extender/fixture-cluster.json"};
  }
};

TEST_F(FixtureExtenderTest, NamesOnlyRequestFromKubeScheduler) {
  FilterView v = Filter(*server_, ReadTestData("extender/filter-nodecache-true.request.json"));
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(v.kept, std::vector<std::string>{"gpu-node-a"});
  EXPECT_EQ(v.unresolvable["cpu-node-c"], "no NVIDIA GPU on node");
  EXPECT_EQ(v.unresolvable["gpu-node-b"], "nvidia.com/mig-1g.10gb: not offered by node");
}

TEST_F(FixtureExtenderTest, FullNodeRequestGetsTheOriginalNodeObjectsBack) {
  std::string request = ReadTestData("extender/filter-nodecache-false.request.json");
  ServeProcess::Response r = server_->Post("/extender/filter", request);
  ASSERT_EQ(r.status, 200);
  rapidjson::Document reply = ParseOrDie(r.body);
  rapidjson::Document input = ParseOrDie(request);
  const rapidjson::Value* nodes = common::FindMember(reply, "Nodes");
  ASSERT_NE(nodes, nullptr);
  const rapidjson::Value* items = common::FindMember(*nodes, "items");
  ASSERT_TRUE(items && items->IsArray());
  ASSERT_EQ(items->Size(), 1u);
  const rapidjson::Value& original = input["Nodes"]["items"][1];
  ASSERT_STREQ(original["metadata"]["name"].GetString(), "gpu-node-a");
  EXPECT_TRUE((*items)[0] == original) << "kept Node differs from the one sent";
  EXPECT_EQ(Reasons(reply["FailedAndUnresolvableNodes"]).size(), 2u);
  EXPECT_EQ(common::FindMember(reply, "NodeNames"), nullptr);
}

TEST_F(FixtureExtenderTest, PrioritizePayloadsInBothModes) {
  for (const char* file : {"extender/prioritize-nodecache-true.request.json",
                           "extender/prioritize-nodecache-false.request.json"}) {
    SCOPED_TRACE(file);
    std::map<std::string, int64_t> scores = Scores(*server_, ReadTestData(file));
    ASSERT_EQ(scores.size(), 3u);
    EXPECT_GT(scores["gpu-node-a"], 0);
    EXPECT_EQ(scores["gpu-node-b"], 0);
    EXPECT_EQ(scores["cpu-node-c"], 0);
    for (const auto& [host, score] : scores) {
      EXPECT_GE(score, 0);
      EXPECT_LE(score, 10);
    }
  }
}

TEST(ExtenderLimitsTest, OversizedBodyGets413AndCanaryReserveHolds) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
      {"--cluster-file", std::string(GT_SOURCE_DIR) + "/cmd/demo/cluster.yaml", "--policy",
       std::string(GT_TESTDATA_DIR) + "/extender/canary-policy.yaml", "--max-body-bytes", "4096"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  ServeProcess::Response big = server.Post("/extender/filter", std::string(8192, ' ') + "{}");
  EXPECT_EQ(big.status, 413);
  EXPECT_NE(big.body.find("too large"), std::string::npos);

  std::string names = R"(["mig-a","mig-1g"])";
  FilterView plain = Filter(
      server, FilterRequest("research", R"({"nvidia.com/mig-1g.10gb":"3"})", "{}", "{}", names));
  EXPECT_EQ(plain.kept, std::vector<std::string>{"mig-1g"});
  // The 1g.10gb instance in use is acme's, which research may not preempt.
  EXPECT_EQ(plain.unresolvable["mig-a"],
            "nvidia.com/mig-1g.10gb: requested 3, free 2 of 4 (canary reserve held); no pod here "
            "that it may preempt would free enough");
  FilterView canary =
      Filter(server, FilterRequest("research", R"({"nvidia.com/mig-1g.10gb":"3"})", "{}",
                                   R"({"gpu-tenancy.io/canary":"true"})", names));
  EXPECT_EQ(canary.kept, (std::vector<std::string>{"mig-a", "mig-1g"}));
  EXPECT_EQ(WEXITSTATUS(server.Terminate()), 0);
}

}  // namespace
