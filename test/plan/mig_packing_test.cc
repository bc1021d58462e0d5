// MIG packing: valid layouts for every catalog GPU and profile mix, and the fewest GPUs on
// known layouts.
#include "plan/mig_packing.h"

#include <algorithm>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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

void ExpectValidPacking(const GpuModel& gpu, const std::vector<const MigProfile*>& profiles,
                        int* gpus_used = nullptr) {
  absl::StatusOr<std::vector<std::vector<PlacedInstance>>> packed = PackProfiles(gpu, profiles);
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<const MigProfile*> placed;
  int memory = 0, compute = 0;
  for (const auto& layout : *packed) {
    EXPECT_TRUE(CheckLayout(gpu, layout).ok()) << CheckLayout(gpu, layout);
    EXPECT_FALSE(layout.empty());
    for (const PlacedInstance& inst : layout) placed.push_back(inst.profile);
  }
  for (const MigProfile* p : profiles) {
    memory += p->memory_slices;
    compute += p->compute_slices;
  }
  EXPECT_EQ(Count(placed), Count(profiles));
  int lower = std::max((memory + gpu.memory_slices - 1) / gpu.memory_slices,
                       (compute + gpu.compute_slices - 1) / gpu.compute_slices);
  EXPECT_GE(static_cast<int>(packed->size()), lower);
  if (gpus_used) *gpus_used = static_cast<int>(packed->size());
}

TEST(PackProfilesTest, EveryCatalogModelEveryProfileMix) {
  std::mt19937 rng(20240611);
  for (const GpuModel& gpu : Cat().models()) {
    SCOPED_TRACE(gpu.model);
    ASSERT_FALSE(gpu.profiles.empty());
    // Each profile alone, max_count copies of it (a full card of one kind), and twice that.
    for (const MigProfile& p : gpu.profiles) {
      SCOPED_TRACE(p.name);
      ExpectValidPacking(gpu, {&p});
      int used = 0;
      ExpectValidPacking(gpu, std::vector<const MigProfile*>(p.max_count, &p), &used);
      if (p.memory_slices * p.max_count <= gpu.memory_slices &&
          p.compute_slices * p.max_count <= gpu.compute_slices) {
        EXPECT_EQ(used, 1) << "a full card of " << p.name << " should fit one GPU";
      }
      ExpectValidPacking(gpu, std::vector<const MigProfile*>(2 * p.max_count, &p));
    }
    // One of every profile, attribute variants included.
    std::vector<const MigProfile*> all;
    for (const MigProfile& p : gpu.profiles) all.push_back(&p);
    ExpectValidPacking(gpu, all);
    // Random mixes.
    for (int trial = 0; trial < 40; ++trial) {
      std::uniform_int_distribution<size_t> pick(0, gpu.profiles.size() - 1);
      std::uniform_int_distribution<int> size(1, 20);
      std::vector<const MigProfile*> mix;
      for (int k = size(rng); k > 0; --k) mix.push_back(&gpu.profiles[pick(rng)]);
      SCOPED_TRACE(absl::StrCat("trial ", trial));
      ExpectValidPacking(gpu, mix);
    }
  }
}

TEST(PackProfilesTest, KnownLayoutsUseTheFewestGpus) {
  const GpuModel& h100 = Model("H100-80GB");
  auto p = [&](const char* name) { return h100.FindProfile(name); };
  int used = 0;
  ExpectValidPacking(h100,
                     {p("1g.10gb"), p("3g.40gb"), p("1g.10gb"), p("2g.20gb"), p("3g.40gb"),
                      p("1g.10gb"), p("2g.20gb"), p("1g.10gb")},
                     &used);
  EXPECT_EQ(used, 2);  // two cards cut 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb
  ExpectValidPacking(h100, std::vector<const MigProfile*>(7, p("1g.10gb")), &used);
  EXPECT_EQ(used, 1);
  ExpectValidPacking(h100, std::vector<const MigProfile*>(8, p("1g.10gb")), &used);
  EXPECT_EQ(used, 2);  // slice 7 is out of reach of 1-slice profiles
  ExpectValidPacking(h100, {p("4g.40gb"), p("3g.40gb"), p("4g.40gb")}, &used);
  EXPECT_EQ(used, 2);
}

TEST(PackProfilesTest, RejectsForeignProfiles) {
  const GpuModel& h100 = Model("H100-80GB");
  const GpuModel& a100 = Model("A100-40GB");
  EXPECT_EQ(PackProfiles(h100, {a100.FindProfile("1g.5gb")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace plan
