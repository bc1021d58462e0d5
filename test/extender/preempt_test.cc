// The preempt verb as a pure function (extender/preempt.h) on the preemption scenario of
// test/testdata/preemption (three nodes with one 3g.40gb each: acme at its quota of one with a
// priority-500 pod on node-a, bank's priority-10 pod on node-b, dev's on node-c, and dev's pods
// open to anyone's preemption): what it decides per node and why, beside the reply body that
// preempt_integration_test checks over HTTPS.
#include "extender/preempt.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/extender/demo_model.h"
#include "wire/k8s_codec.h"

namespace extender {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

topology::ModelState PreemptionScenario() {
  absl::StatusOr<topology::ClusterData> data =
      wire::ParseClusterText(testing::ReadTestData("preemption/cluster.json"));
  absl::StatusOr<topology::Policy> policy =
      common::LoadPolicy(testing::ReadTestData("preemption/policy.yaml"));
  EXPECT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(policy.ok()) << policy.status();
  topology::ModelState state;
  state.policy = std::make_shared<const topology::Policy>(
      policy.ok() ? *std::move(policy) : topology::Policy::AllowAll());
  state.catalog = &common::BuiltinCatalog();
  state.snapshot = std::make_shared<const topology::ClusterSnapshot>(topology::BuildSnapshot(
      data.ok() ? *data : topology::ClusterData{}, *state.catalog, *state.policy));
  return state;
}

std::string Pending(const std::string& ns, const std::string& name, int priority) {
  return absl::StrCat(
      R"({"metadata":{"name":")", name, R"(","namespace":")", ns, R"(","uid":"uid-)", ns, "-", name,
      R"("},"spec":{"priority":)", priority,
      R"(,"containers":[{"name":"main","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
      R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}})");
}

// kube-scheduler's proposal by UID (nodeCacheCapable: true): each node's one GPU pod.
std::string Proposal(const std::string& pod) {
  return absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                      R"("node-a":{"Pods":[{"UID":"uid-acme-old"}],"NumPDBViolations":0},)",
                      R"("node-b":{"Pods":[{"UID":"uid-bank-risk"}],"NumPDBViolations":0},)",
                      R"("node-c":{"Pods":[{"UID":"uid-dev-scratch"}],"NumPDBViolations":1}}})");
}

std::vector<std::string> Outcomes(const PreemptReply& reply) {
  std::vector<std::string> out;
  for (const PreemptNode& n : reply.nodes) {
    out.push_back(absl::StrCat(n.node, " ", OutcomeName(n.outcome)));
  }
  return out;
}

TEST(PreemptTest, ATenantAtItsQuotaMayEvictOnlyItsOwnPods) {
  const topology::ModelState state = PreemptionScenario();
  PreemptReply reply = Preempt(Proposal(Pending("acme", "urgent", 1000)), &state);
  ASSERT_EQ(reply.http_status, 200) << reply.body;
  EXPECT_EQ(reply.pod, "acme/urgent");
  EXPECT_EQ(reply.tenant, "acme");
  EXPECT_EQ(reply.tier, "untrusted");
  EXPECT_THAT(Outcomes(reply), ElementsAre("node-a kept", "node-b dropped", "node-c dropped"));
  EXPECT_THAT(reply.nodes[0].victims, ElementsAre("acme/train-old"));  // resolved from its UID
  // Evicting bank's or dev's pod would not make room in acme's own budget.
  EXPECT_THAT(reply.nodes[1].reason, HasSubstr("tenant acme quota"));
  EXPECT_THAT(reply.nodes[2].reason, HasSubstr("tenant acme quota"));
}

TEST(PreemptTest, AnotherTenantsProtectedPodDropsItsNode) {
  const topology::ModelState state = PreemptionScenario();
  PreemptReply reply = Preempt(Proposal(Pending("bank", "new", 1000)), &state);
  ASSERT_EQ(reply.http_status, 200) << reply.body;
  EXPECT_THAT(Outcomes(reply), ElementsAre("node-a dropped", "node-b kept", "node-c kept"));
  // acme's pod is protected from bank, and nothing else there would free the slice.
  EXPECT_THAT(reply.nodes[0].reason,
              HasSubstr("no pod here that it may preempt would free enough"));
  EXPECT_THAT(reply.nodes[1].victims, ElementsAre("bank/risk"));
  EXPECT_THAT(reply.nodes[2].victims, ElementsAre("dev/scratch"));  // dev is open to all
}

TEST(PreemptTest, BeforeTheFirstSyncEveryNodeIsDropped) {
  PreemptReply reply = Preempt(Proposal(Pending("bank", "new", 1000)), nullptr);
  ASSERT_EQ(reply.http_status, 200) << reply.body;
  EXPECT_THAT(Outcomes(reply), ElementsAre("node-a dropped", "node-b dropped", "node-c dropped"));
}

TEST(PreemptTest, AMalformedCallIs400WithAReason) {
  const topology::ModelState state = PreemptionScenario();
  for (const char* body : {"", "{", R"({"Pod":{}})", R"({"Pod":7,"NodeNameToVictims":{}})"}) {
    PreemptReply reply = Preempt(body, &state);
    EXPECT_EQ(reply.http_status, 400) << body;
    EXPECT_FALSE(reply.body.empty()) << body;
    EXPECT_TRUE(reply.nodes.empty()) << body;
  }
}

}  // namespace
}  // namespace extender
