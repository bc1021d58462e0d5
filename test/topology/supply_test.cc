// Node supply for every way GFD, the device plugin and mig-manager label a node
// (docs/wire/gfd-labels.md): MIG mixed and single, time-slicing renamed or not, MPS, exclusive,
// reconfiguration, pools.
#include "topology/supply.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/mig_parted.h"

namespace topology {
namespace {

Policy TestPolicy() {
  Policy policy = Policy::AllowAll();
  policy.pools = {{"gpu-mig", SharingMode::kMig, std::nullopt},
                  {"gpu-timeslice", SharingMode::kTimeslice, std::nullopt},
                  {"gpu-exclusive", SharingMode::kExclusive, std::nullopt}};
  policy.shared_resources = {"example.com/vgpu"};
  return policy;
}

NodeFacts Node(Labels labels, std::initializer_list<std::pair<std::string, std::string>> alloc) {
  NodeFacts node;
  node.name = "n";
  node.labels = std::move(labels);
  node.labels.emplace("kubernetes.io/os", "linux");
  node.allocatable.emplace("cpu", Quantity::FromUnits(63));
  node.allocatable.emplace("memory", *Quantity::Parse("500Gi"));
  for (const auto& [name, text] : alloc) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << q.status();
    node.allocatable.insert_or_assign(name, q.value_or(Quantity()));
  }
  return node;
}

struct Offered {
  std::string name;
  ResourceKind kind;
  SharingMode mode;
  int64_t allocatable;
  std::string mig_profile;
  std::optional<int64_t> memory_mib;
};

constexpr ResourceKind kWhole = ResourceKind::kWholeGpu;
constexpr ResourceKind kMigInst = ResourceKind::kMigInstance;
constexpr ResourceKind kReplica = ResourceKind::kSharedReplica;

struct Row {
  std::string name;
  NodeFacts node;
  std::string model;  // catalog model, empty when unknown
  std::optional<int64_t> gpu_memory_mib;
  int replicas_per_gpu;
  std::string pool;
  std::optional<SharingMode> pool_mode;
  bool pool_labelled;
  std::string mig_unsettled;
  std::vector<Offered> resources;
};

const Labels kH100Mixed = {
    {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
    {"nvidia.com/gpu.count", "2"},
    {"nvidia.com/gpu.memory", "81559"},
    {"nvidia.com/gpu.replicas", "0"},
    {"nvidia.com/mig.capable", "true"},
    {"nvidia.com/mig.strategy", "mixed"},
    {"nvidia.com/mig.config.state", "success"},
};

Labels With(Labels base, std::initializer_list<std::pair<const std::string, std::string>> extra) {
  for (const auto& [k, v] : extra) base.insert_or_assign(k, v);
  return base;
}

void ExpectSupply(const Row& row) {
  SCOPED_TRACE(row.name);
  NodeSupply s = BuildNodeSupply(row.node, common::BuiltinCatalog(), TestPolicy());
  EXPECT_EQ(s.name, "n");
  if (row.model.empty()) {
    EXPECT_EQ(s.model, nullptr) << s.model->model;
  } else {
    ASSERT_NE(s.model, nullptr);
    EXPECT_EQ(s.model->model, row.model);
  }
  EXPECT_EQ(s.gpu_memory_mib, row.gpu_memory_mib);
  EXPECT_EQ(s.replicas_per_gpu, row.replicas_per_gpu);
  EXPECT_EQ(s.pool, row.pool);
  EXPECT_EQ(s.pool_mode, row.pool_mode);
  EXPECT_EQ(s.pool_labelled, row.pool_labelled);
  EXPECT_EQ(s.mig_unsettled, row.mig_unsettled);
  EXPECT_EQ(s.HasGpus(), !row.resources.empty());
  ASSERT_EQ(s.resources.size(), row.resources.size());
  for (size_t i = 0; i < row.resources.size(); ++i) {
    const Offered& want = row.resources[i];
    const OfferedResource& got = s.resources[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.mode, want.mode);
    EXPECT_EQ(got.allocatable, want.allocatable);
    EXPECT_EQ(got.mig_profile, want.mig_profile);
    EXPECT_EQ(got.memory_mib, want.memory_mib);
    EXPECT_EQ(s.Find(want.name), &got);
  }
  EXPECT_EQ(s.Find("cpu"), nullptr);
  EXPECT_EQ(s.Find("nvidia.com/none"), nullptr);
}

TEST(BuildNodeSupplyTest, MigStrategies) {
  const std::vector<Row> rows = {
      {"mixed: per-profile memory from the GFD label, else the catalog",
       Node(With(kH100Mixed, {{"nvidia.com/mig-3g.40gb.memory", "40448"},
                              {"nvidia.com/mig-1g.10gb.memory", "9900"}}),
            {{"nvidia.com/mig-3g.40gb", "2"},
             {"nvidia.com/mig-2g.20gb", "2"},
             {"nvidia.com/mig-1g.10gb", "4"}}),
       "H100-80GB",
       81559,
       1,
       "mig",
       SharingMode::kMig,
       false,
       "",
       {{"nvidia.com/mig-1g.10gb", kMigInst, SharingMode::kMig, 4, "1g.10gb", 9900},
        {"nvidia.com/mig-2g.20gb", kMigInst, SharingMode::kMig, 2, "2g.20gb", 20096},
        {"nvidia.com/mig-3g.40gb", kMigInst, SharingMode::kMig, 2, "3g.40gb", 40448}}},
      {"mixed: +me profile by resource suffix, unknown profile has no memory",
       Node(kH100Mixed, {{"nvidia.com/mig-1g.10gb.me", "1"}, {"nvidia.com/mig-9g.99gb", "1"}}),
       "H100-80GB",
       81559,
       1,
       "mig",
       SharingMode::kMig,
       false,
       "",
       {{"nvidia.com/mig-1g.10gb.me", kMigInst, SharingMode::kMig, 1, "1g.10gb.me", 9984},
        {"nvidia.com/mig-9g.99gb", kMigInst, SharingMode::kMig, 1, "9g.99gb", std::nullopt}}},
      {"mixed: time-sliced MIG instance",
       Node(With(kH100Mixed, {{"nvidia.com/mig-1g.10gb.memory", "9984"}}),
            {{"nvidia.com/mig-1g.10gb.shared", "14"}}),
       "H100-80GB",
       81559,
       1,
       "mig-shared",
       SharingMode::kMigShared,
       false,
       "",
       {{"nvidia.com/mig-1g.10gb.shared", kReplica, SharingMode::kMigShared, 14, "1g.10gb", 9984}}},
      {"mixed: MIG-disabled GPUs beside MIG ones",
       Node(kH100Mixed, {{"nvidia.com/gpu", "1"}, {"nvidia.com/mig-3g.40gb", "2"}}),
       "H100-80GB",
       81559,
       1,
       "mig",
       SharingMode::kMig,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 1, "", 81559},
        {"nvidia.com/mig-3g.40gb", kMigInst, SharingMode::kMig, 2, "3g.40gb", 40448}}},
      {"single: nvidia.com/gpu counts MIG instances, gpu.memory is the MIG memory",
       Node({{"nvidia.com/gpu.product", "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb"},
             {"nvidia.com/gpu.count", "7"},
             {"nvidia.com/gpu.memory", "9728"},
             {"nvidia.com/gpu.replicas", "1"},
             {"nvidia.com/gpu.sharing-strategy", "none"},
             {"nvidia.com/mig.strategy", "single"},
             {"nvidia.com/mig.capable", "true"},
             {"nvidia.com/mig.config.state", "success"}},
            {{"nvidia.com/gpu", "7"}}),
       "A100-80GB",
       81920,
       1,
       "mig",
       SharingMode::kMig,
       false,
       "",
       {{"nvidia.com/gpu", kMigInst, SharingMode::kMig, 7, "1g.10gb", 9728}}},
      {"single: no memory label, MIG memory from the catalog",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"},
             {"nvidia.com/mig.strategy", "single"}},
            {{"nvidia.com/gpu", "2"}}),
       "H100-80GB",
       81559,
       1,
       "mig",
       SharingMode::kMig,
       false,
       "",
       {{"nvidia.com/gpu", kMigInst, SharingMode::kMig, 2, "3g.40gb", 40448}}},
      {"single: INVALID product is no MIG device",
       Node({{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
             {"nvidia.com/gpu.count", "0"},
             {"nvidia.com/gpu.memory", "0"},
             {"nvidia.com/gpu.replicas", "0"},
             {"nvidia.com/gpu.sharing-strategy", ""},
             {"nvidia.com/mig.strategy", "single"}},
            {{"nvidia.com/gpu", "0"}}),
       "A100-40GB",
       40960,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 0, "", 40960}}},
      {"single label on a node whose product has no MIG suffix (fixture gpu-node-b)",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
             {"nvidia.com/gpu.count", "8"},
             {"nvidia.com/mig.strategy", "single"}},
            {{"nvidia.com/gpu", "8"},
             {"nvidia.com/gpu.shared", "0"},
             {"nvidia.com/mig-1g.10gb", "0"}}),
       "H100-80GB",
       81559,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 8, "", 81559},
        {"nvidia.com/gpu.shared", kReplica, SharingMode::kTimeslice, 0, "", 81559},
        {"nvidia.com/mig-1g.10gb", kMigInst, SharingMode::kMig, 0, "1g.10gb", 9984}}},
  };
  for (const Row& row : rows) ExpectSupply(row);
}

TEST(BuildNodeSupplyTest, SharingStrategies) {
  const Labels a100_ts = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                          {"nvidia.com/gpu.count", "2"},
                          {"nvidia.com/gpu.memory", "40960"},
                          {"nvidia.com/gpu.replicas", "4"},
                          {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                          {"nvidia.com/mig.capable", "false"}};
  const std::vector<Row> rows = {
      {"time-slicing renamed: nvidia.com/gpu.shared, no -SHARED suffix",
       Node(a100_ts, {{"nvidia.com/gpu.shared", "8"}}),
       "A100-40GB",
       40960,
       4,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"nvidia.com/gpu.shared", kReplica, SharingMode::kTimeslice, 8, "", 40960}}},
      {"time-slicing not renamed: nvidia.com/gpu with a -SHARED product",
       Node(With(a100_ts, {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-SHARED"}}),
            {{"nvidia.com/gpu", "8"}}),
       "A100-40GB",
       40960,
       4,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"nvidia.com/gpu", kReplica, SharingMode::kTimeslice, 8, "", 40960}}},
      {"MPS not renamed",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED"},
             {"nvidia.com/gpu.memory", "81559"},
             {"nvidia.com/gpu.replicas", "10"},
             {"nvidia.com/gpu.sharing-strategy", "mps"},
             {"nvidia.com/mps.capable", "true"}},
            {{"nvidia.com/gpu", "40"}}),
       "H100-80GB",
       81559,
       10,
       "mps",
       SharingMode::kMps,
       false,
       "",
       {{"nvidia.com/gpu", kReplica, SharingMode::kMps, 40, "", 81559}}},
      {"MPS renamed",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
             {"nvidia.com/gpu.replicas", "10"},
             {"nvidia.com/gpu.sharing-strategy", "mps"}},
            {{"nvidia.com/gpu.shared", "20"}}),
       "H100-80GB",
       81559,
       10,
       "mps",
       SharingMode::kMps,
       false,
       "",
       {{"nvidia.com/gpu.shared", kReplica, SharingMode::kMps, 20, "", 81559}}},
      {"exclusive",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
             {"nvidia.com/gpu.count", "4"},
             {"nvidia.com/gpu.memory", "81559"},
             {"nvidia.com/gpu.replicas", "1"},
             {"nvidia.com/gpu.sharing-strategy", "none"}},
            {{"nvidia.com/gpu", "4"}}),
       "H100-80GB",
       81559,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 4, "", 81559}}},
      {"-SHARED product without replicas is still exclusive",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED"},
             {"nvidia.com/gpu.replicas", "1"},
             {"nvidia.com/gpu.sharing-strategy", "time-slicing"}},
            {{"nvidia.com/gpu", "4"}}),
       "H100-80GB",
       81559,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 4, "", 81559}}},
      {"unknown product with a gpu.memory label",
       Node({{"nvidia.com/gpu.product", "NVIDIA-L4-SHARED"},
             {"nvidia.com/gpu.memory", "23034"},
             {"nvidia.com/gpu.replicas", "2"},
             {"nvidia.com/gpu.sharing-strategy", "time-slicing"}},
            {{"nvidia.com/gpu", "2"}}),
       "",
       23034,
       2,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"nvidia.com/gpu", kReplica, SharingMode::kTimeslice, 2, "", 23034}}},
      {"unknown product without memory",
       Node({{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}}, {{"nvidia.com/gpu", "1"}}),
       "",
       std::nullopt,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 1, "", std::nullopt}}},
      {"gpu.memory 0 falls back to the catalog",
       Node({{"nvidia.com/gpu.product", "NVIDIA-A30"}, {"nvidia.com/gpu.memory", "0"}},
            {{"nvidia.com/gpu", "1"}}),
       "A30-24GB",
       24576,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 1, "", 24576}}},
      {"no product label: nvidia.com/gpu with replicas is the replica",
       Node({{"nvidia.com/gpu.replicas", "4"}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}},
            {{"nvidia.com/gpu", "4"}}),
       "",
       std::nullopt,
       4,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"nvidia.com/gpu", kReplica, SharingMode::kTimeslice, 4, "", std::nullopt}}},
      {"configured shared resource name",
       Node({{"nvidia.com/gpu.product", "NVIDIA-A30"}}, {{"example.com/vgpu", "8"}}),
       "A30-24GB",
       24576,
       1,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"example.com/vgpu", kReplica, SharingMode::kTimeslice, 8, "", 24576}}},
      {"fixture gpu-node-a: the weakest isolation names the derived pool",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
             {"nvidia.com/gpu.count", "4"},
             {"nvidia.com/mig.strategy", "mixed"}},
            {{"nvidia.com/gpu", "4"},
             {"nvidia.com/gpu.shared", "8"},
             {"nvidia.com/mig-1g.10gb", "7"}}),
       "H100-80GB",
       81559,
       1,
       "timeslice",
       SharingMode::kTimeslice,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 4, "", 81559},
        {"nvidia.com/gpu.shared", kReplica, SharingMode::kTimeslice, 8, "", 81559},
        {"nvidia.com/mig-1g.10gb", kMigInst, SharingMode::kMig, 7, "1g.10gb", 9984}}},
      {"CPU node", Node({}, {}), "", std::nullopt, 1, "", std::nullopt, false, "", {}},
  };
  for (const Row& row : rows) ExpectSupply(row);
}

TEST(BuildNodeSupplyTest, PoolsAndReconfiguration) {
  auto mig = [](std::initializer_list<std::pair<const std::string, std::string>> extra) {
    return Node(With(kH100Mixed, extra), {{"nvidia.com/mig-3g.40gb", "2"}});
  };
  const std::vector<Offered> mig_resources = {
      {"nvidia.com/mig-3g.40gb", kMigInst, SharingMode::kMig, 2, "3g.40gb", 40448}};
  const std::vector<Row> rows = {
      {"pool from the label, mode from the policy", mig({{"gpu-tenancy.io/pool", "gpu-timeslice"}}),
       "H100-80GB", 81559, 1, "gpu-timeslice", SharingMode::kTimeslice, true, "", mig_resources},
      {"pool label the policy lacks", mig({{"gpu-tenancy.io/pool", "gpu-custom"}}), "H100-80GB",
       81559, 1, "gpu-custom", std::nullopt, true, "", mig_resources},
      {"empty pool label derives the pool", mig({{"gpu-tenancy.io/pool", ""}}), "H100-80GB", 81559,
       1, "mig", SharingMode::kMig, false, "", mig_resources},
      {"mig.config.state pending", mig({{"nvidia.com/mig.config.state", "pending"}}), "H100-80GB",
       81559, 1, "mig", SharingMode::kMig, false, "nvidia.com/mig.config.state=pending",
       mig_resources},
      {"mig.config.state rebooting", mig({{"nvidia.com/mig.config.state", "rebooting"}}),
       "H100-80GB", 81559, 1, "mig", SharingMode::kMig, false,
       "nvidia.com/mig.config.state=rebooting", mig_resources},
      {"mig.config.state failed", mig({{"nvidia.com/mig.config.state", "failed"}}), "H100-80GB",
       81559, 1, "mig", SharingMode::kMig, false, "nvidia.com/mig.config.state=failed",
       mig_resources},
      {"device plugin paused for a MIG change",
       mig({{"nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change"},
            {"nvidia.com/gpu.deploy.dcgm-exporter", "true"}}),
       "H100-80GB", 81559, 1, "mig", SharingMode::kMig, false,
       "nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change", mig_resources},
      {"GFD paused for a MIG change",
       mig({{"nvidia.com/gpu.deploy.gpu-feature-discovery", "paused-for-mig-change"}}), "H100-80GB",
       81559, 1, "mig", SharingMode::kMig, false,
       "nvidia.com/gpu.deploy.gpu-feature-discovery=paused-for-mig-change", mig_resources},
      {"state label wins over paused deployments",
       mig({{"nvidia.com/mig.config.state", "pending"},
            {"nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change"}}),
       "H100-80GB", 81559, 1, "mig", SharingMode::kMig, false,
       "nvidia.com/mig.config.state=pending", mig_resources},
      {"deploy labels true are settled", mig({{"nvidia.com/gpu.deploy.device-plugin", "true"}}),
       "H100-80GB", 81559, 1, "mig", SharingMode::kMig, false, "", mig_resources},
      {"no state label on a non-MIG node is settled",
       Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}, {{"nvidia.com/gpu", "8"}}),
       "H100-80GB",
       81559,
       1,
       "exclusive",
       SharingMode::kExclusive,
       false,
       "",
       {{"nvidia.com/gpu", kWhole, SharingMode::kExclusive, 8, "", 81559}}},
  };
  for (const Row& row : rows) ExpectSupply(row);
}

TEST(BuildNodeSupplyTest, CustomPoolLabel) {
  Policy policy = TestPolicy();
  policy.pool_label = "example.com/gpu-pool";
  NodeFacts node =
      Node({{"example.com/gpu-pool", "gpu-exclusive"}, {"gpu-tenancy.io/pool", "gpu-timeslice"}},
           {{"nvidia.com/gpu", "1"}});
  NodeSupply s = BuildNodeSupply(node, common::BuiltinCatalog(), policy);
  EXPECT_EQ(s.pool, "gpu-exclusive");
  EXPECT_EQ(s.pool_mode, SharingMode::kExclusive);
  EXPECT_TRUE(s.pool_labelled);
}

TEST(NodeSupplyTest, SharedGpuCount) {
  NodeSupply s;
  OfferedResource shared;
  shared.allocatable = 8;
  s.replicas_per_gpu = 4;
  EXPECT_EQ(s.SharedGpuCount(shared), 2);
  s.replicas_per_gpu = 1;
  EXPECT_EQ(s.SharedGpuCount(shared), 8);
  s.replicas_per_gpu = 0;  // never divide by zero
  EXPECT_EQ(s.SharedGpuCount(shared), 8);
  shared.allocatable = 0;
  s.replicas_per_gpu = 4;
  EXPECT_EQ(s.SharedGpuCount(shared), 1);
}

TEST(ClassifyResourceTest, Names) {
  Policy policy = TestPolicy();
  const Labels renamed = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                          {"nvidia.com/gpu.replicas", "4"},
                          {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  struct Row {
    std::string name;
    std::string resource;
    Labels labels;
    std::optional<ResourceKind> kind;
    SharingMode mode;
    std::string profile;
  };
  const std::vector<Row> rows = {
      {"cpu is not a GPU", "cpu", {}, std::nullopt, SharingMode::kExclusive, ""},
      {"gpu.memory is not a device",
       "nvidia.com/gpu.memory",
       {},
       std::nullopt,
       SharingMode::kExclusive,
       ""},
      {"HAMi gpumem is not a device",
       "nvidia.com/gpumem",
       {},
       std::nullopt,
       SharingMode::kExclusive,
       ""},
      {"whole GPU", "nvidia.com/gpu", {}, kWhole, SharingMode::kExclusive, ""},
      {"renamed node: nvidia.com/gpu stays whole", "nvidia.com/gpu", renamed, kWhole,
       SharingMode::kExclusive, ""},
      {"renamed node: gpu.shared is the replica", "nvidia.com/gpu.shared", renamed, kReplica,
       SharingMode::kTimeslice, ""},
      {"MIG instance", "nvidia.com/mig-2g.20gb", {}, kMigInst, SharingMode::kMig, "2g.20gb"},
      {"shared MIG instance",
       "nvidia.com/mig-2g.20gb.shared",
       {},
       kReplica,
       SharingMode::kMigShared,
       "2g.20gb"},
      {"configured shared name", "example.com/vgpu", {}, kReplica, SharingMode::kTimeslice, ""},
      {"unconfigured other vendor", "amd.com/gpu", {}, std::nullopt, SharingMode::kExclusive, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::optional<ResourceClass> cls = ClassifyResource(row.resource, row.labels, policy);
    if (!row.kind) {
      EXPECT_FALSE(cls.has_value());
      continue;
    }
    ASSERT_TRUE(cls.has_value());
    EXPECT_EQ(cls->kind, *row.kind);
    EXPECT_EQ(cls->mode, row.mode);
    EXPECT_EQ(cls->mig_profile, row.profile);
  }
}

// A settled node whose geometry is not what its nvidia.com/mig.config predicts by NVIDIA's
// defaults carries the reason the filter refuses it for; a node being reconfigured does not.
TEST(BuildNodeSupplyTest, MigDrift) {
  auto node = [](std::initializer_list<std::pair<const std::string, std::string>> extra) {
    return Node(With(kH100Mixed, extra), {{"nvidia.com/mig-3g.40gb", "2"}});
  };
  struct Case {
    std::string name;
    NodeFacts node;
    std::string mig_drift;
    std::string mig_unsettled;
  };
  const std::vector<Case> cases = {
      {"as configured",
       node({{"nvidia.com/gpu.count", "1"}, {"nvidia.com/mig.config", "all-3g.40gb"}}), "", ""},
      {"drifted", node({{"nvidia.com/mig.config", "all-3g.40gb"}}),
       "MIG geometry differs from nvidia.com/mig.config=all-3g.40gb (state success): mig-manager "
       "is about to re-cut it; nvidia.com/mig-3g.40gb: expected 4, node shows 2",
       ""},
      {"being reconfigured",
       node({{"nvidia.com/mig.config", "all-3g.40gb"}, {"nvidia.com/mig.config.state", "pending"}}),
       "", "nvidia.com/mig.config.state=pending"},
      {"a config only a mig-parted file knows", node({{"nvidia.com/mig.config", "custom"}}), "",
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeSupply s = BuildNodeSupply(c.node, common::BuiltinCatalog(), TestPolicy());
    EXPECT_EQ(s.mig_drift, c.mig_drift);
    EXPECT_EQ(s.mig_unsettled, c.mig_unsettled);
  }
}

// The catalog's mig-parted config says what a name stands for: a name only it knows is
// compared, and its layout of a default name wins over NVIDIA's.
TEST(BuildNodeSupplyTest, MigDriftReadsTheNamesThroughTheCatalogsMigPartedConfig) {
  auto layout = [](const std::string& name, int per_gpu) {
    MigPartedEntry entry;
    entry.mig_enabled = true;
    entry.mig_devices = {{"3g.40gb", per_gpu}};
    return MigPartedLayout{name, {entry}};
  };
  auto file = std::make_shared<MigPartedFile>();
  file->layouts = {layout("custom", 2), layout("all-3g.40gb", 1)};
  const Catalog catalog = common::BuiltinCatalog().WithMigParted(file);
  auto node = [](const std::string& config) {
    return Node(With(kH100Mixed, {{"nvidia.com/mig.config", config}}),
                {{"nvidia.com/mig-3g.40gb", "2"}});
  };
  // Two GPUs showing one 3g.40gb each: what the site's all-3g.40gb says, not NVIDIA's.
  EXPECT_EQ(BuildNodeSupply(node("all-3g.40gb"), catalog, TestPolicy()).mig_drift, "");
  EXPECT_NE(BuildNodeSupply(node("all-3g.40gb"), common::BuiltinCatalog(), TestPolicy()).mig_drift,
            "");
  EXPECT_EQ(BuildNodeSupply(node("custom"), catalog, TestPolicy()).mig_drift,
            "MIG geometry differs from nvidia.com/mig.config=custom (state success): mig-manager "
            "is about to re-cut it; nvidia.com/mig-3g.40gb: expected 4, node shows 2");
  EXPECT_EQ(BuildNodeSupply(node("custom"), common::BuiltinCatalog(), TestPolicy()).mig_drift, "");
}

}  // namespace
}  // namespace topology
