// The pages' JSON: the catalog as the picker draws it, and plans that are exactly what
// `gpu-tenancy plan -o json` prints, with the parser's and planner's reasons on bad input.
#include "views/ui_json.h"

#include <string>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/test_inputs.h"

namespace views {
namespace {

TEST(UiJsonTest, TheCatalogCarriesEachProfilesShapeAndPlacements) {
  rapidjson::Document doc;
  doc.Parse(CatalogJson(common::BuiltinCatalog()).c_str());
  ASSERT_TRUE(doc.IsObject() && doc["models"].IsArray());
  const rapidjson::Value* h100 = nullptr;
  for (const rapidjson::Value& m : doc["models"].GetArray()) {
    if (std::string(m["model"].GetString()) == "H100-80GB") h100 = &m;
  }
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ((*h100)["computeSlices"].GetInt(), 7);
  EXPECT_EQ((*h100)["memorySlices"].GetInt(), 8);
  const rapidjson::Value* three = nullptr;
  for (const rapidjson::Value& p : (*h100)["profiles"].GetArray()) {
    if (std::string(p["name"].GetString()) == "3g.40gb") three = &p;
  }
  ASSERT_NE(three, nullptr);
  EXPECT_EQ((*three)["memorySlices"].GetInt(), 4);
  ASSERT_TRUE((*three)["placements"].IsArray());
  ASSERT_EQ((*three)["placements"].Size(), 2u);
  EXPECT_EQ((*three)["placements"][0].GetInt(), 0);
  EXPECT_EQ((*three)["placements"][1].GetInt(), 4);
}

TEST(UiJsonTest, TheWorkedExamplePlansFourGpus) {
  absl::StatusOr<std::string> json =
      PlanJson(testing_support::SourceFile("cmd/demo/plan-example.yaml"), common::BuiltinCatalog(),
               topology::Policy::AllowAll());
  ASSERT_TRUE(json.ok()) << json.status();
  rapidjson::Document doc;
  doc.Parse(json->c_str());
  ASSERT_TRUE(doc.IsObject());
  EXPECT_EQ(doc["summary"]["gpusUsed"].GetInt(), 4);
  EXPECT_TRUE(doc.HasMember("nvidiaSmi") && doc.HasMember("migParted") &&
              doc.HasMember("warnings"));
}

TEST(UiJsonTest, BadInputIsRefusedWithTheReason) {
  absl::StatusOr<std::string> typo =
      PlanJson("fleet: [{node: a, gpu: H100-80GB}]\nworkload: []\n", common::BuiltinCatalog(),
               topology::Policy::AllowAll());
  ASSERT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("workload"), absl::string_view::npos) << typo.status();
  absl::StatusOr<std::string> unplaceable = PlanJson(
      "fleet: [{node: a, gpu: L4, memory: 24Gi}]\n"
      "workloads: [{name: big, tenant: t, trust: trusted, memory: {highWaterMark: 40Gi}}]\n",
      common::BuiltinCatalog(), topology::Policy::AllowAll());
  ASSERT_EQ(unplaceable.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unplaceable.status().message().find("big"), absl::string_view::npos)
      << unplaceable.status();
  EXPECT_EQ(PlanJson("{", common::BuiltinCatalog(), topology::Policy::AllowAll()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace views
