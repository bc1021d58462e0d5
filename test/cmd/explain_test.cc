// `gpu-tenancy explain` through the built binary: the demo pods get the verdicts and reasons a
// user would read, JSON output parses, and usage mistakes exit 2.
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"
#include "test/support/test_inputs.h"

namespace {

using ProcessResult = testing_support::CommandResult;  // `out` is stdout only

// Runs the binary with `args` (already shell-quoted where needed); stderr is kept apart.
ProcessResult Explain(const std::string& args) {
  return testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " explain ", args));
}

std::string DemoPod(const std::string& name) {
  return absl::StrCat("'", GT_SOURCE_DIR, "/cmd/demo/pods/", name, ".yaml'");
}

struct NodeVerdict {
  std::string verdict;
  std::string reason;
  int score = -1;
};

struct Decision {
  std::string pod, tenant, tier;
  std::map<std::string, int64_t> demand;
  std::map<std::string, NodeVerdict> nodes;
};

std::string Str(const rapidjson::Value& object, const char* key) {
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsString()) return "<missing>";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

Decision ParseDecision(const std::string& json) {
  Decision d;
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  EXPECT_FALSE(doc.HasParseError()) << "not JSON: " << json;
  if (doc.HasParseError() || !doc.IsObject()) return d;
  d.pod = Str(doc, "pod");
  d.tenant = Str(doc, "tenant");
  auto tier = doc.FindMember("tier");
  d.tier = tier != doc.MemberEnd() && tier->value.IsString() ? tier->value.GetString() : "<null>";
  auto demand = doc.FindMember("demand");
  if (demand != doc.MemberEnd() && demand->value.IsObject()) {
    for (auto it = demand->value.MemberBegin(); it != demand->value.MemberEnd(); ++it) {
      if (it->value.IsInt64()) d.demand[it->name.GetString()] = it->value.GetInt64();
    }
  }
  auto nodes = doc.FindMember("nodes");
  EXPECT_TRUE(nodes != doc.MemberEnd() && nodes->value.IsArray());
  if (nodes == doc.MemberEnd() || !nodes->value.IsArray()) return d;
  for (const rapidjson::Value& n : nodes->value.GetArray()) {
    NodeVerdict v;
    v.verdict = Str(n, "verdict");
    v.reason = Str(n, "reason");
    auto score = n.FindMember("score");
    if (score != n.MemberEnd() && score->value.IsInt()) v.score = score->value.GetInt();
    d.nodes[Str(n, "name")] = v;
  }
  return d;
}

const std::vector<std::string> kDemoNodes = {"cpu-a", "excl-a", "mig-1g", "mig-a",
                                             "mig-b", "mig-c",  "ts-a"};

struct Expected {
  std::string verdict;
  std::string reason;
};

struct Row {
  std::string name;
  std::string pod_arg;
  std::string pod;
  std::string tenant;
  std::string tier;
  std::map<std::string, int64_t> demand;
  std::map<std::string, Expected> nodes;  // every demo node
  std::map<std::string, int> scores;      // nodes that fit
};

const Expected kNoGpu = {"unresolvable", "no NVIDIA GPU on node"};
const Expected kReconfiguring = {
    "unresolvable", "MIG reconfiguration in progress (nvidia.com/mig.config.state=pending)"};
Expected NotOffered(const std::string& resource) {
  return {"unresolvable", absl::StrCat(resource, ": not offered by node")};
}
const Expected kFits = {"fits", ""};

std::vector<Row> DemoRows() {
  // mig-b's 3g.40gb instances are held by pods of the same priority (0): preemption cannot help.
  const Expected mig_rows_mig_b = {"unresolvable",
                                   "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2; no pod here "
                                   "that it may preempt would free enough"};
  const Expected ts_untrusted = {
      "unresolvable", "pool gpu-timeslice (timeslice) is not allowed for tier untrusted"};
  const std::map<std::string, Expected> mig_3g_nodes = {
      {"cpu-a", kNoGpu},
      {"excl-a", NotOffered("nvidia.com/mig-3g.40gb")},
      {"mig-1g", NotOffered("nvidia.com/mig-3g.40gb")},
      {"mig-a", kFits},
      {"mig-b", mig_rows_mig_b},
      {"mig-c", kReconfiguring},
      {"ts-a", ts_untrusted},
  };
  return {
      {"MIG inference pod fits mig-a only",
       DemoPod("mig-inference"),
       "acme/llm-b",
       "acme",
       "untrusted",
       {{"nvidia.com/mig-3g.40gb", 1}, {"gpuMemoryMiB", 0}},
       mig_3g_nodes,
       {{"mig-a", 5}}},
      {"pending pod from the cluster",
       "acme/waiting",
       "acme/waiting",
       "acme",
       "untrusted",
       {{"nvidia.com/mig-3g.40gb", 1}, {"gpuMemoryMiB", 0}},
       mig_3g_nodes,
       {{"mig-a", 5}}},
      {"shared notebook fits ts-a",
       DemoPod("shared-notebook"),
       "research/notebook-3",
       "research",
       "trusted",
       {{"nvidia.com/gpu.shared", 1}, {"gpuMemoryMiB", 16384}},
       {{"cpu-a", kNoGpu},
        {"excl-a", NotOffered("nvidia.com/gpu.shared")},
        {"mig-1g", NotOffered("nvidia.com/gpu.shared")},
        {"mig-a", NotOffered("nvidia.com/gpu.shared")},
        {"mig-b", NotOffered("nvidia.com/gpu.shared")},
        {"mig-c", kReconfiguring},
        {"ts-a", kFits}},
       {{"ts-a", 7}}},
      {"exclusive training fits excl-a",
       DemoPod("exclusive-training"),
       "research/finetune",
       "research",
       "trusted",
       {{"nvidia.com/gpu", 1}, {"gpuMemoryMiB", 0}},
       {{"cpu-a", kNoGpu},
        {"excl-a", kFits},
        {"mig-1g", NotOffered("nvidia.com/gpu")},
        {"mig-a", NotOffered("nvidia.com/gpu")},
        {"mig-b", NotOffered("nvidia.com/gpu")},
        {"mig-c", kReconfiguring},
        {"ts-a", NotOffered("nvidia.com/gpu")}},
       {{"excl-a", 10}}},
      {"too big fits nowhere",
       DemoPod("too-big"),
       "research/pretrain",
       "research",
       "trusted",
       {{"nvidia.com/gpu", 8}, {"gpuMemoryMiB", 0}},
       {{"cpu-a", kNoGpu},
        {"excl-a", {"unresolvable", "nvidia.com/gpu: requested 8, node has 4"}},
        {"mig-1g", NotOffered("nvidia.com/gpu")},
        {"mig-a", NotOffered("nvidia.com/gpu")},
        {"mig-b", NotOffered("nvidia.com/gpu")},
        {"mig-c", kReconfiguring},
        {"ts-a", NotOffered("nvidia.com/gpu")}},
       {}},
      {"untrusted tenant kept off shared GPUs",
       DemoPod("untrusted-shared"),
       "acme/cheap-inference",
       "acme",
       "untrusted",
       {{"nvidia.com/gpu.shared", 1}, {"gpuMemoryMiB", 0}},
       {{"cpu-a", kNoGpu},
        {"excl-a", NotOffered("nvidia.com/gpu.shared")},
        {"mig-1g", NotOffered("nvidia.com/gpu.shared")},
        {"mig-a", NotOffered("nvidia.com/gpu.shared")},
        {"mig-b", NotOffered("nvidia.com/gpu.shared")},
        {"mig-c", kReconfiguring},
        {"ts-a", ts_untrusted}},
       {}},
  };
}

void ExpectDecision(const Row& row, const ProcessResult& run) {
  ASSERT_EQ(run.exit_code, 0) << run.out;
  Decision d = ParseDecision(run.out);
  EXPECT_EQ(d.pod, row.pod);
  EXPECT_EQ(d.tenant, row.tenant);
  EXPECT_EQ(d.tier, row.tier);
  EXPECT_EQ(d.demand, row.demand);
  std::vector<std::string> names;
  for (const auto& [name, v] : d.nodes) names.push_back(name);
  EXPECT_EQ(names, kDemoNodes);
  for (const auto& [name, want] : row.nodes) {
    SCOPED_TRACE(name);
    auto it = d.nodes.find(name);
    ASSERT_NE(it, d.nodes.end());
    EXPECT_EQ(it->second.verdict, want.verdict);
    EXPECT_EQ(it->second.reason, want.reason);
    auto score = row.scores.find(name);
    EXPECT_EQ(it->second.score, score == row.scores.end() ? 0 : score->second);
  }
}

TEST(ExplainTest, DemoPodsJson) {
  for (const Row& row : DemoRows()) {
    SCOPED_TRACE(row.name);
    ExpectDecision(row, Explain(absl::StrCat("--demo --pod ", row.pod_arg, " -o json")));
  }
}

TEST(ExplainTest, ClusterFileAndPolicyFileMatchTheDemo) {
  const Row row = DemoRows().front();
  ExpectDecision(
      row, Explain(absl::StrCat("--cluster-file '", GT_SOURCE_DIR,
                                "/cmd/demo/cluster.yaml' --policy '", GT_SOURCE_DIR,
                                "/cmd/demo/policy.yaml' --pod ", row.pod_arg, " --output=json")));
}

TEST(ExplainTest, WithoutAPolicyEveryTenantGetsTheDefaultTier) {
  ProcessResult run =
      Explain(absl::StrCat("--cluster-file '", GT_SOURCE_DIR, "/cmd/demo/cluster.yaml' --pod ",
                           DemoPod("untrusted-shared"), " -o json"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  Decision d = ParseDecision(run.out);
  EXPECT_EQ(d.tenant, "unknown");
  EXPECT_EQ(d.tier, "default");
  EXPECT_EQ(d.nodes["cpu-a"].verdict, "unresolvable");
  EXPECT_EQ(d.nodes["cpu-a"].reason, "no NVIDIA GPU on node");
  EXPECT_EQ(d.nodes.size(), kDemoNodes.size());
}

TEST(ExplainTest, TextOutput) {
  ProcessResult run = Explain(absl::StrCat("--demo --pod ", DemoPod("mig-inference")));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "pod     acme/llm-b\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "tenant  acme (tier untrusted)\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "demand  nvidia.com/mig-3g.40gb=1\n")) << run.out;
  EXPECT_TRUE(
      absl::StrContains(run.out,
                        "quota   nvidia.com/mig-1g.10gb 2 of 2, nvidia.com/mig-3g.40gb 1 of 4, "
                        "mig-compute-slices 5 of 14 used\n"))
      << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "NODE    VERDICT        SCORE  REASON\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "mig-a   fits               5  -\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out,
                                "mig-b   unresolvable       0  nvidia.com/mig-3g.40gb: requested "
                                "1, free 0 of 2; no pod here that it may preempt would free "
                                "enough\n"))
      << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "1 of 7 nodes can take the pod\n")) << run.out;

  ProcessResult memory =
      Explain(absl::StrCat("--demo --pod ", DemoPod("shared-notebook"), " -o text"));
  ASSERT_EQ(memory.exit_code, 0);
  EXPECT_TRUE(
      absl::StrContains(memory.out, "demand  nvidia.com/gpu.shared=1, gpu-memory=16384Mi\n"))
      << memory.out;
}

// A bound pod: the devices the node agent reported the kubelet gave it, in text and JSON; a
// manifest (not bound) has no such line.
TEST(ExplainTest, ABoundPodNamesTheDevicesTheKubeletGaveIt) {
  ProcessResult text = Explain("--demo --pod acme/llm-a");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_TRUE(
      absl::StrContains(text.out,
                        "devices on mig-b, as the node agent reported: "
                        "MIG-9c070001-31d2-5e4f-8a6b-2f1d7e3c0001 (nvidia.com/mig-3g.40gb)\n"))
      << text.out;
  EXPECT_FALSE(absl::StrContains(text.out, "report  ")) << text.out;
  ProcessResult replica = Explain("--demo --pod research/notebook-1");
  EXPECT_TRUE(
      absl::StrContains(replica.out,
                        "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::2 (nvidia.com/gpu.shared, "
                        "a replica of GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020)\n"))
      << replica.out;
  ProcessResult manifest = Explain(absl::StrCat("--demo --pod ", DemoPod("mig-inference")));
  EXPECT_FALSE(absl::StrContains(manifest.out, "devices ")) << manifest.out;

  ProcessResult json = Explain("--demo --pod acme/embed-2 -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("reportedDevices")) << json.out;
  EXPECT_EQ(Str(doc, "boundNode"), "mig-a");
  ASSERT_TRUE(doc["reportedDevices"].IsArray() && doc["reportedDevices"].Size() == 1) << json.out;
  const rapidjson::Value& device = doc["reportedDevices"][0];
  EXPECT_EQ(Str(device, "id"), "MIG-GPU-5a1f0010-7c3e-4b8a-9d21-0e6c4f2a0010/9/0");
  EXPECT_EQ(Str(device, "gpu"), "GPU-5a1f0010-7c3e-4b8a-9d21-0e6c4f2a0010");
  EXPECT_EQ(Str(device, "migInstance"), "9");
  EXPECT_EQ(Str(device, "sharing"), "mig");
  EXPECT_EQ(Str(device, "resource"), "nvidia.com/mig-1g.10gb");
  EXPECT_TRUE(doc["reportDisagreement"].IsNull()) << json.out;
  ProcessResult unbound =
      Explain(absl::StrCat("--demo --pod ", DemoPod("mig-inference"), " -o json"));
  EXPECT_FALSE(absl::StrContains(unbound.out, "reportedDevices")) << unbound.out;
}

// The demo with research/notebook-2's replica moved by its node's agent to the GPU bind did not
// choose, and acme/llm-a carrying a report naming another node that mig-b's agent never recorded:
// explain says why each disagrees, and believes only the first.
TEST(ExplainTest, AReportThatDisagreesWithTheSchedulerIsSaid) {
  std::ifstream in(absl::StrCat(GT_SOURCE_DIR, "/cmd/demo/cluster.yaml"));
  std::string cluster((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (
      auto [from, to] :
      {// The agent's record on ts-a and its report on the pod, both.
       std::pair<std::string, std::string>{"GPU-5a1f0021-7c3e-4b8a-9d21-0e6c4f2a0021::0",
                                           "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::1"},
       {"GPU-5a1f0021-7c3e-4b8a-9d21-0e6c4f2a0021::0",
        "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::1"},
       // llm-a's report rewritten, and mig-b's record of it gone.
       {R"({"node":"mig-b","containers":[{"name":"main","devices":{"nvidia.com/mig-3g.40gb":["MIG-9c070001)",
        R"({"node":"mig-a","containers":[{"name":"main","devices":{"nvidia.com/mig-3g.40gb":["MIG-9c070001)"},
       {R"("00000000-0000-4000-8000-000000000001":{"nvidia.com/mig-3g.40gb":["MIG-9c070001-31d2-5e4f-8a6b-2f1d7e3c0001"]},)",
        ""}}) {
    size_t at = cluster.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    cluster.replace(at, from.size(), to);
  }
  testing_support::TempDir dir;
  std::ofstream(dir.File("cluster.yaml")) << cluster;
  const std::string base =
      absl::StrCat("--cluster-file '", dir.File("cluster.yaml"), "' --policy '", GT_SOURCE_DIR,
                   "/cmd/demo/policy.yaml' --pod ");
  ProcessResult moved = Explain(base + "research/notebook-2");
  ASSERT_EQ(moved.exit_code, 0) << moved.out;
  EXPECT_TRUE(absl::StrContains(moved.out, "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::1"))
      << moved.out;
  EXPECT_TRUE(absl::StrContains(moved.out, "report  disagrees with the scheduler's record: "))
      << moved.out;
  ProcessResult elsewhere = Explain(base + "acme/llm-a");
  EXPECT_TRUE(absl::StrContains(elsewhere.out,
                                "devices on mig-b: the pod's report is not believed (the node "
                                "agent of mig-b recorded none for it, so it did not write it)"))
      << elsewhere.out;
  EXPECT_TRUE(absl::StrContains(elsewhere.out, "report  disagrees with the scheduler's record: "))
      << elsewhere.out;
  ProcessResult json = Explain(base + "acme/llm-a -o json");
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("reportedDevices")) << json.out;
  EXPECT_TRUE(doc["reportedDevices"].IsNull()) << json.out;
  EXPECT_TRUE(absl::StrContains(Str(doc, "reportDisagreement"), "mig-a")) << json.out;
}

// The demo's acme holds both 1g.10gb slices its quota allows: every node with a free one says so.
TEST(ExplainTest, ATenantAtQuotaIsToldOnEveryNodeThatHasRoom) {
  ProcessResult run = Explain(absl::StrCat("--demo --pod ", DemoPod("over-quota")));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(
      absl::StrContains(run.out,
                        "quota   nvidia.com/mig-1g.10gb 2 of 2, nvidia.com/mig-3g.40gb 1 of "
                        "4, mig-compute-slices 5 of 14 used\n"))
      << run.out;
  for (const char* node : {"mig-1g", "mig-a ", "mig-b "}) {
    EXPECT_TRUE(absl::StrContains(run.out, absl::StrCat(node,
                                                        "  unresolvable       0  tenant acme "
                                                        "quota: nvidia.com/mig-1g.10gb 2 "
                                                        "of 2 held, 1 requested\n")))
        << node << "\n"
        << run.out;
  }
  EXPECT_TRUE(absl::StrContains(run.out, "0 of 7 nodes can take the pod\n")) << run.out;
}

// A running pod is told what the contract guard says of it: what it breaks now, or that it
// keeps the contract.
TEST(ExplainTest, ARunningPodIsJudgedByTheContract) {
  testing_support::TempDir dir;
  std::ofstream(dir.File("cluster.yaml"))
      << testing_support::Testdata("webhook/side-doors-cluster.yaml")
      << "- apiVersion: v1\n  kind: Pod\n"
         "  metadata: {name: sneaky, namespace: acme, uid: u-sneaky}\n"
         "  spec:\n    nodeName: ts-a\n    containers:\n"
         "    - {name: main, resources: {limits: {nvidia.com/gpu.shared: '1'}}}\n"
         "  status: {phase: Running}\n";
  const std::string files =
      absl::StrCat("--cluster-file '", dir.File("cluster.yaml"), "' --policy '", GT_TESTDATA_DIR,
                   "/webhook/side-doors-policy.yaml'");
  ProcessResult sneaky = Explain(absl::StrCat(files, " --pod acme/sneaky"));
  ASSERT_EQ(sneaky.exit_code, 0) << sneaky.out;
  EXPECT_TRUE(absl::StrContains(sneaky.out,
                                "\ncontract [tier-shared] container \"main\" requests "
                                "nvidia.com/gpu.shared"))
      << sneaky.out;
  EXPECT_TRUE(absl::StrContains(sneaky.out, "\ncontract [tier-pool] pod runs on node \"ts-a\""))
      << sneaky.out;
  ProcessResult json = Explain(absl::StrCat(files, " --pod acme/sneaky -o json"));
  ASSERT_EQ(json.exit_code, 0) << json.out;
  EXPECT_TRUE(absl::StrContains(json.out, "\"rule\": \"tier-shared\"")) << json.out;

  ProcessResult kept = Explain(absl::StrCat(files, " --pod research/notebook"));
  ASSERT_EQ(kept.exit_code, 0) << kept.out;
  EXPECT_TRUE(
      absl::StrContains(kept.out, "\ncontract kept: the pod breaks no rule of the policy\n"))
      << kept.out;
}

// Over its quota, a pod is told where its own lower-priority pods would make room, and which
// ones would go; nodes held by other tenants are unresolvable (test/testdata/preemption).
TEST(ExplainTest, PreemptionNamesTheNodesAndVictimsThePolicyAllows) {
  const std::string args =
      absl::StrCat("--cluster-file '", GT_TESTDATA_DIR, "/preemption/cluster.json' --policy '",
                   GT_TESTDATA_DIR, "/preemption/policy.yaml' --pod acme/urgent");
  ProcessResult text = Explain(args);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_TRUE(absl::StrContains(
      text.out,
      "node-a  unschedulable      0  tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 "
      "requested; preempting its own lower-priority pods here would free it\n"))
      << text.out;
  EXPECT_TRUE(absl::StrContains(text.out,
                                "preemption could help on these nodes, evicting only pods the "
                                "policy lets this pod preempt:\n  node-a  acme/train-old "
                                "(priority 500)\n"))
      << text.out;

  ProcessResult json = Explain(args + " -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc = testing_support::ParseOrDie(json.out);
  std::map<std::string, const rapidjson::Value*> nodes;
  for (const auto& n : doc["nodes"].GetArray()) nodes[n["name"].GetString()] = &n;
  ASSERT_TRUE(nodes.count("node-a")) << json.out;
  const rapidjson::Value& victims = (*nodes["node-a"])["preemptionVictims"];
  ASSERT_EQ(victims.Size(), 1u) << json.out;
  EXPECT_EQ(std::string(victims[0]["namespace"].GetString()), "acme");
  EXPECT_EQ(std::string(victims[0]["name"].GetString()), "train-old");
  EXPECT_EQ(victims[0]["priority"].GetInt(), 500);
  EXPECT_EQ((*nodes["node-a"])["pdbViolations"].GetInt(), 0);
  EXPECT_FALSE(nodes["node-b"]->HasMember("preemptionVictims")) << "unresolvable: no victims";
}

// A pod with DRA claims: each claim's state, node and devices (UUIDs), from the captured v1.36
// slice and claim; a template's claim that is not made yet says so.
TEST(ExplainTest, APodsDraClaimsAreShownWithTheirDevices) {
  testing_support::TempDir dir;
  std::ofstream(dir.File("policy.yaml")) << "tiers:\n  - name: trusted\n    modes: [mig]\n"
                                            "tenants:\n  - name: team-a\n    tier: trusted\n"
                                            "    namespaces: [team-a]\nunknownTenant: deny\n";
  const std::string base =
      absl::StrCat("--cluster-file '", GT_TESTDATA_DIR, "/dra/cluster-with-claims.json' --policy '",
                   dir.File("policy.yaml"), "' --pod ");
  ProcessResult run = Explain(base + "team-a/inference");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out,
                                "claim   gpu = tenant-a-inference: allocated on node-a\n"
                                "          gpu.nvidia.com/node-a/gpu-0-mig-1g10gb-19-0 (mig "
                                "1g.10gb, MIG-4d806f22-346a-5a1d-ac01-86b505cdf485)\n"))
      << run.out;
  ProcessResult json = Explain(base + "team-a/inference -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("claims")) << json.out;
  EXPECT_EQ(std::string(doc["claims"][0]["state"].GetString()), "allocated");
  EXPECT_EQ(std::string(doc["claims"][0]["devices"][0]["uuid"].GetString()),
            "MIG-4d806f22-346a-5a1d-ac01-86b505cdf485");

  ProcessResult pending = Explain(base + "team-a/trainer");
  ASSERT_EQ(pending.exit_code, 0) << pending.out;
  EXPECT_TRUE(
      absl::StrContains(pending.out,
                        "claim   gpu: not made yet (template whole-gpu); the template is not in "
                        "the cluster\n"))
      << pending.out;
}

// A claim not allocated yet, and a template's claim not made yet: per node, how many free
// devices pass the class's selectors and the tenant's limits the webhook wrote into the claim.
// node-a has a 1g.10gb (held), a 3g.40gb and a full GPU free; node-b's full GPU is held.
TEST(ExplainTest, APendingClaimIsEvaluatedOnEveryNode) {
  testing_support::TempDir dir;
  std::ofstream(dir.File("policy.yaml"))
      << "tiers:\n  - name: trusted\n    modes: [mig, exclusive]\n"
         "tenants:\n  - name: team-a\n    tier: trusted\n    namespaces: [team-a]\n"
         "    limits:\n      migProfiles: [1g.10gb]\nunknownTenant: deny\n";
  const std::string base = absl::StrCat("--cluster-file '", GT_TESTDATA_DIR,
                                        "/dra/cluster-pending-claims.json' --policy '",
                                        dir.File("policy.yaml"), "' --pod ");
  ProcessResult run = Explain(base + "team-a/waiting");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(absl::StrContains(
      run.out,
      "claim   gpu = tenant-a-training: pending: kube-scheduler's DRA allocator has not placed "
      "it\n"
      "          node-a  no       mig (mig.nvidia.com): 1 wanted, 0 free match; 1 held by "
      "claims; 1 excluded by mig-profiles\n"
      "          node-b  no       mig (mig.nvidia.com): 1 wanted, 0 free match\n"))
      << run.out;

  ProcessResult trainer = Explain(base + "team-a/trainer");
  ASSERT_EQ(trainer.exit_code, 0) << trainer.out << trainer.err;
  EXPECT_TRUE(absl::StrContains(trainer.out,
                                "claim   gpu: not made yet (template whole-gpu)\n"
                                "          node-a  yes      gpu (gpu.nvidia.com): 1 wanted, 1 "
                                "free match\n"
                                "          node-b  no       gpu (gpu.nvidia.com): 1 wanted, 0 "
                                "free match; 1 held by claims\n"))
      << trainer.out;

  ProcessResult json = Explain(base + "team-a/waiting -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("claims")) << json.out;
  const rapidjson::Value& nodes = doc["claims"][0]["nodes"];
  ASSERT_TRUE(nodes.IsArray() && nodes.Size() == 2) << json.out;
  EXPECT_EQ(std::string(nodes[0]["name"].GetString()), "node-a");
  EXPECT_EQ(std::string(nodes[0]["answer"].GetString()), "no");
  EXPECT_EQ(nodes[0]["requests"][0]["excludedByLimit"]["mig-profiles"].GetInt(), 1);
  EXPECT_EQ(nodes[0]["requests"][0]["heldMatching"].GetInt(), 1);

  // Without the profile limit the 3g.40gb is free for the tenant, but this claim was made
  // under the limit and still carries it: the allocator enforces what the claim says.
  std::ofstream(dir.File("open.yaml"))
      << "tiers:\n  - name: trusted\n    modes: [mig, exclusive]\n"
         "tenants:\n  - name: team-a\n    tier: trusted\n    namespaces: [team-a]\n"
         "unknownTenant: deny\n";
  ProcessResult open = Explain(absl::StrCat("--cluster-file '", GT_TESTDATA_DIR,
                                            "/dra/cluster-pending-claims.json' --policy '",
                                            dir.File("open.yaml"), "' --pod team-a/waiting"));
  ASSERT_EQ(open.exit_code, 0) << open.out;
  EXPECT_TRUE(absl::StrContains(open.out,
                                "          node-a  no       mig (mig.nvidia.com): 1 wanted, 0 "
                                "free match; 1 held by claims\n"))
      << open.out;
}

TEST(ExplainTest, DeniedTenantInText) {
  // The demo policy denies namespaces no tenant claims; the pod manifest here has none, so it
  // lands in "default".
  ProcessResult run =
      Explain(absl::StrCat("--demo --pod '", GT_TESTDATA_DIR, "/cmd/default-namespace-pod.yaml'"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "tenant  unknown (tier none: denied)\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "tenant unknown is not allowed GPUs by policy"))
      << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "0 of 7 nodes can take the pod\n")) << run.out;
}

TEST(ExplainTest, UsageErrorsExit2) {
  struct UsageRow {
    std::string name;
    std::string args;
    int exit_code;
  };
  const std::vector<UsageRow> rows = {
      {"unknown flag", "--demo --pod acme/waiting --bogus", 2},
      {"flag without its value", "--demo --pod", 2},
      {"switch given a value", "--demo=yes --pod acme/waiting", 2},
      {"no pod", "--demo", 2},
      {"pod neither a file nor in the cluster", "--demo --pod acme/nosuch", 2},
      {"missing pod file", "--demo --pod /nonexistent/pod.yaml", 2},
      {"bad output format", "--demo --pod acme/waiting -o yaml", 2},
      {"no cluster", "--pod acme/waiting", 2},
      {"missing cluster file", "--cluster-file /nonexistent/cluster.yaml --pod acme/waiting", 2},
      {"missing policy file", "--demo --policy /nonexistent/policy.yaml --pod acme/waiting", 2},
      {"help", "--help", 0},
  };
  for (const UsageRow& row : rows) {
    SCOPED_TRACE(row.name);
    ProcessResult run = Explain(row.args);
    EXPECT_EQ(run.exit_code, row.exit_code) << run.out;
    if (row.exit_code != 0) {
      EXPECT_EQ(run.out, "") << "errors go to stderr";
    }
  }
}

TEST(ExplainTest, UsageGoesToStderr) {
  ProcessResult run = Explain("--bogus");
  const std::string& err = run.err;
  ASSERT_NE(run.exit_code, -1) << "did not exit";
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(absl::StartsWith(err, "error: unknown flag --bogus\n")) << err;
  EXPECT_TRUE(absl::StrContains(err, "usage: gpu-tenancy explain")) << err;
}

// What used to be ignored is refused, naming the flag or the argument.
TEST(ExplainTest, IgnoredInputIsRefusedNamingIt) {
  struct Row {
    std::string args;
    std::string error;  // the first line of stderr
  };
  for (const Row& row : std::vector<Row>{
           {"--demo --pod acme/waiting acme/other", "error: unexpected argument \"acme/other\""},
           {"--demo --pod acme/waiting --policy=", "error: --policy takes a file, not \"\""},
           {"--demo --pod acme/waiting -o yaml", "error: -o must be text or json, not \"yaml\""},
       }) {
    SCOPED_TRACE(row.args);
    ProcessResult run = Explain(row.args);
    EXPECT_EQ(run.exit_code, 2) << run.out;
    EXPECT_EQ(run.err.substr(0, run.err.find('\n')), row.error) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

}  // namespace
