// Fair sharing over real HTTPS: the gpu-tenancy binary serves the fair-sharing scenario
// (test/testdata/fair_share: two nodes of four GPUs, all held; vision, guaranteed 4, holds 6:
// train-1 and train-2 on node-a within its guarantee, train-3 on node-b borrowed; batch,
// guaranteed none, holds 2 on node-b, borrowed; speech, guaranteed 4, waits with asr for 2),
// answering filter and preempt calls shaped like kube-scheduler's captured v1.36 ones.
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/match.h"
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

// A pending pod asking for `gpus` whole GPUs.
std::string SharePendingPod(const std::string& ns, const std::string& name, int gpus,
                            int priority) {
  return absl::StrCat(R"({"metadata":{"name":")", name, R"(","namespace":")", ns,
                      R"(","uid":"uid-)", ns, "-", name, R"("},"spec":{"priority":)", priority,
                      R"(,"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":")",
                      gpus, R"("},"requests":{"nvidia.com/gpu":")", gpus,
                      R"("}}}]},"status":{"phase":"Pending"}})");
}

std::string ShareFilter(const std::string& pod) {
  return absl::StrCat(R"({"Pod":)", pod, R"(,"Nodes":null,"NodeNames":["node-a","node-b"]})");
}

class FairShareScenarioTest : public SharedServeSuite<FairShareScenarioTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/fair_share/cluster.json", "--policy",
            std::string(GT_TESTDATA_DIR) + "/fair_share/policy.yaml"};
  }
};

// speech is within its guarantee and the cluster is full. node-a holds only vision's pods
// within vision's guarantee: nothing there may go. node-b holds two borrowed pods: the filter
// says reclaim would free it, and preempt keeps batch's pod (batch is furthest above its fair
// share), not vision's newer one, though kube-scheduler proposed both.
TEST_F(FairShareScenarioTest, AGuaranteedPodReclaimsTheBorrowedPodOfTheTenantFurthestAbove) {
  const std::string asr = SharePendingPod("speech", "asr", 2, 100);
  ServeProcess::Response filter = server_->Post("/extender/filter", ShareFilter(asr));
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document f = ParseOrDie(filter.body);
  EXPECT_EQ(f["NodeNames"].Size(), 0u);
  ASSERT_TRUE(f["FailedNodes"].HasMember("node-b")) << filter.body;
  EXPECT_EQ(std::string(f["FailedNodes"]["node-b"].GetString()),
            "nvidia.com/gpu: requested 2, free 0 of 4; it is within its tenant's guarantee: "
            "reclaiming GPUs other tenants borrowed here would free it");
  ASSERT_TRUE(f["FailedAndUnresolvableNodes"].HasMember("node-a")) << filter.body;
  EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"]["node-a"].GetString()),
            "nvidia.com/gpu: requested 2, free 0 of 4; no pod here that it may preempt would "
            "free enough");

  // kube-scheduler proposes every lower-priority pod on each node, by UID.
  const std::string proposal = absl::StrCat(
      R"({"Pod":)", asr, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
      R"("node-a":{"Pods":[{"UID":"uid-vision-train-1"},{"UID":"uid-vision-train-2"}],)",
      R"("NumPDBViolations":0},)",
      R"("node-b":{"Pods":[{"UID":"uid-vision-train-3"},{"UID":"uid-batch-sweep-1"}],)",
      R"("NumPDBViolations":0}}})");
  const std::string kept = R"({"NodeNameToMetaVictims":{"node-b":{"Pods":[)"
                           R"({"UID":"uid-batch-sweep-1"}],"NumPDBViolations":0}}})";
  ServeProcess::Response r = server_->Post("/extender/preempt", proposal);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(kept)) << r.body;

  // The same with whole Pod objects (nodeCacheCapable: false), as the cluster file has them.
  rapidjson::Document cluster = ParseOrDie(ReadTestData("fair_share/cluster.json"));
  std::string node_b_pods;
  for (const auto& item : cluster["items"].GetArray()) {
    const rapidjson::Value* spec = common::FindMember(item, "spec");
    if (std::string(common::StringOr(item, "kind")) != "Pod" || !spec ||
        std::string(common::StringOr(*spec, "nodeName")) != "node-b") {
      continue;
    }
    absl::StrAppend(&node_b_pods, node_b_pods.empty() ? "" : ",", common::ToJson(item));
  }
  r = server_->Post(
      "/extender/preempt",
      absl::StrCat(R"({"Pod":)", asr, R"(,"NodeNameToMetaVictims":null,"NodeNameToVictims":{)",
                   R"("node-b":{"Pods":[)", node_b_pods, R"(],"NumPDBViolations":0}}})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(ParseOrDie(r.body) == ParseOrDie(kept)) << r.body;
}

// Reclaim is for pods within their tenant's guarantee: batch, guaranteed none, may not take
// vision's borrowed GPUs, nor borrow what speech's waiting pod is owed.
TEST_F(FairShareScenarioTest, ABorrowingPodMayNotTakeWhatOthersAreOwed) {
  const std::string sweep = SharePendingPod("batch", "sweep-2", 2, 100);
  ServeProcess::Response filter = server_->Post("/extender/filter", ShareFilter(sweep));
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document f = ParseOrDie(filter.body);
  const std::string owed =
      "tenant batch would borrow nvidia.com/gpu (2 requested, 4 above its guarantee of 0), but "
      "of the 0 free in the cluster 2 are owed to other tenants' pending pods";
  EXPECT_EQ(f["NodeNames"].Size(), 0u);
  EXPECT_TRUE(!f.HasMember("FailedNodes") || f["FailedNodes"].ObjectEmpty()) << filter.body;
  for (const char* node : {"node-a", "node-b"}) {
    ASSERT_TRUE(f["FailedAndUnresolvableNodes"].HasMember(node)) << filter.body;
    EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"][node].GetString()), owed);
  }

  const std::string proposal =
      absl::StrCat(R"({"Pod":)", sweep, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                   R"("node-b":{"Pods":[{"UID":"uid-vision-train-3"}],"NumPDBViolations":0}}})");
  ServeProcess::Response r = server_->Post("/extender/preempt", proposal);
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document reply = ParseOrDie(r.body);
  const rapidjson::Value* victims = common::FindMember(reply, "NodeNameToMetaVictims");
  EXPECT_TRUE(victims == nullptr || victims->IsNull() || victims->ObjectEmpty()) << r.body;
}

// Above its limit a pod is unresolvable, the limit named as such, except where the tenant's own
// lower-priority pods would free it: the rule for a tenant's own cap stays.
TEST_F(FairShareScenarioTest, APodAboveItsLimitIsUnresolvable) {
  const std::string at_limit = "tenant vision limit: nvidia.com/gpu 6 of 8 held, 4 requested";
  ServeProcess::Response filter =
      server_->Post("/extender/filter", ShareFilter(SharePendingPod("vision", "big", 4, 0)));
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document f = ParseOrDie(filter.body);
  for (const char* node : {"node-a", "node-b"}) {
    ASSERT_TRUE(f["FailedAndUnresolvableNodes"].HasMember(node)) << filter.body;
    EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"][node].GetString()), at_limit);
  }
  // At priority 100, vision's own two pods on node-a (priority 0) may go.
  filter = server_->Post("/extender/filter", ShareFilter(SharePendingPod("vision", "big", 4, 100)));
  ASSERT_EQ(filter.status, 200) << filter.body;
  f = ParseOrDie(filter.body);
  ASSERT_TRUE(f["FailedNodes"].HasMember("node-a")) << filter.body;
  EXPECT_EQ(std::string(f["FailedNodes"]["node-a"].GetString()),
            at_limit + "; preempting its own lower-priority pods here would free it");
  EXPECT_EQ(std::string(f["FailedAndUnresolvableNodes"]["node-b"].GetString()), at_limit);
}

// Per tenant: guaranteed, held, borrowed, lent and fair share, on /metrics and in
// /debug/allocations.
TEST_F(FairShareScenarioTest, MetricsSayWhoBorrowsAndWhoLends) {
  ServeProcess::Response metrics = server_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  auto value = [&](const std::string& family, const std::string& tenant) {
    return SampleValue(metrics.body, absl::StrCat(family, R"({tenant=")", tenant,
                                                  R"(",resource="nvidia.com/gpu"})"));
  };
  EXPECT_EQ(value("gpu_tenancy_tenant_guaranteed", "vision"), 4);
  EXPECT_EQ(value("gpu_tenancy_tenant_held", "vision"), 6);
  EXPECT_EQ(value("gpu_tenancy_tenant_borrowed", "vision"), 2);
  EXPECT_EQ(value("gpu_tenancy_tenant_borrowed", "batch"), 2);
  EXPECT_EQ(value("gpu_tenancy_tenant_lent", "speech"), 4);
  EXPECT_EQ(value("gpu_tenancy_tenant_lent", "vision"), 0);
  // research (vision and speech) is guaranteed all 8: vision 6 and speech its 2 waiting.
  EXPECT_EQ(value("gpu_tenancy_tenant_fair_share", "vision"), 6);
  EXPECT_EQ(value("gpu_tenancy_tenant_fair_share", "speech"), 2);
  EXPECT_EQ(value("gpu_tenancy_tenant_fair_share", "batch"), 0);
  EXPECT_EQ(testing_support::PromtoolProblems(metrics.body), "");

  ServeProcess::Response allocations = server_->Get("/debug/allocations");
  ASSERT_EQ(allocations.status, 200);
  rapidjson::Document a = ParseOrDie(allocations.body);
  bool found = false;
  for (const auto& tenant : a["tenants"].GetArray()) {
    if (std::string(tenant["tenant"].GetString()) != "batch") continue;
    found = true;
    ASSERT_TRUE(tenant.HasMember("fairShare")) << allocations.body;
    const auto& item = tenant["fairShare"]["items"][0];
    EXPECT_EQ(std::string(item["resource"].GetString()), "nvidia.com/gpu");
    EXPECT_EQ(item["borrowed"].GetInt64(), 2);
    EXPECT_EQ(item["limit"].GetInt64(), 8);
  }
  EXPECT_TRUE(found) << allocations.body;
}

// A policy that promises more than the cluster offers (6 + 6 GPUs guaranteed on 8) loads: the
// policy cannot see the cluster. serve can, and names the overcommit in its log at start and at
// each reload that keeps it; a reload that fits says nothing of it.
TEST(FairShareGuaranteesTest, ServeNamesGuaranteesTheClusterCannotHold) {
  testing_support::TempDir dir;
  const std::string fitting = ReadTestData("fair_share/policy.yaml");
  const std::string overcommitted =
      absl::StrReplaceAll(fitting, {{"guaranteed: {gpus: 4}", "guaranteed: {gpus: 6}"}});
  ASSERT_NE(overcommitted, fitting);
  const std::string policy = dir.File("policy.yaml");
  std::ofstream(policy) << overcommitted;
  const std::string log = dir.File("serve.log");
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/fair_share/cluster.json", "--policy",
       policy},
      log);
  ASSERT_TRUE(serve.ok()) << serve.status();
  auto read_log = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  auto warnings = [&] {
    const std::string text = read_log();
    int n = 0;
    for (size_t at = text.find("guarantees overcommit"); at != std::string::npos;
         at = text.find("guarantees overcommit", at + 1)) {
      ++n;
    }
    return n;
  };
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 300 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return warnings() == 1; })) << read_log();
  const std::string text = read_log();
  // The group of vision and speech is the top level's member that overcommits.
  EXPECT_TRUE(
      absl::StrContains(text, "add up to 12 (research 12), above the cluster's capacity of 8"))
      << text;

  // A reload that fits: logged as reloaded, no new warning.
  std::ofstream(policy) << fitting;
  ASSERT_TRUE(wait_for([&] { return absl::StrContains(read_log(), "policy reloaded"); }))
      << read_log();
  EXPECT_EQ(warnings(), 1) << read_log();
  // One that overcommits again is named again.
  std::ofstream(policy) << overcommitted << "# again\n";
  EXPECT_TRUE(wait_for([&] { return warnings() == 2; })) << read_log();
  EXPECT_EQ((*serve)->Terminate(), 0);
}

}  // namespace
