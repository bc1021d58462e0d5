#include "topology/mig_parted.h"

#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

const GpuModel& H100() { return *common::BuiltinCatalog().FindModel("H100-80GB"); }

MigPartedEntry Cut(std::vector<std::pair<std::string, int>> devices, std::vector<int> gpus = {}) {
  MigPartedEntry e;
  e.mig_enabled = !devices.empty();
  e.mig_devices = std::move(devices);
  e.all_devices = gpus.empty();
  e.devices = std::move(gpus);
  return e;
}

TEST(MigPartedGeometryTest, ResolvesEveryGpuWithValidPlacements) {
  MigPartedLayout layout{
      "balanced", {Cut({{"3g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 2}}, {0}), Cut({}, {1})}};
  absl::StatusOr<NodeGeometry> g = ResolveGeometry(layout, H100(), 2);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->gpus.size(), 2u);
  EXPECT_EQ(g->gpus[0].instances.size(), 4u);
  EXPECT_TRUE(CheckLayout(H100(), g->gpus[0].instances).ok());
  EXPECT_FALSE(g->gpus[1].mig_enabled);
  EXPECT_EQ(DescribeGeometry(*g),
            (std::vector<std::string>{"GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb",
                                      "GPU 1: MIG disabled"}));
  EXPECT_EQ(SmallestProfile(*g)->name, "1g.10gb");
}

TEST(MigPartedGeometryTest, RefusesWhatTheGpuCannotHold) {
  struct Case {
    const char* name;
    MigPartedLayout layout;
    const char* error;
  };
  std::vector<Case> cases = {
      {"unknown profile", {"x", {Cut({{"1g.5gb", 7}})}}, "profile 1g.5gb does not exist on H100"},
      {"overlap",
       {"x", {Cut({{"4g.40gb", 1}, {"3g.40gb", 1}, {"1g.10gb", 1}})}},
       "has no valid placement on H100-80GB"},
      {"too many", {"x", {Cut({{"3g.40gb", 3}})}}, "has no valid placement"},
      {"index out of range", {"x", {Cut({{"7g.80gb", 1}}, {0, 2})}}, "device 2 does not exist"},
      {"gpu left out", {"x", {Cut({{"7g.80gb", 1}}, {0})}}, "says nothing about GPU 1"},
      {"gpu cut twice", {"x", {Cut({{"7g.80gb", 1}}), Cut({}, {1})}}, "GPU 1 is already cut"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeGeometry> g = ResolveGeometry(c.layout, H100(), 2);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find(c.error), std::string::npos) << g.status();
  }
}

TEST(MigPartedGeometryTest, SkipsFilteredEntriesForOtherGpus) {
  MigPartedEntry a100 = Cut({{"1g.5gb", 7}});
  a100.device_filter = {"0x20B010DE"};
  MigPartedLayout layout{"all-1g", {a100, Cut({{"1g.10gb", 7}})}};
  absl::StatusOr<NodeGeometry> g = ResolveGeometry(layout, H100(), 1);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->skipped.size(), 1u);
  EXPECT_EQ(g->gpus[0].instances.size(), 7u);
}

TEST(MigPartedOfferTest, MixedCountsEveryProfileAndWholeGpus) {
  MigPartedLayout layout{"x", {Cut({{"3g.40gb", 2}}, {0}), Cut({}, {1})}};
  NodeGeometry g = *ResolveGeometry(layout, H100(), 2);
  ExpectedOffer want = *PredictOffer(g, MigStrategy::kMixed, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(want.allocatable,
            (std::map<std::string, int64_t>{{"nvidia.com/gpu", 1}, {"nvidia.com/mig-3g.40gb", 2}}));
  EXPECT_FALSE(want.product);

  ObservedOffer node;
  node.allocatable = {{"nvidia.com/gpu", 1}, {"nvidia.com/mig-3g.40gb", 2}};
  EXPECT_TRUE(CompareOffer(want, node).empty());
  node.allocatable = {{"nvidia.com/mig-3g.40gb", 1}, {"nvidia.com/mig-1g.10gb", 3}};
  node.labels = {{"nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change"}};
  EXPECT_EQ(CompareOffer(want, node),
            (std::vector<std::string>{"nvidia.com/gpu: expected 1, node shows 0",
                                      "nvidia.com/mig-1g.10gb: expected 0, node shows 3",
                                      "nvidia.com/mig-3g.40gb: expected 2, node shows 1",
                                      "nvidia.com/gpu.deploy.device-plugin is still "
                                      "paused-for-mig-change"}));
}

TEST(MigPartedOfferTest, SingleAdvertisesInstancesAsGpusWithTheProductLabel) {
  NodeGeometry g = *ResolveGeometry({"x", {Cut({{"1g.10gb", 7}})}}, H100(), 2);
  ExpectedOffer want = *PredictOffer(g, MigStrategy::kSingle, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(want.allocatable.at("nvidia.com/gpu"), 14);
  EXPECT_EQ(want.product, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb");
  ObservedOffer node;
  node.allocatable = {{"nvidia.com/gpu", 14}};
  node.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  EXPECT_EQ(CompareOffer(want, node),
            (std::vector<std::string>{"nvidia.com/gpu.product: expected "
                                      "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb, node shows "
                                      "NVIDIA-H100-80GB-HBM3"}));

  NodeGeometry mixed_cut =
      *ResolveGeometry({"x", {Cut({{"1g.10gb", 7}}, {0}), Cut({{"7g.80gb", 1}}, {1})}}, H100(), 2);
  absl::StatusOr<ExpectedOffer> invalid =
      PredictOffer(mixed_cut, MigStrategy::kSingle, "NVIDIA-H100-80GB-HBM3");
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find("MIG-INVALID"), std::string::npos);
}

TEST(MigPartedOfferTest, OfferOfTheNodeIsWhatARollbackComesBackTo) {
  ObservedOffer node;
  node.allocatable = {{"nvidia.com/mig-3g.40gb", 4}, {"nvidia.com/gpu.shared", 2}};
  ExpectedOffer before = OfferOf(node, MigStrategy::kMixed);
  EXPECT_EQ(before.allocatable,
            (std::map<std::string, int64_t>{{"nvidia.com/gpu", 0}, {"nvidia.com/mig-3g.40gb", 4}}));
  EXPECT_TRUE(CompareOffer(before, node).empty());
}

}  // namespace
}  // namespace topology
