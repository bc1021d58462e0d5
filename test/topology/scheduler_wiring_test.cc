// The managed resource names of the scheduler wiring: what the catalog and the policy imply,
// each once and in a stable order, and the narrowing to what a cluster's nodes advertise.
#include "topology/scheduler_wiring.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

std::vector<std::string> WiringNames(const std::vector<ManagedResource>& resources) {
  std::vector<std::string> out;
  for (const ManagedResource& r : resources) out.push_back(r.name);
  return out;
}

// Two models that share a profile name, one "+me" profile.
Catalog TwoModelWiringCatalog() {
  auto profile = [](const char* name) {
    MigProfile p;
    p.name = name;
    return p;
  };
  GpuModel a;
  a.model = "A";
  a.profiles = {profile("1g.10gb"), profile("1g.10gb+me"), profile("7g.80gb")};
  GpuModel b;
  b.model = "B";
  b.profiles = {profile("1g.10gb"), profile("3g.47gb")};
  return Catalog({a, b});
}

TEST(SchedulerWiringTest, NamesInGroupsEachOnce) {
  Policy policy = Policy::AllowAll();
  policy.shared_resources = {"example.com/vgpu", "nvidia.com/gpu.shared"};
  policy.memory_resources = {"nvidia.com/gpu.memory", "example.com/vram"};
  const std::vector<ManagedResource> want = {
      {"nvidia.com/gpu", ManagedKind::kWholeGpu, false},
      {"nvidia.com/gpu.shared", ManagedKind::kSharedGpu, false},
      {"nvidia.com/mig-1g.10gb", ManagedKind::kMig, false},
      {"nvidia.com/mig-1g.10gb.me", ManagedKind::kMig, false},
      {"nvidia.com/mig-7g.80gb", ManagedKind::kMig, false},
      {"nvidia.com/mig-3g.47gb", ManagedKind::kMig, false},
      {"nvidia.com/mig-1g.10gb.shared", ManagedKind::kSharedMig, false},
      {"nvidia.com/mig-1g.10gb.me.shared", ManagedKind::kSharedMig, false},
      {"nvidia.com/mig-7g.80gb.shared", ManagedKind::kSharedMig, false},
      {"nvidia.com/mig-3g.47gb.shared", ManagedKind::kSharedMig, false},
      // nvidia.com/gpu.shared is already listed: not twice.
      {"example.com/vgpu", ManagedKind::kConfiguredShared, false},
      {"nvidia.com/gpu.memory", ManagedKind::kMemory, true},
      {"example.com/vram", ManagedKind::kMemory, true},
      // The GPU device classes named without a pattern: their implicit DRA extended resource.
      {"deviceclass.resource.kubernetes.io/gpu.nvidia.com", ManagedKind::kDraClass, false},
      {"deviceclass.resource.kubernetes.io/mig.nvidia.com", ManagedKind::kDraClass, false},
  };
  EXPECT_EQ(ManagedResources(TwoModelWiringCatalog(), policy), want);
}

TEST(SchedulerWiringTest, DefaultPolicyAddsTheDefaultMemoryNames) {
  std::vector<ManagedResource> got = ManagedResources(Catalog(), Policy::AllowAll());
  EXPECT_EQ(WiringNames(got),
            (std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/gpu.shared",
                                      "nvidia.com/gpu.memory", "nvidia.com/gpumem",
                                      "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
                                      "deviceclass.resource.kubernetes.io/mig.nvidia.com"}));
}

// Every profile of every built-in model, as the device plugin names it, exclusive and shared.
TEST(SchedulerWiringTest, BuiltinCatalogEveryProfileOfEveryModel) {
  const Catalog& catalog = common::BuiltinCatalog();
  std::vector<std::string> names = WiringNames(ManagedResources(catalog, Policy::AllowAll()));
  std::set<std::string> unique(names.begin(), names.end());
  ASSERT_EQ(unique.size(), names.size()) << "a name listed twice";
  std::set<std::string> profiles;
  for (const GpuModel& model : catalog.models()) {
    for (const MigProfile& profile : model.profiles) {
      SCOPED_TRACE(absl::StrCat(model.model, " ", profile.name));
      profiles.insert(profile.ResourceSuffix());
      EXPECT_EQ(unique.count(absl::StrCat("nvidia.com/mig-", profile.ResourceSuffix())), 1u);
      EXPECT_EQ(unique.count(absl::StrCat("nvidia.com/mig-", profile.ResourceSuffix(), ".shared")),
                1u);
    }
  }
  EXPECT_EQ(unique.count("nvidia.com/mig-1g.18gb.me"), 1u) << "H200/GH200 media extension";
  EXPECT_EQ(unique.count("nvidia.com/mig-1g.18gb+me"), 0u) << "+ is written as .";
  // The count: 52 distinct profile names, so 104 MIG names; whole, shared, 2 memory,
  // 2 DRA classes.
  EXPECT_EQ(profiles.size(), 52u);
  EXPECT_EQ(names.size(), 2 + 2 * profiles.size() + 2 + 2);
}

TEST(SchedulerWiringTest, AdvertisedOnlyKeepsAdvertisedMemoryAndDraClassNames) {
  NodeFacts mig_node;
  mig_node.name = "mig";
  mig_node.allocatable["nvidia.com/mig-1g.10gb"] = Quantity::FromUnits(7);
  mig_node.allocatable["cpu"] = Quantity::FromUnits(64);
  NodeFacts shared_node;
  shared_node.name = "shared";
  shared_node.allocatable["nvidia.com/gpu.shared"] = Quantity::FromUnits(0);  // all in use
  Policy policy = Policy::AllowAll();
  std::vector<ManagedResource> got =
      AdvertisedOnly(ManagedResources(TwoModelWiringCatalog(), policy), {mig_node, shared_node});
  EXPECT_EQ(WiringNames(got),
            (std::vector<std::string>{"nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                                      "nvidia.com/gpu.memory", "nvidia.com/gpumem",
                                      "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
                                      "deviceclass.resource.kubernetes.io/mig.nvidia.com"}));
  EXPECT_EQ(WiringNames(AdvertisedOnly(ManagedResources(TwoModelWiringCatalog(), policy), {})),
            (std::vector<std::string>{"nvidia.com/gpu.memory", "nvidia.com/gpumem",
                                      "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
                                      "deviceclass.resource.kubernetes.io/mig.nvidia.com"}));
}

}  // namespace
}  // namespace topology
