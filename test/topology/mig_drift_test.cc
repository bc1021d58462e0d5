// MIG drift per node: what the node advertises against what its nvidia.com/mig.config predicts,
// by a given mig-parted file or by NVIDIA's defaults, and every reason nothing is compared.
#include "topology/mig_drift.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

using Resources = std::vector<std::pair<std::string, std::string>>;

ResourceList Parse(const Resources& resources) {
  ResourceList out;
  for (const auto& [name, text] : resources) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << q.status();
    out.insert_or_assign(name, q.value_or(Quantity()));
  }
  return out;
}

// A settled two-GPU H100 node in the mixed strategy labelled with `config`, allocatable as given.
NodeFacts H100(const std::string& config, const Resources& allocatable, Labels extra = {}) {
  NodeFacts node;
  node.name = "n";
  node.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                 {"nvidia.com/gpu.count", "2"},
                 {"nvidia.com/mig.strategy", "mixed"},
                 {"nvidia.com/mig.config", config},
                 {"nvidia.com/mig.config.state", "success"}};
  for (auto& [k, v] : extra) node.labels.insert_or_assign(k, v);
  node.allocatable = Parse(allocatable);
  node.allocatable.emplace("cpu", Quantity::FromUnits(63));
  return node;
}

NodeFacts With(NodeFacts node, Labels labels) {
  for (auto& [k, v] : labels) {
    if (v.empty()) {
      node.labels.erase(k);
    } else {
      node.labels.insert_or_assign(k, v);
    }
  }
  return node;
}

NodeFacts WithCapacity(NodeFacts node, const Resources& capacity) {
  node.gpu_capacity = Parse(capacity);
  return node;
}

// An A30 node cut by NVIDIA's all-balanced: 2x 1g.6gb + 1x 2g.12gb on each of its 4 GPUs.
NodeFacts A30Balanced(const Resources& allocatable) {
  NodeFacts node = H100("all-balanced", allocatable);
  node.labels["nvidia.com/gpu.product"] = "NVIDIA-A30";
  node.labels["nvidia.com/gpu.count"] = "4";
  return node;
}

NodeFacts Single(const std::string& config, const std::string& product) {
  NodeFacts node = H100(config, {{"nvidia.com/gpu", "14"}});
  node.labels["nvidia.com/mig.strategy"] = "single";
  node.labels["nvidia.com/gpu.count"] = "14";
  node.labels["nvidia.com/gpu.product"] = product;
  return node;
}

MigPartedFile File() {
  MigPartedEntry tenancy;
  tenancy.mig_enabled = true;
  tenancy.mig_devices = {{"3g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 2}};
  // A cluster that redefines a default name: its file wins over NVIDIA's.
  MigPartedEntry redefined;
  redefined.mig_enabled = true;
  redefined.mig_devices = {{"1g.10gb", 3}};
  MigPartedEntry beyond;
  beyond.mig_enabled = true;
  beyond.mig_devices = {{"3g.40gb", 3}};
  MigPartedFile file;
  file.layouts = {
      {"tenancy-3-2-1-1", {tenancy}}, {"all-1g.10gb", {redefined}}, {"too-many", {beyond}}};
  return file;
}

struct Case {
  std::string name;
  NodeFacts node;
  bool with_file;
  MigDriftVerdict verdict;
  std::string why;  // exact
  MigLayoutSource source = MigLayoutSource::kNone;
};

TEST(MigDriftTest, ComparesWhatTheNodeAdvertisesWithItsConfig) {
  const std::string kStale =
      "MIG geometry differs from nvidia.com/mig.config=all-1g.10gb (state success): mig-manager "
      "is about to re-cut it; ";
  const MigDriftVerdict kMatches = MigDriftVerdict::kMatches;
  const MigDriftVerdict kDrifted = MigDriftVerdict::kDrifted;
  const MigLayoutSource kDefaults = MigLayoutSource::kDefaults;
  const MigLayoutSource kFile = MigLayoutSource::kFile;
  const std::vector<Case> cases = {
      {"all-1g.10gb as cut", H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "14"}}), false,
       kMatches, "", kDefaults},
      {"all-1g.10gb cut by hand into fewer",
       H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "11"}}), false, kDrifted,
       kStale + "nvidia.com/mig-1g.10gb: expected 14, node shows 11", kDefaults},
      {"all-1g.10gb showing another profile too",
       H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "7"}, {"nvidia.com/mig-7g.80gb", "1"}}),
       false, kDrifted,
       kStale +
           "nvidia.com/mig-1g.10gb: expected 14, node shows 7; nvidia.com/mig-7g.80gb: expected "
           "0, node shows 1",
       kDefaults},
      {"an unhealthy GPU is not drift: capacity keeps its instances",
       WithCapacity(H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "7"}}),
                    {{"nvidia.com/mig-1g.10gb", "14"}}),
       false, kMatches, "", kDefaults},
      {"capacity is what the node was cut into",
       WithCapacity(H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "7"}}),
                    {{"nvidia.com/mig-1g.10gb", "7"}}),
       false, kDrifted, kStale + "nvidia.com/mig-1g.10gb: expected 14, node shows 7", kDefaults},
      {"time-sliced instances, renamed",
       H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb.shared", "56"}},
            {{"nvidia.com/mig-1g.10gb.replicas", "4"}}),
       false, kMatches, "", kDefaults},
      {"time-sliced instances, not renamed",
       H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "56"}},
            {{"nvidia.com/mig-1g.10gb.replicas", "4"}}),
       false, kMatches, "", kDefaults},
      {"all-balanced on H100",
       H100("all-balanced", {{"nvidia.com/mig-3g.40gb", "2"},
                             {"nvidia.com/mig-2g.20gb", "2"},
                             {"nvidia.com/mig-1g.10gb", "4"}}),
       false, kMatches, "", kDefaults},
      {"all-balanced on A30",
       A30Balanced({{"nvidia.com/mig-2g.12gb", "4"}, {"nvidia.com/mig-1g.6gb", "8"}}), false,
       kMatches, "", kDefaults},
      {"all-balanced on A30 with one GPU whole",
       A30Balanced({{"nvidia.com/gpu", "1"},
                    {"nvidia.com/mig-2g.12gb", "3"},
                    {"nvidia.com/mig-1g.6gb", "6"}}),
       false, kDrifted,
       "MIG geometry differs from nvidia.com/mig.config=all-balanced (state success): "
       "mig-manager is about to re-cut it; nvidia.com/gpu: expected 0, node shows 1; "
       "nvidia.com/mig-1g.6gb: expected 8, node shows 6; nvidia.com/mig-2g.12gb: expected 4, "
       "node shows 3",
       kDefaults},
      {"all-disabled", H100("all-disabled", {{"nvidia.com/gpu", "2"}}), false, kMatches, "",
       kDefaults},
      {"all-disabled still cut",
       H100("all-disabled", {{"nvidia.com/gpu", "1"}, {"nvidia.com/mig-7g.80gb", "1"}}), false,
       kDrifted,
       "MIG geometry differs from nvidia.com/mig.config=all-disabled (state success): "
       "mig-manager is about to re-cut it; nvidia.com/gpu: expected 2, node shows 1; "
       "nvidia.com/mig-7g.80gb: expected 0, node shows 1",
       kDefaults},
      {"all-enabled", H100("all-enabled", {}), false, kMatches, "", kDefaults},
      {"a file's layout",
       H100("tenancy-3-2-1-1", {{"nvidia.com/mig-3g.40gb", "2"},
                                {"nvidia.com/mig-2g.20gb", "2"},
                                {"nvidia.com/mig-1g.10gb", "4"}}),
       true, kMatches, "", kFile},
      {"a file redefining a default name wins",
       H100("all-1g.10gb", {{"nvidia.com/mig-1g.10gb", "6"}}), true, kMatches, "", kFile},
      {"a default name the file lacks", H100("all-3g.40gb", {{"nvidia.com/mig-3g.40gb", "3"}}),
       true, kDrifted,
       "MIG geometry differs from nvidia.com/mig.config=all-3g.40gb (state success): "
       "mig-manager is about to re-cut it; nvidia.com/mig-3g.40gb: expected 4, node shows 3",
       kDefaults},
      {"single strategy, the profile shows",
       Single("all-1g.10gb", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"), false, kMatches, "", kDefaults},
      {"single strategy, another profile",
       Single("all-3g.40gb", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"), false, kDrifted,
       "MIG geometry differs from nvidia.com/mig.config=all-3g.40gb (state success): "
       "mig-manager is about to re-cut it; nvidia.com/gpu.product: expected "
       "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb, node shows NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
       kDefaults},
      {"single strategy cannot advertise all-balanced",
       Single("all-balanced", "NVIDIA-H100-80GB-HBM3-MIG-INVALID"), false,
       MigDriftVerdict::kConfigInvalid,
       "nvidia.com/mig.config=all-balanced: mig-configs.all-balanced cuts the GPUs differently, "
       "which the single MIG strategy cannot advertise (GFD labels the node "
       "NVIDIA-H100-80GB-HBM3-MIG-INVALID); use one profile on every GPU or the mixed strategy",
       kDefaults},
      {"a file's layout that cannot apply", H100("too-many", {}), true,
       MigDriftVerdict::kConfigInvalid,
       "nvidia.com/mig.config=too-many: mig-configs.too-many[0]: 3x 3g.40gb has no valid "
       "placement on H100-80GB (memory slices overlap or a profile exceeds its count)",
       kFile},
      {"a name neither knows, no file", H100("tenancy-3-2-1-1", {}), false,
       MigDriftVerdict::kNotCompared,
       "nvidia.com/mig.config=tenancy-3-2-1-1: no mig-parted config given, and tenancy-3-2-1-1 "
       "is not one of NVIDIA's default mig-parted configs"},
      {"a name neither knows, with a file", H100("custom", {}), true, MigDriftVerdict::kNotCompared,
       "nvidia.com/mig.config=custom: not in the mig-parted config, and custom is not one of "
       "NVIDIA's default mig-parted configs"},
      {"a default name for another model", H100("all-1g.5gb", {}), false,
       MigDriftVerdict::kNotCompared,
       "nvidia.com/mig.config=all-1g.5gb: no mig-parted config given, and all-1g.5gb is not one "
       "of NVIDIA's default configs for H100-80GB (it has no MIG profile 1g.5gb)"},
      {"GPU model not in the catalog",
       With(H100("all-1g.10gb", {}), {{"nvidia.com/gpu.product", "Tesla-T4"}}), false,
       MigDriftVerdict::kNotCompared,
       "GPU model of nvidia.com/gpu.product=Tesla-T4 is not in the catalog"},
      {"no GPU count", With(H100("all-1g.10gb", {}), {{"nvidia.com/gpu.count", ""}}), false,
       MigDriftVerdict::kNotCompared,
       "nvidia.com/gpu.count is missing or not a positive number, so the GPUs "
       "nvidia.com/mig.config=all-1g.10gb cuts are unknown",
       kDefaults},
      {"being reconfigured",
       With(H100("all-1g.10gb", {}), {{"nvidia.com/mig.config.state", "pending"}}), false,
       MigDriftVerdict::kNotApplicable, "nvidia.com/mig.config.state=pending: being reconfigured"},
      {"device plugin paused",
       With(H100("all-1g.10gb", {}),
            {{"nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change"}}),
       false, MigDriftVerdict::kNotApplicable,
       "nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change: being reconfigured"},
      {"no mig-manager state", With(H100("all-1g.10gb", {}), {{"nvidia.com/mig.config.state", ""}}),
       false, MigDriftVerdict::kNotApplicable, "no nvidia.com/mig.config.state label"},
      {"no config", With(H100("x", {}), {{"nvidia.com/mig.config", ""}}), false,
       MigDriftVerdict::kNotApplicable, "no nvidia.com/mig.config label"},
      {"not a MIG node", With(H100("all-1g.10gb", {}), {{"nvidia.com/mig.strategy", ""}}), false,
       MigDriftVerdict::kNotApplicable,
       "not a MIG node (nvidia.com/mig.strategy is neither mixed nor single)"},
  };
  const Catalog with_file =
      common::BuiltinCatalog().WithMigParted(std::make_shared<const MigPartedFile>(File()));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MigDrift d = CheckMigDrift(c.node, c.with_file ? with_file : common::BuiltinCatalog());
    EXPECT_EQ(d.verdict, c.verdict);
    EXPECT_EQ(d.why, c.why);
    EXPECT_EQ(d.source, c.source);
    EXPECT_EQ(d.drifted(), c.verdict == MigDriftVerdict::kDrifted);
    EXPECT_EQ(d.differences.empty(), c.verdict != MigDriftVerdict::kDrifted);
  }
}

}  // namespace
}  // namespace topology
