// A small fleet of nodes built from realistic labels (MIG, MIG-shared, time-sliced, exclusive,
// no GPU) and a demo-like policy, shared by the model's tests: fit, placement, occupancy.
#ifndef GPU_TENANCY_TEST_TOPOLOGY_FLEET_FIXTURE_H_
#define GPU_TENANCY_TEST_TOPOLOGY_FLEET_FIXTURE_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/demand.h"
#include "topology/fit.h"
#include "topology/occupancy.h"
#include "topology/policy.h"
#include "topology/supply.h"

namespace topology::testing_fleet {

inline Tier MakeTier(std::string name, std::vector<SharingMode> modes) {
  Tier tier;
  tier.name = std::move(name);
  for (SharingMode m : modes) tier.modes.Add(m);
  return tier;
}

inline Policy DemoLikePolicy() {
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

inline NodeFacts Node(Labels labels,
                      std::initializer_list<std::pair<std::string, std::string>> alloc) {
  NodeFacts node;
  node.name = "n";
  node.labels = std::move(labels);
  node.allocatable.emplace("cpu", Quantity::FromUnits(8));
  for (const auto& [name, text] : alloc) node.allocatable.emplace(name, *Quantity::Parse(text));
  return node;
}

inline const Labels kH100Mig = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                {"nvidia.com/gpu.memory", "81559"},
                                {"nvidia.com/mig.strategy", "mixed"},
                                {"nvidia.com/mig.config.state", "success"},
                                {"nvidia.com/mig-3g.40gb.memory", "40448"},
                                {"nvidia.com/mig-1g.10gb.memory", "9984"},
                                {"gpu-tenancy.io/pool", "gpu-mig"}};

inline Labels With(Labels base,
                   std::initializer_list<std::pair<const std::string, std::string>> extra) {
  for (const auto& [k, v] : extra) base.insert_or_assign(k, v);
  return base;
}

inline GpuDemand Demand(std::initializer_list<std::pair<const std::string, int64_t>> devices,
                        int64_t memory_mib = 0) {
  GpuDemand d;
  for (const auto& [name, count] : devices) d.devices.Set(name, count);
  d.memory_mib = memory_mib;
  return d;
}

inline NodeOccupancy Used(std::initializer_list<std::pair<const std::string, int64_t>> used,
                          std::map<int, int64_t> by_gpu = {}, int64_t unassigned_mib = 0) {
  NodeOccupancy o;
  for (const auto& [name, count] : used) o.used.Set(name, count);
  o.shared_memory_by_gpu = std::move(by_gpu);
  o.shared_memory_unassigned_mib = unassigned_mib;
  return o;
}

class FleetTest : public ::testing::Test {
 protected:
  FleetTest() {
    policy_ = DemoLikePolicy();
    canary_policy_ = DemoLikePolicy();
    canary_policy_.canary = Canary{"1g.10gb", 1, "gpu-tenancy.io/canary"};

    AddNode("mig", Node(kH100Mig, {{"nvidia.com/mig-3g.40gb", "2"},
                                   {"nvidia.com/mig-2g.20gb", "2"},
                                   {"nvidia.com/mig-1g.10gb", "4"}}));
    AddNode("mig-one-1g", Node(kH100Mig, {{"nvidia.com/mig-1g.10gb", "1"}}));
    AddNode("mig-reconfiguring", Node(With(kH100Mig, {{"nvidia.com/mig.config.state", "pending"}}),
                                      {{"nvidia.com/mig-3g.40gb", "2"}}));
    // Settled, but two GPUs labelled all-3g.40gb show two 3g.40gb, not four: mig-manager re-cuts
    // it.
    AddNode("mig-drifted", Node(With(kH100Mig, {{"nvidia.com/gpu.count", "2"},
                                                {"nvidia.com/mig.config", "all-3g.40gb"}}),
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

}  // namespace topology::testing_fleet

#endif  // GPU_TENANCY_TEST_TOPOLOGY_FLEET_FIXTURE_H_
