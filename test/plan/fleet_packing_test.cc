// Packing a whole fleet through MakePlan: multi-GPU replicas on one node, MIG packing failures
// named, fallbacks without MIG, shared clients by memory, MPS apart from MIG, canary slices.
#include "plan/fleet_packing.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using plan::testing::ExpectEveryLayoutValid;
using plan::testing::HighWater;
using plan::testing::Node;
using plan::testing::OneH100;
using plan::testing::Workload;
using ::testing::HasSubstr;

TEST(MakePlanTest, MultiGpuReplicaStaysOnOneNode) {
  WorkloadSpec w =
      Workload("huge-llm", "acme", Trust::kUntrusted, Latency::kSla, HighWater(200 * kGiB));
  w.max_gpus = 4;
  PlanInput in;
  in.fleet = {Node("small", "H100-80GB", 2), Node("big", "H100-80GB", 4)};
  in.workloads = {w};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].gpus_per_replica, 3);
  EXPECT_EQ(plan->baseline_gpus, 3);
  for (const GpuPlan& g : plan->gpus) {
    if (g.use == GpuUse::kExclusive) {
      EXPECT_EQ(g.node, "big");
    }
  }
  in.fleet = {Node("a", "H100-80GB", 2), Node("b", "H100-80GB", 2)};
  plan = MakePlan(in, Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("on one node"));
}

TEST(MakePlanTest, InfeasibleMigPackingNamesTheReplica) {
  WorkloadSpec w = Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(30 * kGiB));
  w.replicas = 3;  // three 3g.40gb cannot share one H100
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("workload \"chat\" replica 3 of 3"));
  EXPECT_THAT(plan.status().message(), HasSubstr("3g.40gb"));
}

TEST(MakePlanTest, GpusWithoutMigFallBackWithWarnings) {
  PlanInput in;
  in.fleet = {Node("l4-0", "L4", 2, "", 23034)};
  in.workloads = {
      Workload("sla", "t1", Trust::kTrusted, Latency::kSla, HighWater(6 * kGiB)),
      Workload("notebook", "t2", Trust::kTrusted, Latency::kBestEffort, HighWater(4 * kGiB)),
      Workload("stranger", "t3", Trust::kUntrusted, Latency::kSla, HighWater(4 * kGiB)),
  };
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  // MPS (for the SLA one) and time-slicing cannot share a node; the untrusted one needs a whole
  // GPU on a node that is not time-sliced either: two GPUs on one node cannot hold all three.
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);

  in.fleet = {Node("l4-0", "L4", 1, "", 23034), Node("l4-1", "L4", 1, "", 23034),
              Node("l4-2", "L4", 1, "", 23034)};
  plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kMps);
  EXPECT_EQ(plan->workloads[1].mechanism, Mechanism::kTimeslice);
  EXPECT_EQ(plan->workloads[2].mechanism, Mechanism::kExclusive);
  for (const WorkloadPlan& w : plan->workloads) {
    ASSERT_EQ(w.warnings.size(), 1u) << w.spec.name;
    EXPECT_THAT(w.warnings[0], HasSubstr("L4 has no MIG"));
  }
  std::set<GpuUse> modes;
  for (const NodePlan& n : plan->nodes) {
    modes.insert(n.full_gpu_mode);
    if (n.full_gpu_mode == GpuUse::kTimeslice || n.full_gpu_mode == GpuUse::kMps) {
      EXPECT_GE(n.shared_replicas, 2);
    }
  }
  EXPECT_EQ(modes, (std::set<GpuUse>{GpuUse::kMps, GpuUse::kTimeslice, GpuUse::kExclusive}));
}

TEST(MakePlanTest, SharedClientsPackByMemory) {
  PlanInput in;
  in.fleet = {Node("l40s", "L40S", 2, "", 46068)};
  WorkloadSpec w = Workload("notebooks", "research", Trust::kTrusted, Latency::kBestEffort,
                            HighWater(10 * kGiB));
  w.replicas = 6;  // 11 GiB each with headroom: four per 45 GiB card
  in.workloads = {w};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->gpus_used, 2);
  EXPECT_EQ(plan->gpus[0].clients.size(), 4u);
  EXPECT_EQ(plan->gpus[1].clients.size(), 2u);
  EXPECT_EQ(plan->nodes[0].shared_replicas, 4);
  EXPECT_LE(plan->gpus[0].shared_memory_mib, 46068);
}

TEST(MakePlanTest, MpsRefusesNodesWithMig) {
  PlanInput in;
  in.fleet = {Node("n1", "H100-80GB", 2)};
  WorkloadSpec mig =
      Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB));
  WorkloadSpec mps =
      Workload("batch", "research", Trust::kTrusted, Latency::kBestEffort, HighWater(8 * kGiB));
  mps.sharing = SharingHint::kMps;
  in.workloads = {mig, mps};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("\"batch\""));
  EXPECT_THAT(plan.status().message(), HasSubstr("without MIG"));
  in.fleet.push_back(Node("n2", "H100-80GB", 1));
  plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->nodes[1].full_gpu_mode, GpuUse::kMps);
  EXPECT_FALSE(plan->nodes[1].has_mig);
}

TEST(MakePlanTest, CanarySlicePerMigNode) {
  PlanInput in;
  in.fleet = {Node("a", "H100-80GB", 1), Node("b", "A100-40GB", 1), Node("c", "H100-80GB", 1)};
  WorkloadSpec h = Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(30 * kGiB));
  h.gpu = "H100-80GB";
  WorkloadSpec a = Workload("small", "acme", Trust::kUntrusted, Latency::kSla, HighWater(3 * kGiB));
  a.gpu = "NVIDIA-A100-SXM4-40GB";  // a GFD product label names the model too
  in.workloads = {h, a};
  in.canary_profile = "1g.10gb";
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectEveryLayoutValid(*plan);
  std::map<std::string, std::string> canary;  // node -> profile
  for (const GpuPlan& g : plan->gpus) {
    for (const PlannedInstance& i : g.instances) {
      if (i.holder.canary()) canary[g.node] = i.profile->name;
    }
  }
  // The A100-40GB's 1g.10gb is a 2-slice profile; node c has no MIG GPU, so no canary.
  EXPECT_EQ(canary, (std::map<std::string, std::string>{{"a", "1g.10gb"}, {"b", "1g.10gb"}}));
}

}  // namespace
}  // namespace plan
