// NVIDIA's default mig-parted configs per catalog model. The expected cuts are the ones the GPU
// operator's default-mig-parted-config and mig-parted's config-default.yaml write (their device
// filters resolved to the model by hand), so a catalog change that breaks one shows here.
#include "topology/mig_defaults.h"

#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

const GpuModel& Model(const std::string& name) {
  const GpuModel* m = common::BuiltinCatalog().FindModel(name);
  EXPECT_NE(m, nullptr) << name;
  static const GpuModel kNone;
  return m != nullptr ? *m : kNone;
}

// What `name` makes of one GPU of `model`, as DescribeGeometry says it.
std::string CutOfOneGpu(const std::string& model, const std::string& name) {
  absl::StatusOr<MigPartedLayout> layout = DefaultMigLayout(name, Model(model));
  if (!layout.ok()) return std::string(layout.status().message());
  absl::StatusOr<NodeGeometry> g = ResolveGeometry(*layout, Model(model), 1);
  if (!g.ok()) return std::string(g.status().message());
  return DescribeGeometry(*g).at(0);
}

TEST(MigDefaultsTest, EachCatalogModelAsNvidiasDefaultConfigCutsIt) {
  struct Row {
    std::string model, config, cut;
  };
  const std::vector<Row> rows = {
      {"A30-24GB", "all-balanced", "GPU 0: 1x 2g.12gb + 2x 1g.6gb"},
      {"A30-24GB", "all-1g.6gb", "GPU 0: 4x 1g.6gb"},
      {"A30-24GB", "all-2g.12gb", "GPU 0: 2x 2g.12gb"},
      {"A30-24GB", "all-2g.12gb.me", "GPU 0: 1x 2g.12gb+me"},
      {"A30-24GB", "all-4g.24gb", "GPU 0: 1x 4g.24gb"},
      {"A100-40GB", "all-balanced", "GPU 0: 1x 3g.20gb + 1x 2g.10gb + 2x 1g.5gb"},
      {"A100-40GB", "all-1g.5gb", "GPU 0: 7x 1g.5gb"},
      {"A100-40GB", "all-1g.5gb.me", "GPU 0: 1x 1g.5gb+me"},
      {"A100-40GB", "all-1g.10gb", "GPU 0: 4x 1g.10gb"},  // its own entry in the file
      {"A100-40GB", "all-2g.10gb", "GPU 0: 3x 2g.10gb"},
      {"A100-40GB", "all-3g.20gb", "GPU 0: 2x 3g.20gb"},
      {"A100-40GB", "all-7g.40gb", "GPU 0: 1x 7g.40gb"},
      {"A100-80GB", "all-balanced", "GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"},
      {"A100-80GB", "all-1g.10gb", "GPU 0: 7x 1g.10gb"},
      {"A100-80GB", "all-1g.20gb", "GPU 0: 4x 1g.20gb"},
      {"H100-80GB", "all-balanced", "GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"},
      {"H100-80GB", "all-1g.10gb", "GPU 0: 7x 1g.10gb"},
      {"H100-80GB", "all-1g.10gb.me", "GPU 0: 1x 1g.10gb+me"},
      {"H100-80GB", "all-1g.20gb", "GPU 0: 4x 1g.20gb"},
      {"H100-80GB", "all-2g.20gb", "GPU 0: 3x 2g.20gb"},
      {"H100-80GB", "all-3g.40gb", "GPU 0: 2x 3g.40gb"},
      {"H100-80GB", "all-4g.40gb", "GPU 0: 1x 4g.40gb"},
      {"H100-80GB", "all-7g.80gb", "GPU 0: 1x 7g.80gb"},
      {"H100-NVL-94GB", "all-balanced", "GPU 0: 1x 3g.47gb + 1x 2g.24gb + 2x 1g.12gb"},
      {"H100-NVL-94GB", "all-1g.12gb", "GPU 0: 7x 1g.12gb"},
      {"H100-NVL-94GB", "all-1g.24gb", "GPU 0: 4x 1g.24gb"},
      {"H100-96GB-GH200", "all-balanced", "GPU 0: 1x 3g.48gb + 1x 2g.24gb + 2x 1g.12gb"},
      {"H100-96GB-GH200", "all-3g.48gb", "GPU 0: 2x 3g.48gb"},
      {"GH200-144GB-HBM3e", "all-balanced", "GPU 0: 1x 3g.72gb + 1x 2g.36gb + 2x 1g.18gb"},
      {"GH200-144GB-HBM3e", "all-1g.36gb", "GPU 0: 4x 1g.36gb"},
      {"H200-141GB", "all-balanced", "GPU 0: 1x 3g.71gb + 1x 2g.35gb + 2x 1g.18gb"},
      {"H200-141GB", "all-1g.18gb", "GPU 0: 7x 1g.18gb"},
      {"H200-141GB", "all-1g.35gb", "GPU 0: 4x 1g.35gb"},
      {"B200-180GB", "all-balanced", "GPU 0: 1x 3g.90gb + 1x 2g.45gb + 2x 1g.23gb"},
      {"B200-180GB", "all-1g.23gb", "GPU 0: 7x 1g.23gb"},
      {"B200-180GB", "all-1g.45gb", "GPU 0: 4x 1g.45gb"},
      {"GB200-186GB", "all-balanced", "GPU 0: 1x 3g.93gb + 1x 2g.47gb + 2x 1g.23gb"},
      {"GB200-186GB", "all-1g.47gb", "GPU 0: 4x 1g.47gb"},
      {"GB200-186GB", "all-7g.186gb", "GPU 0: 1x 7g.186gb"},
      {"H100-80GB", "all-disabled", "GPU 0: MIG disabled"},
      {"A30-24GB", "all-enabled", "GPU 0: MIG enabled, no instances"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.model + " " + row.config);
    EXPECT_EQ(CutOfOneGpu(row.model, row.config), row.cut);
  }
}

// Every default name a model has cuts every GPU of a node alike, with a valid placement, and
// all-<profile> takes as many instances as the model allows.
TEST(MigDefaultsTest, EveryDefaultNameOfEveryModelResolvesOnEveryGpu) {
  for (const GpuModel& model : common::BuiltinCatalog().models()) {
    const std::vector<std::string> names = DefaultMigLayoutNames(model);
    EXPECT_EQ(names.size(), model.profiles.size() + 3) << model.model;  // all-balanced included
    for (const std::string& name : names) {
      SCOPED_TRACE(model.model + " " + name);
      absl::StatusOr<MigPartedLayout> layout = DefaultMigLayout(name, model);
      ASSERT_TRUE(layout.ok()) << layout.status();
      EXPECT_EQ(layout->name, name);
      absl::StatusOr<NodeGeometry> g = ResolveGeometry(*layout, model, 4);
      ASSERT_TRUE(g.ok()) << g.status();
      ASSERT_EQ(g->gpus.size(), 4u);
      for (const GpuGeometry& gpu : g->gpus) {
        EXPECT_EQ(gpu.mig_enabled, g->gpus[0].mig_enabled);
        EXPECT_EQ(gpu.instances.size(), g->gpus[0].instances.size());
        EXPECT_TRUE(CheckLayout(model, gpu.instances).ok());
      }
      if (name.rfind("all-", 0) == 0 && model.FindProfile(name.substr(4)) != nullptr) {
        EXPECT_EQ(static_cast<int>(g->gpus[0].instances.size()),
                  model.FindProfile(name.substr(4))->max_count);
      }
    }
  }
}

TEST(MigDefaultsTest, NamesTheDefaultsDoNotKnowAreNotFoundWithTheReason) {
  GpuModel without_balanced = Model("H100-80GB");
  without_balanced.all_balanced.clear();
  struct Row {
    std::string name;
    const GpuModel* model;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"tenancy-3-2-1-1", &Model("H100-80GB"),
       "tenancy-3-2-1-1 is not one of NVIDIA's default mig-parted configs"},
      {"all-1g.5gb", &Model("H100-80GB"),
       "all-1g.5gb is not one of NVIDIA's default configs for H100-80GB (it has no MIG profile "
       "1g.5gb)"},
      {"all-1g.10gb+me", &Model("H100-80GB"),
       "all-1g.10gb+me is not one of NVIDIA's default configs for H100-80GB (it has no MIG "
       "profile 1g.10gb+me)"},
      {"all-balanced", &without_balanced,
       "NVIDIA's default mig-parted config has no all-balanced cut for H100-80GB"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<MigPartedLayout> layout = DefaultMigLayout(row.name, *row.model);
    ASSERT_FALSE(layout.ok());
    EXPECT_EQ(layout.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(layout.status().message(), row.error);
  }
}

}  // namespace
}  // namespace topology
