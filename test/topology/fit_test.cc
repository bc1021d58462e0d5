// Fit (three verdicts, each with its rule, its numbers and its exact reason), Score and
// ChooseSharedGpu on nodes built from realistic labels.
#include "topology/fit.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"

namespace topology {
namespace {

using namespace testing_fleet;  // NOLINT: the fixture's small vocabulary

using FitTest = testing_fleet::FleetTest;

struct FitRow {
  std::string name;
  GpuDemand demand;
  std::string ns;
  std::string node;
  NodeOccupancy occupancy;
  Verdict verdict;
  std::string reason;
  bool canary_policy = false;
  bool canary_pod = false;
};

TEST_F(FitTest, Verdicts) {
  const GpuDemand one_3g = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const GpuDemand one_1g = Demand({{"nvidia.com/mig-1g.10gb", 1}});
  const GpuDemand one_gpu = Demand({{"nvidia.com/gpu", 1}});
  const GpuDemand one_shared = Demand({{"nvidia.com/gpu.shared", 1}});
  const std::vector<FitRow> rows = {
      // Gates, in the order Fit applies them.
      {"no GPU demand fits anywhere, even for a denied tenant",
       Demand({}),
       "stranger",
       "cpu",
       {},
       Verdict::kFits,
       ""},
      {"unknown tenant is denied",
       one_gpu,
       "stranger",
       "excl",
       {},
       Verdict::kUnresolvable,
       "tenant unknown is not allowed GPUs by policy"},
      {"node without GPUs",
       one_gpu,
       "research",
       "cpu",
       {},
       Verdict::kUnresolvable,
       "no NVIDIA GPU on node"},
      {"MIG reconfiguration",
       one_3g,
       "acme",
       "mig-reconfiguring",
       {},
       Verdict::kUnresolvable,
       "MIG reconfiguration in progress (nvidia.com/mig.config.state=pending)"},
      {"MIG geometry drifted from its config",
       one_3g,
       "acme",
       "mig-drifted",
       {},
       Verdict::kUnresolvable,
       "MIG geometry differs from nvidia.com/mig.config=all-3g.40gb (state success): mig-manager "
       "is about to re-cut it; nvidia.com/mig-3g.40gb: expected 4, node shows 2"},
      {"pool the policy does not define",
       one_gpu,
       "research",
       "custom-pool",
       {},
       Verdict::kUnresolvable,
       "pool gpu-custom is not defined in the policy"},
      {"tier may not use the labelled pool",
       one_shared,
       "acme",
       "ts",
       {},
       Verdict::kUnresolvable,
       "pool gpu-timeslice (timeslice) is not allowed for tier untrusted"},
      {"tier may not use the derived pool",
       one_shared,
       "acme",
       "ts-unlabelled",
       {},
       Verdict::kUnresolvable,
       "pool timeslice (timeslice) is not allowed for tier untrusted"},
      {"tier gate applies before the resource check",
       one_gpu,
       "acme",
       "ts",
       {},
       Verdict::kUnresolvable,
       "pool gpu-timeslice (timeslice) is not allowed for tier untrusted"},
      {"resource mode gate inside an allowed pool",
       Demand({{"nvidia.com/mig-1g.10gb.shared", 1}}),
       "acme",
       "mig-shared",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/mig-1g.10gb.shared is mig-shared here, not allowed for tier untrusted"},
      {"trusted tier may use the shared MIG instance",
       Demand({{"nvidia.com/mig-1g.10gb.shared", 1}}),
       "research",
       "mig-shared",
       {},
       Verdict::kFits,
       ""},
      {"resource not offered",
       Demand({{"nvidia.com/mig-4g.40gb", 1}}),
       "acme",
       "mig",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/mig-4g.40gb: not offered by node"},
      {"whole GPU asked of a MIG node",
       one_gpu,
       "research",
       "mig",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/gpu: not offered by node"},
      {"resource advertised with zero allocatable",
       one_shared,
       "research",
       "ts-empty",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/gpu.shared: not offered by node"},
      {"MIG profile the GPU model does not have",
       Demand({{"nvidia.com/mig-9g.99gb", 1}}),
       "acme",
       "mig-odd-profile",
       {},
       Verdict::kUnresolvable,
       "GPU model H100-80GB has no MIG profile 9g.99gb"},
      // Counts.
      {"MIG instance free", one_3g, "acme", "mig", Used({{"nvidia.com/mig-3g.40gb", 1}}),
       Verdict::kFits, ""},
      {"MIG instances all taken", one_3g, "acme", "mig", Used({{"nvidia.com/mig-3g.40gb", 2}}),
       Verdict::kUnschedulable, "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2"},
      {"whole GPUs partly taken", Demand({{"nvidia.com/gpu", 2}}), "research", "excl",
       Used({{"nvidia.com/gpu", 3}}), Verdict::kUnschedulable,
       "nvidia.com/gpu: requested 2, free 1 of 4"},
      {"over-counted occupancy shows zero free", one_gpu, "research", "excl",
       Used({{"nvidia.com/gpu", 5}}), Verdict::kUnschedulable,
       "nvidia.com/gpu: requested 1, free 0 of 4"},
      {"more than the node will ever have",
       Demand({{"nvidia.com/gpu", 8}}),
       "research",
       "excl",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/gpu: requested 8, node has 4"},
      {"every resource must fit: the full one is named",
       Demand({{"nvidia.com/mig-1g.10gb", 1}, {"nvidia.com/mig-3g.40gb", 1}}), "acme", "mig",
       Used({{"nvidia.com/mig-3g.40gb", 2}}), Verdict::kUnschedulable,
       "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2"},
      {"exclusive GPU fits", one_gpu, "acme", "excl", Used({{"nvidia.com/gpu", 3}}), Verdict::kFits,
       ""},
      // Canary reserve.
      {"canary reserve held from ordinary pods", one_1g, "acme", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 3}}), Verdict::kUnschedulable,
       "nvidia.com/mig-1g.10gb: requested 1, free 0 of 4 (canary reserve held)", true, false},
      {"canary pod may use the reserve", one_1g, "acme", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 3}}), Verdict::kFits, "", true, true},
      {"ordinary pod outside the reserve", one_1g, "acme", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 2}}), Verdict::kFits, "", true, false},
      {"node whose only instance is the reserve",
       one_1g,
       "acme",
       "mig-one-1g",
       {},
       Verdict::kUnresolvable,
       "nvidia.com/mig-1g.10gb: requested 1, node has 0 outside the canary reserve",
       true,
       false},
      {"reserve is per profile", one_3g, "acme", "mig", Used({{"nvidia.com/mig-3g.40gb", 1}}),
       Verdict::kFits, "", true, false},
      {"no canary in the policy: the last instance is free", one_1g, "acme", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 3}}), Verdict::kFits, ""},
  };
  for (const FitRow& row : rows) {
    SCOPED_TRACE(row.name);
    const Policy& policy = row.canary_policy ? canary_policy_ : policy_;
    const PodContext ctx = Context(policy, row.ns, row.canary_pod);  // outlives `r`'s views
    FitResult r = Fit(row.demand, ctx, Supply(row.node), row.occupancy);
    EXPECT_EQ(VerdictName(r.verdict), VerdictName(row.verdict));
    EXPECT_EQ(r.Reason(), row.reason);
    EXPECT_EQ(r.fits(), row.verdict == Verdict::kFits);
  }
}

TEST_F(FitTest, GpuMemory) {
  const GpuDemand shared_16g = Demand({{"nvidia.com/gpu.shared", 1}}, 16384);
  const std::vector<FitRow> rows = {
      {"shared GPU with room", shared_16g, "research", "ts", {}, Verdict::kFits, ""},
      {"per-GPU memory known: one GPU has exactly enough", shared_16g, "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {{0, 24576}, {1, 32768}}), Verdict::kFits, ""},
      {"per-GPU memory known: no single GPU has enough", shared_16g, "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {{0, 30000}, {1, 30000}}), Verdict::kUnschedulable,
       "GPU memory: requested 16384 MiB, largest free on one GPU 10960 MiB of 40960"},
      {"GPU unknown: the node total bounds it", shared_16g, "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {}, 70000), Verdict::kUnschedulable,
       "GPU memory: requested 16384 MiB, largest free on one GPU 11920 MiB of 40960"},
      {"known and unassigned together: fits", shared_16g, "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {{0, 40960}}, 20000), Verdict::kFits, ""},
      {"known and unassigned together: too little left",
       Demand({{"nvidia.com/gpu.shared", 1}}, 24576), "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {{0, 40960}}, 20000), Verdict::kUnschedulable,
       "GPU memory: requested 24576 MiB, largest free on one GPU 20960 MiB of 40960"},
      {"over-promised node shows zero free", shared_16g, "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {}, 100000), Verdict::kUnschedulable,
       "GPU memory: requested 16384 MiB, largest free on one GPU 0 MiB of 40960"},
      {"larger than any single GPU",
       Demand({{"nvidia.com/gpu.shared", 1}}, 50000),
       "research",
       "ts",
       {},
       Verdict::kUnresolvable,
       "GPU memory: requested 50000 MiB, larger than one GPU (40960 MiB)"},
      {"less than the node but more than one GPU",
       Demand({{"nvidia.com/gpu.shared", 1}}, 61440),
       "research",
       "ts",
       {},
       Verdict::kUnresolvable,
       "GPU memory: requested 61440 MiB, larger than one GPU (40960 MiB)"},
      {"memory-only request on a shared node",
       Demand({}, 8192),
       "research",
       "ts",
       {},
       Verdict::kFits,
       ""},
      {"memory-only request on a MIG node",
       Demand({}, 8192),
       "research",
       "mig",
       {},
       Verdict::kUnresolvable,
       "GPU memory: node has no shared GPU to hold a memory-only request"},
      {"shared GPU of unknown size",
       Demand({{"nvidia.com/gpu.shared", 1}}, 8192),
       "research",
       "ts-unknown-size",
       {},
       Verdict::kUnresolvable,
       "GPU memory: size unknown (no nvidia.com/gpu.memory label and product not in catalog)"},
      {"MIG instance smaller than the request",
       Demand({{"nvidia.com/mig-1g.10gb", 1}}, 20480),
       "acme",
       "mig",
       {},
       Verdict::kUnresolvable,
       "GPU memory: requested 20480 MiB, nvidia.com/mig-1g.10gb gives 9984 MiB"},
      {"MIG instance large enough",
       Demand({{"nvidia.com/mig-3g.40gb", 1}}, 20480),
       "acme",
       "mig",
       {},
       Verdict::kFits,
       ""},
      {"two MIG instances add up",
       Demand({{"nvidia.com/mig-1g.10gb", 2}}, 16384),
       "acme",
       "mig",
       {},
       Verdict::kFits,
       ""},
      {"whole GPU smaller than the request",
       Demand({{"nvidia.com/gpu", 1}}, 100000),
       "research",
       "excl",
       {},
       Verdict::kUnresolvable,
       "GPU memory: requested 100000 MiB, nvidia.com/gpu gives 81559 MiB"},
      {"whole GPU memory does not touch the shared heap", Demand({{"nvidia.com/gpu", 1}}, 40960),
       "research", "excl", Used({}, {}, 1000000), Verdict::kFits, ""},
  };
  for (const FitRow& row : rows) {
    SCOPED_TRACE(row.name);
    const PodContext ctx = Context(policy_, row.ns);  // outlives `r`'s views
    FitResult r = Fit(row.demand, ctx, Supply(row.node), row.occupancy);
    EXPECT_EQ(VerdictName(r.verdict), VerdictName(row.verdict));
    EXPECT_EQ(r.Reason(), row.reason);
  }
}

// The result is data first: the rule, the resource and the counts, as kube-scheduler's
// InsufficientResource; the text is made from them.
// (A result's views point into the demand, pod context and supply it was decided on: each
// demand and context here outlives its result.)
TEST_F(FitTest, ResultsCarryRuleResourceAndCounts) {
  const GpuDemand one_3g = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const PodContext acme = Context(policy_, "acme");
  const PodContext research = Context(policy_, "research");
  const FitResult exhausted =
      Fit(one_3g, acme, Supply("mig"), Used({{"nvidia.com/mig-3g.40gb", 2}}));
  EXPECT_EQ(exhausted.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(exhausted.rule, Rule::kExhausted);
  EXPECT_EQ(exhausted.code(), "exhausted");
  EXPECT_EQ(exhausted.resource, "nvidia.com/mig-3g.40gb");
  EXPECT_EQ(exhausted.requested, 1);
  EXPECT_EQ(exhausted.free, 0);
  EXPECT_EQ(exhausted.capacity, 2);

  const GpuDemand big_shared = Demand({{"nvidia.com/gpu.shared", 1}}, 40000);
  const FitResult memory = Fit(big_shared, research, Supply("ts"),
                               Used({{"nvidia.com/gpu.shared", 2}}, {{0, 20000}, {1, 30000}}));
  EXPECT_EQ(memory.rule, Rule::kMemoryExhausted);
  EXPECT_EQ(memory.requested, 40000);
  EXPECT_EQ(memory.free, 20960);
  EXPECT_EQ(memory.capacity, 40960);

  const GpuDemand one_shared = Demand({{"nvidia.com/gpu.shared", 1}});
  const FitResult pool = Fit(one_shared, acme, Supply("ts"), {});
  EXPECT_EQ(pool.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(pool.rule, Rule::kTierPool);
  EXPECT_EQ(pool.subject, "gpu-timeslice");
  EXPECT_EQ(pool.tier, "untrusted");
  EXPECT_EQ(pool.mode, SharingMode::kTimeslice);

  const FitResult drift = Fit(one_3g, acme, Supply("mig-drifted"), {});
  EXPECT_EQ(drift.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(drift.rule, Rule::kMigDrift);
  EXPECT_EQ(drift.code(), "mig-drift");

  const GpuDemand one_gpu = Demand({{"nvidia.com/gpu", 1}});
  const FitResult fits = Fit(one_gpu, acme, Supply("excl"), {});
  EXPECT_TRUE(fits.fits());
  EXPECT_EQ(fits.rule, Rule::kFits);
  EXPECT_EQ(fits.Reason(), "");
}

// Every rule has its own code: metrics label rejections by it.
TEST(RuleCodeTest, CodesAreDistinct) {
  std::set<absl::string_view> codes;
  for (int r = 0; r <= static_cast<int>(Rule::kDraExhausted); ++r) {
    EXPECT_TRUE(codes.insert(RuleCode(static_cast<Rule>(r))).second) << r;
  }
  EXPECT_EQ(RuleCode(Rule::kTierPool), "tier-pool");
}

TEST(VerdictNameTest, Names) {
  EXPECT_EQ(VerdictName(Verdict::kFits), "fits");
  EXPECT_EQ(VerdictName(Verdict::kUnschedulable), "unschedulable");
  EXPECT_EQ(VerdictName(Verdict::kUnresolvable), "unresolvable");
}

TEST_F(FitTest, ScoreBinpackAndSpread) {
  const GpuDemand one_gpu = Demand({{"nvidia.com/gpu", 1}});
  struct Row {
    std::string name;
    GpuDemand demand;
    std::string ns;
    std::string node;
    NodeOccupancy occupancy;
    ScoringStrategy policy_scoring;
    std::optional<ScoringStrategy> pod_scoring;
    int score;
  };
  const std::vector<Row> rows = {
      {"binpack: busy node", one_gpu, "research", "excl-8", Used({{"nvidia.com/gpu", 6}}),
       ScoringStrategy::kBinpack, std::nullopt, 9},
      {"binpack: idle node",
       one_gpu,
       "research",
       "excl-8",
       {},
       ScoringStrategy::kBinpack,
       std::nullopt,
       1},
      {"spread: busy node", one_gpu, "research", "excl-8", Used({{"nvidia.com/gpu", 6}}),
       ScoringStrategy::kSpread, std::nullopt, 1},
      {"spread: idle node",
       one_gpu,
       "research",
       "excl-8",
       {},
       ScoringStrategy::kSpread,
       std::nullopt,
       9},
      {"pod asks spread under a binpack policy", one_gpu, "research", "excl-8",
       Used({{"nvidia.com/gpu", 6}}), ScoringStrategy::kBinpack, ScoringStrategy::kSpread, 1},
      {"pod asks binpack under a spread policy", one_gpu, "research", "excl-8",
       Used({{"nvidia.com/gpu", 6}}), ScoringStrategy::kSpread, ScoringStrategy::kBinpack, 9},
      {"last GPU: binpack gives 10", one_gpu, "research", "excl-8", Used({{"nvidia.com/gpu", 7}}),
       ScoringStrategy::kBinpack, std::nullopt, 10},
      {"node that does not fit scores 0", one_gpu, "research", "excl-8",
       Used({{"nvidia.com/gpu", 8}}), ScoringStrategy::kBinpack, std::nullopt, 0},
      {"denied tenant scores 0",
       one_gpu,
       "stranger",
       "excl-8",
       {},
       ScoringStrategy::kSpread,
       std::nullopt,
       0},
      {"empty demand scores 0",
       Demand({}),
       "research",
       "excl-8",
       {},
       ScoringStrategy::kSpread,
       std::nullopt,
       0},
      {"untrusted tenant on a MIG pool", Demand({{"nvidia.com/mig-1g.10gb", 1}}), "acme", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 2}}), ScoringStrategy::kBinpack, std::nullopt, 8},
      {"sharing tier asking for a MIG slice is not steered away",
       Demand({{"nvidia.com/mig-1g.10gb", 1}}), "research", "mig",
       Used({{"nvidia.com/mig-1g.10gb", 2}}), ScoringStrategy::kBinpack, std::nullopt, 8},
      // (6+1)/7 would score 10; a sharing tier that asks for no MIG slice gets half on a MIG pool.
      {"sharing tier without a MIG slice is steered off MIG pools",
       Demand({{"nvidia.com/mig-1g.10gb.shared", 1}}), "research", "mig-shared",
       Used({{"nvidia.com/mig-1g.10gb.shared", 6}}), ScoringStrategy::kBinpack, std::nullopt, 5},
      {"halved score rounds down",
       Demand({{"nvidia.com/mig-1g.10gb.shared", 1}}),
       "research",
       "mig-shared",
       {},
       ScoringStrategy::kBinpack,
       std::nullopt,
       0},
      // Replicas (2+1)/8 and the chosen GPU full after placing: (0.375 + 1.0) / 2.
      {"shared GPU counts replicas and memory", Demand({{"nvidia.com/gpu.shared", 1}}, 16384),
       "research", "ts", Used({{"nvidia.com/gpu.shared", 2}}, {{0, 24576}, {1, 8192}}),
       ScoringStrategy::kBinpack, std::nullopt, 7},
      {"shared GPU spread", Demand({{"nvidia.com/gpu.shared", 1}}, 16384), "research", "ts",
       Used({{"nvidia.com/gpu.shared", 2}}, {{0, 24576}, {1, 8192}}), ScoringStrategy::kSpread,
       std::nullopt, 3},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Policy policy = policy_;
    policy.scoring = row.policy_scoring;
    PodContext ctx = Context(policy, row.ns);
    ctx.scoring = row.pod_scoring;
    int score = Score(row.demand, ctx, Supply(row.node), row.occupancy);
    EXPECT_EQ(score, row.score);
    EXPECT_GE(score, 0);
    EXPECT_LE(score, 10);
  }
}

TEST_F(FitTest, BinpackPrefersTheBusierNodeAndSpreadTheIdlerOne) {
  const GpuDemand one_gpu = Demand({{"nvidia.com/gpu", 1}});
  const NodeOccupancy busy = Used({{"nvidia.com/gpu", 5}});
  const NodeOccupancy idle = Used({{"nvidia.com/gpu", 1}});
  PodContext ctx = Context(policy_, "research");
  ctx.scoring = ScoringStrategy::kBinpack;
  EXPECT_GT(Score(one_gpu, ctx, Supply("excl-8"), busy),
            Score(one_gpu, ctx, Supply("excl-8"), idle));
  ctx.scoring = ScoringStrategy::kSpread;
  EXPECT_LT(Score(one_gpu, ctx, Supply("excl-8"), busy),
            Score(one_gpu, ctx, Supply("excl-8"), idle));
}

TEST_F(FitTest, ChooseSharedGpuBestFit) {
  const GpuDemand shared_16g = Demand({{"nvidia.com/gpu.shared", 1}}, 16384);
  struct Row {
    std::string name;
    GpuDemand demand;
    std::string node;
    NodeOccupancy occupancy;
    std::optional<int> gpu;
  };
  const std::vector<Row> rows = {
      {"empty node: the first GPU", shared_16g, "ts", {}, 0},
      {"the fuller GPU that still has room", shared_16g, "ts", Used({}, {{0, 8192}, {1, 24576}}),
       1},
      {"exactly enough counts as room", shared_16g, "ts", Used({}, {{0, 24576}, {1, 0}}), 0},
      {"skip a GPU without room", shared_16g, "ts", Used({}, {{0, 30000}, {1, 8192}}), 1},
      {"no GPU has room", shared_16g, "ts", Used({}, {{0, 30000}, {1, 30000}}), std::nullopt},
      {"no memory asked", Demand({{"nvidia.com/gpu.shared", 1}}), "ts", {}, std::nullopt},
      {"MIG memory is not shared",
       Demand({{"nvidia.com/mig-3g.40gb", 1}}, 8192),
       "mig",
       {},
       std::nullopt},
      {"memory-only request on a shared node", Demand({}, 8192), "ts", Used({}, {{0, 40000}}), 1},
      {"size unknown", shared_16g, "ts-unknown-size", {}, std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(ChooseSharedGpu(row.demand, Supply(row.node), row.occupancy), row.gpu);
  }
}

}  // namespace
}  // namespace topology
