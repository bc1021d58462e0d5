// Fit (three verdicts, each with its exact reason), Score and ChooseSharedGpu on nodes built from
// realistic labels.
#include "topology/fit.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"

namespace topology {
namespace {

Tier MakeTier(std::string name, std::vector<SharingMode> modes) {
  Tier tier;
  tier.name = std::move(name);
  for (SharingMode m : modes) tier.modes.Add(m);
  return tier;
}

Policy DemoLikePolicy() {
  Policy policy;
  policy.tiers = {
      MakeTier("untrusted", {SharingMode::kExclusive, SharingMode::kMig}),
      MakeTier("trusted", {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMigShared,
                           SharingMode::kMps, SharingMode::kTimeslice})};
  Tenant acme;
  acme.name = "acme";
  acme.tier = "untrusted";
  acme.namespaces = {"acme"};
  Tenant research;
  research.name = "research";
  research.tier = "trusted";
  research.namespaces = {"research"};
  policy.tenants = {acme, research};
  policy.pools = {{"gpu-mig", SharingMode::kMig, std::nullopt},
                  {"gpu-timeslice", SharingMode::kTimeslice, std::nullopt},
                  {"gpu-exclusive", SharingMode::kExclusive, std::nullopt}};
  return policy;
}

NodeFacts Node(Labels labels, std::initializer_list<std::pair<std::string, std::string>> alloc) {
  NodeFacts node;
  node.name = "n";
  node.labels = std::move(labels);
  node.allocatable.emplace("cpu", Quantity::FromUnits(8));
  for (const auto& [name, text] : alloc) node.allocatable.emplace(name, *Quantity::Parse(text));
  return node;
}

const Labels kH100Mig = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                         {"nvidia.com/gpu.memory", "81559"},
                         {"nvidia.com/mig.strategy", "mixed"},
                         {"nvidia.com/mig.config.state", "success"},
                         {"nvidia.com/mig-3g.40gb.memory", "40448"},
                         {"nvidia.com/mig-1g.10gb.memory", "9984"},
                         {"gpu-tenancy.io/pool", "gpu-mig"}};

Labels With(Labels base, std::initializer_list<std::pair<const std::string, std::string>> extra) {
  for (const auto& [k, v] : extra) base.insert_or_assign(k, v);
  return base;
}

GpuDemand Demand(std::initializer_list<std::pair<const std::string, int64_t>> devices,
                 int64_t memory_mib = 0) {
  GpuDemand d;
  for (const auto& [name, count] : devices) d.devices.emplace(name, count);
  d.memory_mib = memory_mib;
  return d;
}

NodeOccupancy Used(std::initializer_list<std::pair<const std::string, int64_t>> used,
                   std::map<int, int64_t> by_gpu = {}, int64_t unassigned_mib = 0) {
  NodeOccupancy o;
  for (const auto& [name, count] : used) o.used.emplace(name, count);
  o.shared_memory_by_gpu = std::move(by_gpu);
  o.shared_memory_unassigned_mib = unassigned_mib;
  return o;
}

// The extender decides through the snapshot's inline summary (and a reused reason buffer);
// that path must give exactly what Fit and Score give.
void ExpectSummaryPathAgrees(const GpuDemand& demand, const PodContext& ctx,
                             const NodeSupply& supply, const NodeOccupancy& occupancy) {
  FitResult full = Fit(demand, ctx, supply, occupancy);
  std::string reason = "left over from the previous node";
  FitVerdict buffered = Fit(demand, ctx, supply, occupancy, reason);
  EXPECT_EQ(VerdictName(buffered.verdict), VerdictName(full.verdict));
  EXPECT_EQ(buffered.code, full.code);
  EXPECT_EQ(reason, full.reason);
  const NodeFitSummary summary = SummarizeForFit(supply, occupancy);
  EXPECT_TRUE(summary.usable);
  const DemandKeys keys = MakeDemandKeys(demand);
  reason = "left over from the previous node";
  FitVerdict summarised = Fit(demand, keys, ctx, summary, supply, occupancy, reason);
  EXPECT_EQ(VerdictName(summarised.verdict), VerdictName(full.verdict));
  EXPECT_EQ(summarised.code, full.code);
  EXPECT_EQ(reason, full.reason);
  if (full.fits()) {
    const int score = Score(demand, ctx, supply, occupancy);
    EXPECT_EQ(ScoreFitting(demand, ctx, supply, occupancy), score);
    EXPECT_EQ(ScoreFitting(demand, keys, ctx, summary, supply, occupancy), score);
  }
}

class FitTest : public testing::Test {
 protected:
  FitTest() {
    policy_ = DemoLikePolicy();
    canary_policy_ = DemoLikePolicy();
    canary_policy_.canary = Canary{"1g.10gb", 1, "gpu-tenancy.io/canary"};

    AddNode("mig", Node(kH100Mig, {{"nvidia.com/mig-3g.40gb", "2"},
                                   {"nvidia.com/mig-2g.20gb", "2"},
                                   {"nvidia.com/mig-1g.10gb", "4"}}));
    AddNode("mig-one-1g", Node(kH100Mig, {{"nvidia.com/mig-1g.10gb", "1"}}));
    AddNode("mig-reconfiguring", Node(With(kH100Mig, {{"nvidia.com/mig.config.state", "pending"}}),
                                      {{"nvidia.com/mig-3g.40gb", "2"}}));
    AddNode("mig-shared", Node(kH100Mig, {{"nvidia.com/mig-1g.10gb.shared", "7"},
                                          {"nvidia.com/mig-1g.10gb", "1"}}));
    AddNode("mig-odd-profile", Node(kH100Mig, {{"nvidia.com/mig-9g.99gb", "0"}}));
    const Labels a100_ts = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                            {"nvidia.com/gpu.memory", "40960"},
                            {"nvidia.com/gpu.replicas", "4"},
                            {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
    AddNode("ts", Node(With(a100_ts, {{"gpu-tenancy.io/pool", "gpu-timeslice"}}),
                       {{"nvidia.com/gpu.shared", "8"}}));
    AddNode("ts-unlabelled", Node(a100_ts, {{"nvidia.com/gpu.shared", "8"}}));
    AddNode("ts-unknown-size", Node({{"nvidia.com/gpu.product", "NVIDIA-L4"},
                                     {"nvidia.com/gpu.replicas", "4"},
                                     {"nvidia.com/gpu.sharing-strategy", "time-slicing"}},
                                    {{"nvidia.com/gpu.shared", "4"}}));
    AddNode("ts-empty", Node(With(a100_ts, {{"gpu-tenancy.io/pool", "gpu-timeslice"}}),
                             {{"nvidia.com/gpu.shared", "0"}}));
    AddNode("excl", Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                          {"nvidia.com/gpu.memory", "81559"},
                          {"gpu-tenancy.io/pool", "gpu-exclusive"}},
                         {{"nvidia.com/gpu", "4"}}));
    AddNode("excl-8", Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                            {"gpu-tenancy.io/pool", "gpu-exclusive"}},
                           {{"nvidia.com/gpu", "8"}}));
    AddNode("custom-pool", Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                 {"gpu-tenancy.io/pool", "gpu-custom"}},
                                {{"nvidia.com/gpu", "4"}}));
    AddNode("cpu", Node({}, {}));
  }

  void AddNode(const std::string& name, const NodeFacts& facts) {
    NodeSupply supply = BuildNodeSupply(facts, common::BuiltinCatalog(), policy_);
    supply.name = name;
    supplies_.emplace(name, std::move(supply));
  }

  const NodeSupply& Supply(const std::string& name) {
    auto it = supplies_.find(name);
    EXPECT_NE(it, supplies_.end()) << name;
    return it->second;
  }

  PodContext Context(const Policy& policy, const std::string& ns, bool canary = false) {
    PodContext ctx;
    ctx.policy = &policy;
    ctx.tenant = ResolveTenant(policy, ns, {});
    ctx.canary = canary;
    return ctx;
  }

  Policy policy_;
  Policy canary_policy_;
  std::map<std::string, NodeSupply> supplies_;
};

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
    FitResult r =
        Fit(row.demand, Context(policy, row.ns, row.canary_pod), Supply(row.node), row.occupancy);
    EXPECT_EQ(VerdictName(r.verdict), VerdictName(row.verdict));
    EXPECT_EQ(r.reason, row.reason);
    EXPECT_EQ(r.fits(), row.verdict == Verdict::kFits);
    ExpectSummaryPathAgrees(row.demand, Context(policy, row.ns, row.canary_pod), Supply(row.node),
                            row.occupancy);
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
    FitResult r = Fit(row.demand, Context(policy_, row.ns), Supply(row.node), row.occupancy);
    EXPECT_EQ(VerdictName(r.verdict), VerdictName(row.verdict));
    EXPECT_EQ(r.reason, row.reason);
    ExpectSummaryPathAgrees(row.demand, Context(policy_, row.ns), Supply(row.node), row.occupancy);
  }
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
    ExpectSummaryPathAgrees(row.demand, ctx, Supply(row.node), row.occupancy);
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

TEST_F(FitTest, ApplyPodAddsAndRemovesExactly) {
  const NodeSupply& ts = Supply("ts");
  const GpuDemand shared = Demand({{"nvidia.com/gpu.shared", 1}}, 4096);
  NodeOccupancy o;
  ApplyPod(o, shared, ts, 1, +1);
  ApplyPod(o, shared, ts, std::nullopt, +1);
  EXPECT_EQ(o.Used("nvidia.com/gpu.shared"), 2);
  EXPECT_EQ(o.shared_memory_by_gpu.at(1), 4096);
  EXPECT_EQ(o.shared_memory_unassigned_mib, 4096);
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 8192);
  EXPECT_EQ(o.pods, 2);
  ApplyPod(o, shared, ts, 1, -1);
  ApplyPod(o, shared, ts, std::nullopt, -1);
  EXPECT_TRUE(o.used.empty());
  EXPECT_TRUE(o.shared_memory_by_gpu.empty());
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 0);
  EXPECT_EQ(o.pods, 0);

  // MIG memory is the instance's own: it never enters the shared heap.
  ApplyPod(o, Demand({{"nvidia.com/mig-3g.40gb", 1}}, 8192), Supply("mig"), std::nullopt, +1);
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 0);
  EXPECT_EQ(o.Used("nvidia.com/mig-3g.40gb"), 1);
}

TEST(MakePodContextTest, TenantCanaryAndScoringOverride) {
  Policy policy = DemoLikePolicy();
  policy.canary = Canary{"1g.10gb", 1, "gpu-tenancy.io/canary"};
  PodFacts pod;
  pod.namespace_name = "acme";
  pod.name = "p";
  pod.labels["gpu-tenancy.io/canary"] = "true";
  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "spread";
  absl::StatusOr<PodContext> ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_EQ(ctx->policy, &policy);
  EXPECT_EQ(ctx->tenant.name, "acme");
  ASSERT_NE(ctx->tenant.tier, nullptr);
  EXPECT_EQ(ctx->tenant.tier->name, "untrusted");
  EXPECT_TRUE(ctx->canary);
  EXPECT_EQ(ctx->scoring, ScoringStrategy::kSpread);

  pod.labels["gpu-tenancy.io/canary"] = "yes";
  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "binpack";
  ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok());
  EXPECT_FALSE(ctx->canary);
  EXPECT_EQ(ctx->scoring, ScoringStrategy::kBinpack);

  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "random";
  ctx = MakePodContext(pod, policy, {});
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ctx.status().message(),
      "annotation gpu-tenancy.io/scheduling-policy must be binpack or spread, got \"random\"");

  pod.namespace_name = "elsewhere";
  pod.annotations.clear();
  ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->tenant.name, "unknown");
  EXPECT_TRUE(ctx->tenant.Denied());
  EXPECT_FALSE(ctx->scoring.has_value());
}

}  // namespace
}  // namespace topology
