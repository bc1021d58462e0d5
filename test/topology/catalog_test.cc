// The built-in GPU catalog: it loads, it knows the models the fleet runs, product labels match,
// unknown facts stay unknown, and every profile it lists can actually be placed.
#include "topology/catalog.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/mig_layout.h"

namespace topology {
namespace {

const Catalog& Builtin() { return common::BuiltinCatalog(); }

TEST(CatalogTest, BuiltinCatalogLoadsAndValidates) {
  const Catalog& catalog = Builtin();
  EXPECT_TRUE(catalog.Validate().ok()) << catalog.Validate();
  EXPECT_GE(catalog.models().size(), 9u);
}

TEST(CatalogTest, BuiltinCatalogHasTheFleetModels) {
  struct Row {
    std::string name;
    std::string model;
    std::optional<int64_t> total_memory_mib;
    size_t profiles;
  };
  const std::vector<Row> rows = {
      {"A30", "A30-24GB", 24576, 5},
      {"A100 40GB", "A100-40GB", 40960, 7},
      {"A100 80GB", "A100-80GB", 81920, 7},
      {"H100 80GB", "H100-80GB", 81559, 7},
      {"H100 NVL", "H100-NVL-94GB", 95830, 7},
      {"GH200 96GB", "H100-96GB-GH200", std::nullopt, 7},
      {"GH200 144GB", "GH200-144GB-HBM3e", std::nullopt, 7},
      {"H200", "H200-141GB", std::nullopt, 7},
      {"B200", "B200-180GB", std::nullopt, 7},
      {"GB200", "GB200-186GB", std::nullopt, 7},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const GpuModel* m = Builtin().FindModel(row.model);
    ASSERT_NE(m, nullptr) << row.model;
    EXPECT_EQ(m->total_memory_mib, row.total_memory_mib);
    EXPECT_EQ(m->profiles.size(), row.profiles);
  }
  EXPECT_EQ(Builtin().FindModel("A100"), nullptr);
  EXPECT_EQ(Builtin().FindModel(""), nullptr);
}

TEST(CatalogTest, H100ProfilesMatchTheMigUserGuide) {
  const GpuModel* h100 = Builtin().FindModel("H100-80GB");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->compute_slices, 7);
  EXPECT_EQ(h100->memory_slices, 8);
  EXPECT_EQ(h100->max_instances, 7);
  struct Row {
    std::string name;
    int id, memory_slices, compute_slices, max_count;
    int64_t memory_mib;
    std::vector<int> placements;
  };
  const std::vector<Row> rows = {
      {"1g.10gb", 19, 1, 1, 7, 9984, {0, 1, 2, 3, 4, 5, 6}},
      {"1g.10gb+me", 20, 1, 1, 1, 9984, {0, 1, 2, 3, 4, 5, 6}},
      {"1g.20gb", 15, 2, 1, 4, 20096, {0, 2, 4, 6}},
      {"2g.20gb", 14, 2, 2, 3, 20096, {0, 2, 4}},
      {"3g.40gb", 9, 4, 3, 2, 40448, {0, 4}},
      {"4g.40gb", 5, 4, 4, 1, 40448, {0}},
      {"7g.80gb", 0, 8, 7, 1, 81152, {0}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const MigProfile* p = h100->FindProfile(row.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->id, row.id);
    EXPECT_EQ(p->memory_slices, row.memory_slices);
    EXPECT_EQ(p->compute_slices, row.compute_slices);
    EXPECT_EQ(p->max_count, row.max_count);
    EXPECT_EQ(p->memory_mib, row.memory_mib);
    EXPECT_EQ(p->placements, row.placements);
  }
}

TEST(CatalogTest, UnknownFactsStayUnknown) {
  const GpuModel* b200 = Builtin().FindModel("B200-180GB");
  ASSERT_NE(b200, nullptr);
  EXPECT_FALSE(b200->total_memory_mib.has_value());
  for (const MigProfile& p : b200->profiles) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.id.has_value());
    EXPECT_FALSE(p.memory_mib.has_value());
    EXPECT_FALSE(p.sm_count.has_value());
    EXPECT_GT(p.memory_slices, 0);  // geometry is still known
  }
  const GpuModel* h200 = Builtin().FindModel("H200-141GB");
  ASSERT_NE(h200, nullptr);
  const MigProfile* h200_1g = h200->FindProfile("1g.18gb");
  ASSERT_NE(h200_1g, nullptr);
  EXPECT_EQ(h200_1g->id, 19);
  EXPECT_FALSE(h200_1g->memory_mib.has_value());
  const GpuModel* gb200 = Builtin().FindModel("GB200-186GB");
  ASSERT_NE(gb200, nullptr);
  EXPECT_FALSE(gb200->total_memory_mib.has_value());
  ASSERT_NE(gb200->FindProfile("7g.186gb"), nullptr);
  EXPECT_FALSE(gb200->FindProfile("7g.186gb")->memory_mib.has_value());
}

TEST(CatalogTest, MatchProduct) {
  struct Row {
    std::string name;
    std::string product;
    std::string model;  // empty: no match
  };
  const std::vector<Row> rows = {
      {"H100 SXM", "NVIDIA-H100-80GB-HBM3", "H100-80GB"},
      {"H100 PCIe", "NVIDIA-H100-PCIe", "H100-80GB"},
      {"time-sliced not renamed", "NVIDIA-H100-80GB-HBM3-SHARED", "H100-80GB"},
      {"single-strategy MIG", "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "A100-80GB"},
      {"single-strategy MIG, GFD doc spelling", "A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"},
      {"single-strategy +me profile", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me", "H100-80GB"},
      {"single-strategy invalid", "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "A100-40GB"},
      {"MIG and SHARED", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED", "H100-80GB"},
      {"A30", "NVIDIA-A30", "A30-24GB"},
      {"A100 40GB PCIe", "NVIDIA-A100-PCIE-40GB", "A100-40GB"},
      {"H100 NVL", "NVIDIA-H100-NVL", "H100-NVL-94GB"},
      {"GH200", "NVIDIA-GH200-480GB", "H100-96GB-GH200"},
      {"H200", "NVIDIA-H200", "H200-141GB"},
      {"H200 NVL", "NVIDIA-H200-NVL", "H200-141GB"},
      {"B200", "NVIDIA-B200", "B200-180GB"},
      {"GB200", "NVIDIA-GB200", "GB200-186GB"},
      {"L4 is not a MIG GPU we know", "NVIDIA-L4-SHARED", ""},
      {"prefix of a known product", "NVIDIA-H100", ""},
      {"empty", "", ""},
      {"case matters", "nvidia-h100-80gb-hbm3", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const GpuModel* m = Builtin().MatchProduct(row.product);
    if (row.model.empty()) {
      EXPECT_EQ(m, nullptr) << m->model;
    } else {
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(m->model, row.model);
    }
  }
}

TEST(CatalogTest, SplitProduct) {
  struct Row {
    std::string name;
    std::string product;
    std::string parent;
    std::string mig_profile;
    bool shared;
  };
  const std::vector<Row> rows = {
      {"plain", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3", "", false},
      {"shared", "NVIDIA-L4-SHARED", "NVIDIA-L4", "", true},
      {"mig", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "NVIDIA-A100-SXM4-40GB", "1g.5gb", false},
      {"mig invalid", "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "NVIDIA-A100-SXM4-40GB", "INVALID",
       false},
      {"mig shared", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb-SHARED", "NVIDIA-H100-80GB-HBM3", "3g.40gb",
       true},
      {"empty", "", "", "", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ProductName p = SplitProduct(row.product);
    EXPECT_EQ(p.parent, row.parent);
    EXPECT_EQ(p.mig_profile, row.mig_profile);
    EXPECT_EQ(p.shared, row.shared);
  }
}

TEST(CatalogTest, FindProfileByNameOrResourceSuffix) {
  const GpuModel* h100 = Builtin().FindModel("H100-80GB");
  ASSERT_NE(h100, nullptr);
  const MigProfile* me = h100->FindProfile("1g.10gb+me");
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->ResourceSuffix(), "1g.10gb.me");
  EXPECT_EQ(h100->FindProfile("1g.10gb.me"), me);
  EXPECT_NE(h100->FindProfile("1g.10gb"), me);
  EXPECT_EQ(h100->FindProfile("1g.5gb"), nullptr);  // an A100-40GB profile
  EXPECT_EQ(h100->FindProfile(""), nullptr);
  EXPECT_EQ(h100->FindProfile("3g.40gb")->ResourceSuffix(), "3g.40gb");
}

// Every profile the catalog lists must be placeable on an empty GPU, alone and up to its max
// count; otherwise the extender would promise instances mig-manager can never create.
TEST(CatalogTest, EveryProfileOfEveryModelCanBePlaced) {
  for (const GpuModel& model : Builtin().models()) {
    for (const MigProfile& profile : model.profiles) {
      SCOPED_TRACE(absl::StrCat(model.model, " ", profile.name));
      std::optional<std::vector<PlacedInstance>> alone = PlaceProfiles(model, {&profile});
      ASSERT_TRUE(alone.has_value());
      ASSERT_EQ(alone->size(), 1u);
      EXPECT_EQ((*alone)[0].profile, &profile);
      EXPECT_EQ((*alone)[0].start, profile.placements.front());
      EXPECT_TRUE(CheckLayout(model, *alone).ok()) << CheckLayout(model, *alone);

      std::vector<const MigProfile*> full(profile.max_count, &profile);
      std::optional<std::vector<PlacedInstance>> at_max = PlaceProfiles(model, full);
      ASSERT_TRUE(at_max.has_value()) << profile.max_count << " instances";
      EXPECT_TRUE(CheckLayout(model, *at_max).ok());

      full.push_back(&profile);
      EXPECT_FALSE(PlaceProfiles(model, full).has_value()) << profile.max_count + 1 << " instances";
    }
  }
}

TEST(CatalogTest, LargestProfileFillsTheGpu) {
  for (const GpuModel& model : Builtin().models()) {
    SCOPED_TRACE(model.model);
    int max_memory = 0, max_compute = 0;
    for (const MigProfile& p : model.profiles) {
      max_memory = std::max(max_memory, p.memory_slices);
      max_compute = std::max(max_compute, p.compute_slices);
    }
    EXPECT_EQ(max_memory, model.memory_slices);
    EXPECT_EQ(max_compute, model.compute_slices);
  }
}

TEST(CatalogTest, ValidateRejectsBrokenModels) {
  MigProfile past_end;
  past_end.name = "2g.x";
  past_end.compute_slices = 2;
  past_end.memory_slices = 2;
  past_end.max_count = 1;
  past_end.placements = {7};
  GpuModel gpu;
  gpu.model = "Fake";
  gpu.compute_slices = 7;
  gpu.memory_slices = 8;
  gpu.max_instances = 7;
  gpu.profiles = {past_end};
  absl::Status s = Catalog(std::vector<GpuModel>{gpu}).Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "catalog model Fake profile 2g.x: placement 7 runs past the GPU's memory "
            "slices");

  gpu.profiles[0].placements = {};
  EXPECT_EQ(Catalog(std::vector<GpuModel>{gpu}).Validate().message(),
            "catalog model Fake profile 2g.x: no placements");

  gpu.profiles[0].placements = {0};
  gpu.profiles[0].max_count = 0;
  EXPECT_EQ(Catalog(std::vector<GpuModel>{gpu}).Validate().message(),
            "catalog model Fake profile 2g.x: slices and max_count must be positive");

  gpu.profiles[0].max_count = 1;
  gpu.all_balanced = {{"2g.x", 2}};
  EXPECT_EQ(Catalog(std::vector<GpuModel>{gpu}).Validate().message(),
            "catalog model Fake allBalanced has no valid placement");
  gpu.all_balanced = {{"1g.x", 1}};
  EXPECT_EQ(Catalog(std::vector<GpuModel>{gpu}).Validate().message(),
            "catalog model Fake allBalanced: 1g.x is not one of its profiles");
  gpu.all_balanced = {{"2g.x", 1}};
  EXPECT_TRUE(Catalog(std::vector<GpuModel>{gpu}).Validate().ok());

  GpuModel empty;
  empty.model = "Empty";
  EXPECT_EQ(Catalog(std::vector<GpuModel>{empty}).Validate().message(),
            "catalog model Empty: no slices");
  EXPECT_TRUE(Catalog().Validate().ok());
}

}  // namespace
}  // namespace topology
