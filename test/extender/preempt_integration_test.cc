// The preempt verb over real HTTPS: the gpu-tenancy binary serves the preemption scenario
// (test/testdata/preemption: three nodes with one 3g.40gb each; acme at its quota of one with
// a priority-500 pod on node-a, bank's priority-10 pod on node-b, dev's on node-c under a
// budget that allows no disruption) and kube-scheduler's captured v1.36 preempt call.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::SharedServeSuite;

std::string PendingPod(const std::string& ns, const std::string& name, int priority) {
  return absl::StrCat(
      R"({"metadata":{"name":")", name, R"(","namespace":")", ns, R"(","uid":"uid-)", ns, "-", name,
      R"("},"spec":{"priority":)", priority,
      R"(,"containers":[{"name":"main","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
      R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}})");
}

// kube-scheduler's proposal, names only: on every node, the node's one pod.
std::string MetaVictims(const std::string& pod) {
  return absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                      R"("node-a":{"Pods":[{"UID":"uid-acme-old"}],"NumPDBViolations":0},)",
                      R"("node-b":{"Pods":[{"UID":"uid-bank-risk"}],"NumPDBViolations":0},)",
                      R"("node-c":{"Pods":[{"UID":"uid-dev-scratch"}],"NumPDBViolations":1}}})");
}

// The same with whole Pod objects (nodeCacheCapable: false), as the cluster file has them.
std::string FullVictims(const std::string& pod) {
  rapidjson::Document cluster = ParseOrDie(ReadTestData("preemption/cluster.json"));
  std::map<std::string, std::string> by_node;
  for (const auto& item : cluster["items"].GetArray()) {
    const rapidjson::Value* spec = common::FindMember(item, "spec");
    if (std::string(common::StringOr(item, "kind")) != "Pod" || !spec) continue;
    std::string node(common::StringOr(*spec, "nodeName"));
    std::string pod = common::ToJson(item);
    // Each node's one GPU pod; the CPU pods beside them are other tests' victims.
    if (!node.empty() && pod.find("nvidia.com/") != std::string::npos) by_node[node] = pod;
  }
  std::string out =
      absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToMetaVictims":null,"NodeNameToVictims":{)");
  bool first = true;
  for (const auto& [node, victim] : by_node) {
    absl::StrAppend(&out, first ? "" : ",", "\"", node, R"(":{"Pods":[)", victim,
                    R"(],"NumPDBViolations":0})");
    first = false;
  }
  return out + "}}";
}

std::string AuditPath() { return ::testing::TempDir() + "/preempt-audit.log"; }

class PreemptScenarioTest : public SharedServeSuite<PreemptScenarioTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    std::remove(AuditPath().c_str());
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/preemption/cluster.json",
            "--policy",       std::string(GT_TESTDATA_DIR) + "/preemption/policy.yaml",
            "--audit-log",    AuditPath()};
  }
};

// acme is at its quota: only evicting its own lower-priority pod can make room, and only on
// node-a; bank's and dev's pods are left alone.
TEST_F(PreemptScenarioTest, APodOverItsQuotaPreemptsOnlyItsOwnTenant) {
  const std::string urgent = PendingPod("acme", "urgent", 1000);
  ServeProcess::Response filter =
      server_->Post("/extender/filter",
                    absl::StrCat(R"({"Pod":)", urgent,
                                 R"(,"Nodes":null,"NodeNames":["node-a","node-b","node-c"]})"));
  ASSERT_EQ(filter.status, 200);
  rapidjson::Document f = ParseOrDie(filter.body);
  const std::string at_quota = "tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested";
  EXPECT_EQ(f["NodeNames"].Size(), 0u);
  ASSERT_TRUE(f["FailedNodes"].HasMember("node-a"));
  EXPECT_EQ(std::string(f["FailedNodes"]["node-a"].GetString()),
            at_quota + "; preempting its own lower-priority pods here would free it");
  EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"]["node-b"].GetString()), at_quota);
  EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"]["node-c"].GetString()), at_quota);

  ServeProcess::Response r = server_->Post("/extender/preempt", MetaVictims(urgent));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(ReadTestData("preemption/acme-urgent.reply.json")))
      << r.body;
}

// bank has no quota: its own pod on node-b and dev's (anyone may preempt dev) on node-c may go;
// acme's pod on node-a is protected, so node-a is dropped.
TEST_F(PreemptScenarioTest, ProtectedTenantsNodesAreDroppedInBothEncodings) {
  const std::string pod = PendingPod("bank", "new", 1000);
  for (const std::string& body : {MetaVictims(pod), FullVictims(pod)}) {
    SCOPED_TRACE(body.substr(0, 120));
    ServeProcess::Response r = server_->Post("/extender/preempt", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(ReadTestData("preemption/bank-new.reply.json")))
        << r.body;
  }
}

// kube-scheduler may also pick pods outside the GPU model (for CPU or memory): kept when the
// policy lets the preemptor evict them, the node dropped when not, or when only a UID says who.
TEST_F(PreemptScenarioTest, VictimsOutsideTheModelAreKeptOnlyWhenThePolicyAllows) {
  const std::string pod = PendingPod("bank", "new", 1000);
  auto cpu_pod = [](const std::string& ns, const std::string& name) {
    return absl::StrCat(R"({"metadata":{"name":")", name, R"(","namespace":")", ns,
                        R"(","uid":"uid-cpu-)", ns,
                        R"("},"spec":{"nodeName":"node-b",)"
                        R"("priority":5,"containers":[{"name":"c","resources":{"requests":)"
                        R"({"cpu":"30"}}}]},"status":{"phase":"Running"}})");
  };
  rapidjson::Document cluster = ParseOrDie(ReadTestData("preemption/cluster.json"));
  std::string risk;
  for (const auto& item : cluster["items"].GetArray()) {
    const rapidjson::Value* meta = common::FindMember(item, "metadata");
    if (meta && std::string(common::StringOr(*meta, "name")) == "risk") risk = common::ToJson(item);
  }
  ASSERT_FALSE(risk.empty());
  auto full = [&](const std::string& other) {
    return absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToVictims":{"node-b":{"Pods":[)", risk, ",",
                        other, R"(],"NumPDBViolations":0}}})");
  };
  ServeProcess::Response own = server_->Post("/extender/preempt", full(cpu_pod("bank", "batch")));
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_TRUE(ParseOrDie(own.body) ==
              ParseOrDie(R"({"NodeNameToMetaVictims":{"node-b":{"Pods":[{"UID":"uid-bank-risk"},)"
                         R"({"UID":"uid-cpu-bank"}],"NumPDBViolations":0}}})"))
      << own.body;
  ServeProcess::Response other = server_->Post("/extender/preempt", full(cpu_pod("acme", "batch")));
  ASSERT_EQ(other.status, 200) << other.body;
  EXPECT_EQ(other.body, R"({"NodeNameToMetaVictims":{}})");
  ServeProcess::Response unknown = server_->Post(
      "/extender/preempt",
      absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToMetaVictims":{"node-b":{"Pods":[)",
                   R"({"UID":"uid-bank-risk"},{"UID":"uid-who"}],"NumPDBViolations":0}}})"));
  ASSERT_EQ(unknown.status, 200) << unknown.body;
  EXPECT_EQ(unknown.body, R"({"NodeNameToMetaVictims":{}})");
}

// nodeCacheCapable: true names every victim by UID alone. Those outside the GPU model (bank's and
// acme's CPU pods on node-b, priority 5) are resolved from the watched pods, then judged as
// the Pod objects would be: bank's kept, acme's protecting the node. A UID the watch has not
// seen on that node (unknown, or a pod bound elsewhere) drops the node: it may be anyone's.
TEST_F(PreemptScenarioTest, UidOnlyVictimsAreResolvedFromTheWatchedPods) {
  const std::string pod = PendingPod("bank", "new", 1000);
  auto meta = [&](const std::string& node, const std::vector<std::string>& uids, int pdb) {
    std::string victims;
    for (const std::string& uid : uids) {
      absl::StrAppend(&victims, victims.empty() ? "" : ",", R"({"UID":")", uid, R"("})");
    }
    return absl::StrCat(R"({"Pod":)", pod,
                        R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{")", node,
                        R"(":{"Pods":[)", victims, R"(],"NumPDBViolations":)", pdb, "}}}");
  };
  struct Case {
    std::string name;
    std::string body;
    std::string reply;
  };
  const std::vector<Case> cases = {
      {"the tenant's own CPU pod beside its GPU pod",
       meta("node-b", {"uid-bank-risk", "uid-cpu-bank"}, 0),
       R"({"NodeNameToMetaVictims":{"node-b":{"Pods":[{"UID":"uid-bank-risk"},)"
       R"({"UID":"uid-cpu-bank"}],"NumPDBViolations":0}}})"},
      {"another tenant's CPU pod", meta("node-b", {"uid-bank-risk", "uid-cpu-acme"}, 0),
       R"({"NodeNameToMetaVictims":{}})"},
      {"a UID nobody knows", meta("node-b", {"uid-bank-risk", "uid-who"}, 0),
       R"({"NodeNameToMetaVictims":{}})"},
      {"a pod the watch has on another node",
       meta("node-c", {"uid-dev-scratch", "uid-cpu-bank"}, 1), R"({"NodeNameToMetaVictims":{}})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServeProcess::Response r = server_->Post("/extender/preempt", c.body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(c.reply)) << r.body;
  }
}

// A pod that asks for no GPU reaches the preempt verb only through an extender entry without
// managedResources (the shipped scheduler configurations have one). kube-scheduler's victims
// for it stand, except another tenant's GPU pod the policy protects: acme's CPU-only pod may
// take acme's own lower-priority GPU pod (node-a) and dev's (node-c: anyone may preempt dev),
// and CPU pods of any tenant, but not bank's GPU pod (node-b), with victims given either way.
TEST_F(PreemptScenarioTest, APodWithoutGpusEvictsNoProtectedGpuPod) {
  const std::string cpu_only = absl::StrCat(
      R"({"metadata":{"name":"api","namespace":"acme","uid":"uid-acme-api"},)"
      R"("spec":{"priority":1000,"containers":[{"name":"main","resources":{"requests":)"
      R"({"cpu":"30"}}}]},"status":{"phase":"Pending"}})");
  const std::string kept_a_and_c =
      R"({"NodeNameToMetaVictims":{"node-a":{"Pods":[{"UID":"uid-acme-old"}],"NumPDBViolations":0},)"
      R"("node-c":{"Pods":[{"UID":"uid-dev-scratch"}],"NumPDBViolations":1}}})";
  {
    ServeProcess::Response r = server_->Post("/extender/preempt", MetaVictims(cpu_only));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(kept_a_and_c)) << r.body;
  }
  {
    ServeProcess::Response r = server_->Post("/extender/preempt", FullVictims(cpu_only));
    ASSERT_EQ(r.status, 200) << r.body;
    rapidjson::Document got = ParseOrDie(r.body);
    EXPECT_TRUE(got["NodeNameToMetaVictims"].HasMember("node-a")) << r.body;
    EXPECT_FALSE(got["NodeNameToMetaVictims"].HasMember("node-b")) << r.body;
    EXPECT_TRUE(got["NodeNameToMetaVictims"].HasMember("node-c")) << r.body;
  }
  ServeProcess::Response cpu_victim = server_->Post(
      "/extender/preempt",
      absl::StrCat(R"({"Pod":)", cpu_only, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                   R"("node-b":{"Pods":[{"UID":"uid-cpu-bank"}],"NumPDBViolations":0}}})"));
  ASSERT_EQ(cpu_victim.status, 200) << cpu_victim.body;
  EXPECT_TRUE(ParseOrDie(cpu_victim.body) ==
              ParseOrDie(R"({"NodeNameToMetaVictims":{"node-b":{"Pods":[{"UID":"uid-cpu-bank"}],)"
                         R"("NumPDBViolations":0}}})"))
      << cpu_victim.body;
  ServeProcess::Response unknown = server_->Post(
      "/extender/preempt",
      absl::StrCat(R"({"Pod":)", cpu_only, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                   R"("node-b":{"Pods":[{"UID":"uid-who"}],"NumPDBViolations":0}}})"));
  ASSERT_EQ(unknown.status, 200) << unknown.body;
  EXPECT_EQ(unknown.body, R"({"NodeNameToMetaVictims":{}})");
}

TEST_F(PreemptScenarioTest, ALowerPriorityPreemptorGetsNoVictims) {
  ServeProcess::Response r =
      server_->Post("/extender/preempt", MetaVictims(PendingPod("bank", "tiny", 5)));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"NodeNameToMetaVictims":{}})");
}

TEST_F(PreemptScenarioTest, MalformedCallsAre400WithAReason) {
  ServeProcess::Response r = server_->Post("/extender/preempt", R"({"Pod":{}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(std::string(common::StringOr(ParseOrDie(r.body), "error")),
            "ExtenderPreemptionArgs: NodeNameToMetaVictims and NodeNameToVictims are both "
            "missing or null");
}

// Every answer that removed or changed victims is in the audit log and counted by tenant.
TEST_F(PreemptScenarioTest, ChangedAnswersAreAuditedAndCounted) {
  ServeProcess::Response r =
      server_->Post("/extender/preempt", MetaVictims(PendingPod("acme", "audited", 1000)));
  ASSERT_EQ(r.status, 200);
  std::ifstream in(AuditPath());
  std::stringstream text;
  text << in.rdbuf();
  bool dropped_bank = false;
  std::string line;
  while (std::getline(text, line)) {
    rapidjson::Document record = ParseOrDie(line);
    if (std::string(common::StringOr(record, "pod")) != "audited") continue;
    EXPECT_EQ(std::string(common::StringOr(record, "action")), "preempt");
    EXPECT_EQ(std::string(common::StringOr(record, "tenant")), "acme");
    if (std::string(common::StringOr(record, "node")) == "node-b") {
      dropped_bank = true;
      EXPECT_EQ(std::string(common::StringOr(record, "decision")), "dropped");
      EXPECT_EQ(std::string(record["proposedVictims"][0].GetString()), "bank/risk");
      EXPECT_EQ(std::string(common::StringOr(record, "reason")),
                "tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested");
    }
    EXPECT_NE(std::string(common::StringOr(record, "node")), "node-a");  // kept: not audited
  }
  EXPECT_TRUE(dropped_bank) << text.str();
  ServeProcess::Response metrics = server_->Get("/metrics");
  std::optional<double> dropped = SampleValue(
      metrics.body, R"(gpu_tenancy_preempt_nodes_total{tenant="acme",outcome="dropped"})");
  ASSERT_TRUE(dropped.has_value()) << metrics.body;
  EXPECT_GE(*dropped, 2);
  EXPECT_GE(
      SampleValue(metrics.body, R"(gpu_tenancy_preempt_nodes_total{tenant="acme",outcome="kept"})")
          .value_or(0),
      1);
}

// A preemptor whose GPU comes through a ResourceClaim (reaching the verb through the entry
// without managedResources; the model counts claims, not a demand): GPU pods among its victims,
// including those whose GPUs are claims too, stand only where the policy lets it evict them,
// its other victims as kube-scheduler chose them, and victims named by UID only are resolved
// from the watched pods (test/testdata/preemption/dra-cluster.json: on node-a, team-a's
// claim-holding pod and a CPU pod of each tenant; on node-b, team-b's claim-holding pod; the
// preemptor's claim tenant-a-training is not allocated yet).
class DraPreemptTest : public SharedServeSuite<DraPreemptTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/preemption/dra-cluster.json",
            "--policy", std::string(GT_TESTDATA_DIR) + "/preemption/dra-policy.yaml"};
  }
};

TEST_F(DraPreemptTest, AClaimPodEvictsNoOtherTenantsGpuPod) {
  const std::string urgent =
      R"({"metadata":{"name":"urgent","namespace":"team-a","uid":"uid-urgent"},"spec":{)"
      R"("priority":100,"resourceClaims":[{"name":"gpu","resourceClaimName":"tenant-a-training"}],)"
      R"("containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}]},)"
      R"("status":{"phase":"Pending"}})";
  const std::string inference = "fb3d8125-8011-4e1c-b596-937fd557029b";   // team-a, node-a
  const std::string team_b_gpu = "c3f1a2b4-9d8e-4c7b-a6f5-e4d3c2b1a090";  // team-b, node-b
  auto meta = [&](const std::string& node, const std::vector<std::string>& uids) {
    std::string victims;
    for (const std::string& uid : uids) {
      absl::StrAppend(&victims, victims.empty() ? "" : ",", R"({"UID":")", uid, R"("})");
    }
    return absl::StrCat(R"({"Pod":)", urgent,
                        R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{")", node,
                        R"(":{"Pods":[)", victims, R"(],"NumPDBViolations":0}}})");
  };
  auto kept = [](const std::string& node, const std::vector<std::string>& uids) {
    std::string victims;
    for (const std::string& uid : uids) {
      absl::StrAppend(&victims, victims.empty() ? "" : ",", R"({"UID":")", uid, R"("})");
    }
    return absl::StrCat(R"({"NodeNameToMetaVictims":{")", node, R"(":{"Pods":[)", victims,
                        R"(],"NumPDBViolations":0}}})");
  };
  struct Case {
    std::string name, body, reply;
  };
  const std::vector<Case> cases = {
      {"its own tenant's claim pod and CPU pod", meta("node-a", {inference, "uid-cpu-a"}),
       kept("node-a", {inference, "uid-cpu-a"})},
      {"another tenant's CPU pod", meta("node-a", {inference, "uid-cpu-b"}),
       kept("node-a", {inference, "uid-cpu-b"})},
      {"another tenant's claim pod", meta("node-b", {team_b_gpu}),
       R"({"NodeNameToMetaVictims":{}})"},
      {"a UID nobody knows", meta("node-a", {inference, "uid-who"}),
       R"({"NodeNameToMetaVictims":{}})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServeProcess::Response r = server_->Post("/extender/preempt", c.body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(c.reply)) << r.body;
  }
}

// kube-scheduler v1.36's own call, unchanged, against the cluster it was captured on: the
// priority-10 pod holding node-a's only 3g.40gb belongs to the preemptor's tenant, so the
// answer keeps it, the same as the captured echo reply kube-scheduler acted on.
class CapturedPreemptTest : public SharedServeSuite<CapturedPreemptTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/preemption/fixture-cluster.json",
            "--policy", std::string(GT_TESTDATA_DIR) + "/preemption/fixture-policy.yaml"};
  }
};

TEST_F(CapturedPreemptTest, TheCapturedCallGetsItsVictimKept) {
  ServeProcess::Response r = server_->Post(
      "/extender/preempt", ReadTestData("extender/preempt-nodecache-true.v1.36.request.json"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(ParseOrDie(r.body) ==
              ParseOrDie(ReadTestData("extender/preempt-nodecache-true.v1.36.reply-echo.json")))
      << r.body;
}

}  // namespace
