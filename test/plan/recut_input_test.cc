// The re-cut search's input read off a cluster (plan/recut_input.h), on the recut fleet of
// test/testdata/recut: which nodes may be re-cut (mixed strategy, settled, a MIG pool) and what
// each would drain, which pending pods ask for MIG instances only, and which nodes each may use
// (the filter's tier and quota rules). plan_recut_test drives the same through the binary.
#include "plan/recut_input.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/recut_fleet.h"

namespace plan {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

std::vector<std::string> NodeNames(const RecutProblem& problem) {
  std::vector<std::string> out;
  for (const RecutNode& n : problem.nodes) out.push_back(n.name);
  return out;
}

const RecutNode& NodeNamed(const RecutProblem& problem, const std::string& name) {
  for (const RecutNode& n : problem.nodes) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no candidate node " << name;
  static const RecutNode none;
  return none;
}

TEST(RecutInputTest, CandidatesAreSettledMixedNodesInMigPools) {
  testing::RecutFleet fleet;
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, fleet.data.pods);
  // unsettled is mid-reconfiguration; shared-idle's pool shares its instances (mig-shared).
  EXPECT_THAT(NodeNames(in.problem), ElementsAre("busy", "one-pod"));
  ASSERT_EQ(in.current_config.size(), in.problem.nodes.size());
  EXPECT_EQ(in.current_config[0], "all-1g.10gb");

  const RecutNode& busy = NodeNamed(in.problem, "busy");
  EXPECT_EQ(busy.gpus, 1);
  EXPECT_EQ(busy.drained_pods, 2);
  EXPECT_THAT(busy.drained_tenants, ElementsAre("bank", "research"));
  const RecutNode& one_pod = NodeNamed(in.problem, "one-pod");
  EXPECT_EQ(one_pod.drained_pods, 1);
  // What a re-cut must keep: the bank pod's 1g.10gb and the canary reserve's.
  ASSERT_EQ(one_pod.keep.size(), 2u);
  EXPECT_EQ(one_pod.keep[0]->name, "1g.10gb");
  EXPECT_EQ(one_pod.keep[1]->name, "1g.10gb");
  // Seven 1g.10gb, one held, one kept free for canary pods.
  EXPECT_THAT(one_pod.free_now, ElementsAre(Pair("1g.10gb", 5)));
}

TEST(RecutInputTest, PendingMigPodsWithTheNodesTheirTierAndQuotaAllow) {
  testing::RecutFleet fleet;
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, fleet.data.pods);
  EXPECT_EQ(in.pending_pods, 2);
  ASSERT_EQ(in.problem.pods.size(), 2u);
  const RecutPod& acme = in.problem.pods[0];
  EXPECT_EQ(acme.name, "acme/wants-3g");
  EXPECT_EQ(acme.tenant, "acme");
  EXPECT_THAT(acme.profiles, ElementsAre(Pair("3g.40gb", 1)));
  EXPECT_THAT(acme.nodes, ElementsAre(0u, 1u));
  const RecutPod& research = in.problem.pods[1];
  EXPECT_EQ(research.name, "research/wants-2g");
  EXPECT_THAT(research.profiles, ElementsAre(Pair("2g.20gb", 1)));
  EXPECT_THAT(research.nodes, ElementsAre(0u, 1u));
  EXPECT_THAT(in.skipped, IsEmpty());
}

TEST(RecutInputTest, BoundFinishedAndNonMigPodsAreNotPendingMigDemand) {
  testing::RecutFleet fleet;
  std::vector<topology::PodFacts> pods = fleet.data.pods;
  topology::PodFacts whole = pods.back();
  whole.name = "wants-gpu";
  whole.containers[0].requests = {{"nvidia.com/gpu", topology::Quantity::FromUnits(1)}};
  whole.containers[0].limits = whole.containers[0].requests;
  pods.push_back(whole);
  topology::PodFacts done = pods.back();
  done.name = "done";
  done.phase = "Succeeded";
  pods.push_back(done);
  topology::PodFacts other = fleet.data.pods.back();
  other.namespace_name = "stranger";
  pods.push_back(other);
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, pods);
  EXPECT_EQ(in.pending_pods, 4);  // the whole-GPU pod is a pending GPU pod, but no MIG demand
  ASSERT_EQ(in.problem.pods.size(), 3u);
  // A pod of no tenant (unknownTenant: deny) is demand no node may serve: unserved, with why.
  const RecutPod& stranger = in.problem.pods[2];
  EXPECT_EQ(stranger.name, "stranger/wants-2g");
  EXPECT_TRUE(stranger.nodes.empty());
  EXPECT_THAT(in.skipped, IsEmpty());
}

}  // namespace
}  // namespace plan
