// MIG placement math on one GPU, checked against layouts the MIG user guide allows and forbids.
#include "topology/mig_layout.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

const GpuModel& Model(absl::string_view name) {
  const GpuModel* m = common::BuiltinCatalog().FindModel(name);
  if (m == nullptr) {
    ADD_FAILURE() << "catalog lacks " << name;
    static const GpuModel kEmpty;
    return kEmpty;
  }
  return *m;
}

const MigProfile* Profile(const GpuModel& gpu, absl::string_view name) {
  const MigProfile* p = gpu.FindProfile(name);
  EXPECT_NE(p, nullptr) << gpu.model << " lacks " << name;
  return p;
}

std::vector<const MigProfile*> Profiles(const GpuModel& gpu,
                                        const std::vector<std::string>& names) {
  std::vector<const MigProfile*> out;
  for (const std::string& n : names) out.push_back(Profile(gpu, n));
  return out;
}

// "name@start" pairs, in start order, for readable expectations.
std::vector<std::string> Describe(const std::vector<PlacedInstance>& layout) {
  std::vector<std::string> out;
  for (const PlacedInstance& i : layout) out.push_back(absl::StrCat(i.profile->name, "@", i.start));
  return out;
}

TEST(CheckLayoutTest, H100Layouts) {
  const GpuModel& h100 = Model("H100-80GB");
  struct Row {
    std::string name;
    std::vector<std::pair<std::string, int>> layout;
    std::string error;  // empty: valid
  };
  const std::vector<Row> rows = {
      {"empty GPU", {}, ""},
      {"two 3g side by side", {{"3g.40gb", 0}, {"3g.40gb", 4}}, ""},
      {"4g and 3g", {{"4g.40gb", 0}, {"3g.40gb", 4}}, ""},
      {"3g 2g 1g 1g", {{"2g.20gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 3}, {"3g.40gb", 4}}, ""},
      {"whole GPU", {{"7g.80gb", 0}}, ""},
      {"seven 1g",
       {{"1g.10gb", 0},
        {"1g.10gb", 1},
        {"1g.10gb", 2},
        {"1g.10gb", 3},
        {"1g.10gb", 4},
        {"1g.10gb", 5},
        {"1g.10gb", 6}},
       ""},
      {"overlap",
       {{"3g.40gb", 0}, {"2g.20gb", 2}},
       "2g.20gb at 2 overlaps 3g.40gb on memory slice 2"},
      {"same slice twice",
       {{"1g.10gb", 3}, {"1g.10gb", 3}},
       "1g.10gb at 3 overlaps 1g.10gb on memory slice 3"},
      {"3g cannot start at 2",
       {{"3g.40gb", 2}},
       "3g.40gb cannot start at memory slice 2 on H100-80GB"},
      {"1g cannot start at 7",
       {{"1g.10gb", 7}},
       "1g.10gb cannot start at memory slice 7 on H100-80GB"},
      {"2g cannot start at 6",
       {{"2g.20gb", 6}},
       "2g.20gb cannot start at memory slice 6 on H100-80GB"},
      {"negative start", {{"1g.10gb", -1}}, "1g.10gb cannot start at memory slice -1 on H100-80GB"},
      {"two +me instances",
       {{"1g.10gb+me", 0}, {"1g.10gb+me", 1}},
       "more than 1 1g.10gb+me on one H100-80GB"},
      {"whole GPU plus a slice",
       {{"7g.80gb", 0}, {"1g.10gb", 0}},
       "1g.10gb at 0 overlaps 7g.80gb on memory slice 0"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::vector<PlacedInstance> layout;
    for (const auto& [profile, start] : row.layout)
      layout.push_back({Profile(h100, profile), start});
    absl::Status s = CheckLayout(h100, layout);
    if (row.error.empty()) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(s.message(), row.error);
    }
  }
}

MigProfile MakeProfile(std::string name, int compute_slices, int memory_slices, int max_count,
                       std::vector<int> placements) {
  MigProfile p;
  p.name = std::move(name);
  p.compute_slices = compute_slices;
  p.memory_slices = memory_slices;
  p.max_count = max_count;
  p.placements = std::move(placements);
  return p;
}

// Rules the real catalog cannot reach: a placement past the end and too many compute slices.
TEST(CheckLayoutTest, SyntheticGeometry) {
  GpuModel gpu;
  gpu.model = "Toy";
  gpu.compute_slices = 2;
  gpu.memory_slices = 4;
  gpu.profiles.push_back(MakeProfile("w", /*compute=*/1, /*memory=*/2, /*max=*/2, {3}));
  gpu.profiles.push_back(MakeProfile("c", /*compute=*/2, /*memory=*/1, /*max=*/4, {0, 1, 2, 3}));
  const MigProfile* wide = &gpu.profiles[0];
  const MigProfile* compute = &gpu.profiles[1];

  EXPECT_EQ(CheckLayout(gpu, {{wide, 3}}).message(), "w at 3 runs past Toy's memory slices");
  EXPECT_EQ(CheckLayout(gpu, {{compute, 0}, {compute, 1}}).message(),
            "layout uses 4 compute slices, Toy has 2");
  EXPECT_TRUE(CheckLayout(gpu, {{compute, 2}}).ok());
  // PlaceProfiles finds slices for both but the compute budget rejects the layout.
  EXPECT_FALSE(PlaceProfiles(gpu, {compute, compute}).has_value());
  EXPECT_FALSE(PlaceProfiles(gpu, {wide}).has_value());
}

TEST(PlaceProfilesTest, H100) {
  const GpuModel& h100 = Model("H100-80GB");
  struct Row {
    std::string name;
    std::vector<std::string> profiles;
    std::optional<std::vector<std::string>> layout;  // nullopt: cannot be placed
  };
  const std::vector<Row> rows = {
      {"nothing", {}, std::vector<std::string>{}},
      // 3g must take the upper half: at 0 it would leave 1g with no valid start at 7.
      {"3g+2g+1g+1g",
       {"1g.10gb", "3g.40gb", "1g.10gb", "2g.20gb"},
       std::vector<std::string>{"2g.20gb@0", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"}},
      {"4g+3g", {"3g.40gb", "4g.40gb"}, std::vector<std::string>{"4g.40gb@0", "3g.40gb@4"}},
      {"seven 1g", std::vector<std::string>(7, "1g.10gb"),
       std::vector<std::string>{"1g.10gb@0", "1g.10gb@1", "1g.10gb@2", "1g.10gb@3", "1g.10gb@4",
                                "1g.10gb@5", "1g.10gb@6"}},
      {"eight 1g", std::vector<std::string>(8, "1g.10gb"), std::nullopt},
      {"2x3g", {"3g.40gb", "3g.40gb"}, std::vector<std::string>{"3g.40gb@0", "3g.40gb@4"}},
      {"three 3g", {"3g.40gb", "3g.40gb", "3g.40gb"}, std::nullopt},
      {"3g+4g+1g", {"3g.40gb", "4g.40gb", "1g.10gb"}, std::nullopt},
      {"7g", {"7g.80gb"}, std::vector<std::string>{"7g.80gb@0"}},
      {"7g+1g", {"7g.80gb", "1g.10gb"}, std::nullopt},
      {"three 2g and a 1g",
       {"1g.10gb", "2g.20gb", "2g.20gb", "2g.20gb"},
       std::vector<std::string>{"2g.20gb@0", "2g.20gb@2", "2g.20gb@4", "1g.10gb@6"}},
      {"four 1g.20gb", std::vector<std::string>(4, "1g.20gb"),
       std::vector<std::string>{"1g.20gb@0", "1g.20gb@2", "1g.20gb@4", "1g.20gb@6"}},
      {"two +me", {"1g.10gb+me", "1g.10gb+me"}, std::nullopt},
      {"3g+3g+1g", {"3g.40gb", "3g.40gb", "1g.10gb"}, std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::optional<std::vector<PlacedInstance>> placed =
        PlaceProfiles(h100, Profiles(h100, row.profiles));
    if (!row.layout) {
      EXPECT_FALSE(placed.has_value()) << testing::PrintToString(Describe(*placed));
      continue;
    }
    ASSERT_TRUE(placed.has_value());
    EXPECT_EQ(Describe(*placed), *row.layout);
    EXPECT_TRUE(CheckLayout(h100, *placed).ok()) << CheckLayout(h100, *placed);
  }
}

TEST(PlaceProfilesTest, A30Geometry) {
  const GpuModel& a30 = Model("A30-24GB");
  EXPECT_EQ(a30.memory_slices, 4);
  EXPECT_EQ(a30.compute_slices, 4);
  struct Row {
    std::string name;
    std::vector<std::string> profiles;
    std::optional<std::vector<std::string>> layout;
  };
  const std::vector<Row> rows = {
      {"4g", {"4g.24gb"}, std::vector<std::string>{"4g.24gb@0"}},
      {"two 2g", {"2g.12gb", "2g.12gb"}, std::vector<std::string>{"2g.12gb@0", "2g.12gb@2"}},
      {"2g+1g+1g",
       {"1g.6gb", "1g.6gb", "2g.12gb"},
       std::vector<std::string>{"2g.12gb@0", "1g.6gb@2", "1g.6gb@3"}},
      {"four 1g", std::vector<std::string>(4, "1g.6gb"),
       std::vector<std::string>{"1g.6gb@0", "1g.6gb@1", "1g.6gb@2", "1g.6gb@3"}},
      {"five 1g", std::vector<std::string>(5, "1g.6gb"), std::nullopt},
      {"4g+1g", {"4g.24gb", "1g.6gb"}, std::nullopt},
      {"three 2g", {"2g.12gb", "2g.12gb", "2g.12gb"}, std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::optional<std::vector<PlacedInstance>> placed =
        PlaceProfiles(a30, Profiles(a30, row.profiles));
    if (!row.layout) {
      EXPECT_FALSE(placed.has_value()) << testing::PrintToString(Describe(*placed));
      continue;
    }
    ASSERT_TRUE(placed.has_value());
    EXPECT_EQ(Describe(*placed), *row.layout);
  }
  EXPECT_EQ(a30.FindProfile("3g.40gb"), nullptr);
  // A 2g on A30 may only start at 0 or 2.
  EXPECT_EQ(CheckLayout(a30, {{Profile(a30, "2g.12gb"), 1}}).message(),
            "2g.12gb cannot start at memory slice 1 on A30-24GB");
}

}  // namespace
}  // namespace topology
