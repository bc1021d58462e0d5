// The nvidia-smi -cgi order: NVIDIA's documented example, and a verified order for packed layouts.
#include "plan/mig_creation.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plan/mig_packing.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using plan::testing::Count;
using plan::testing::Model;
using topology::CheckLayout;
using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;
using topology::PlaceProfiles;

TEST(CreationTest, ReplaysNvidiasDocumentedExample) {
  const GpuModel& a100 = Model("A100-40GB");
  auto p = [&](const char* name) { return a100.FindProfile(name); };
  EXPECT_FALSE(SimulateCreate(a100, {p("1g.5gb"), p("1g.5gb"), p("2g.10gb"), p("3g.20gb")}));
  EXPECT_TRUE(SimulateCreate(a100, {p("3g.20gb"), p("1g.5gb"), p("2g.10gb"), p("1g.5gb")}));
}

TEST(CreationTest, EveryModelGetsAVerifiedOrderForItsPackedLayouts) {
  std::mt19937 rng(7);
  for (const GpuModel& gpu : Cat().models()) {
    SCOPED_TRACE(gpu.model);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<const MigProfile*> mix;
      std::uniform_int_distribution<size_t> pick(0, gpu.profiles.size() - 1);
      for (int k = 0; k < 10; ++k) mix.push_back(&gpu.profiles[pick(rng)]);
      auto packed = PackProfiles(gpu, mix);
      ASSERT_TRUE(packed.ok()) << packed.status();
      for (const auto& layout : *packed) {
        CreationOrder order = PlanCreation(gpu, layout);
        EXPECT_TRUE(CheckLayout(gpu, order.layout).ok());
        std::vector<const MigProfile*> want, got;
        for (const PlacedInstance& i : layout) want.push_back(i.profile);
        for (const PlacedInstance& i : order.layout) got.push_back(i.profile);
        EXPECT_EQ(Count(got), Count(want));
        if (order.verified) {
          auto replay = SimulateCreate(gpu, order.order);
          ASSERT_TRUE(replay.has_value());
          EXPECT_EQ(replay->size(), layout.size());
        }
      }
    }
  }
}

TEST(CreationTest, H100ThreeTwoOneOneStartsWithTheThreeG) {
  const GpuModel& h100 = Model("H100-80GB");
  auto layout = PlaceProfiles(h100, {h100.FindProfile("1g.10gb"), h100.FindProfile("1g.10gb"),
                                     h100.FindProfile("2g.20gb"), h100.FindProfile("3g.40gb")});
  ASSERT_TRUE(layout.has_value());
  CreationOrder order = PlanCreation(h100, *layout);
  ASSERT_TRUE(order.verified);
  std::vector<std::string> names;
  for (const MigProfile* p : order.order) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}));
}

}  // namespace
}  // namespace plan
