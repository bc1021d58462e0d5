// plan/render_json: the document tree as pretty JSON. It parses, equals the tree it was given
// (members in the tree's order), escapes what JSON requires, keeps 64-bit integers exact, and
// is indented by two spaces with no trailing newline.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "plan/render.h"
#include "test/plan/render_test_util.h"

namespace plan {
namespace {

using testing::Json;
using testing::TreeAsJson;

std::vector<std::string> MemberNames(const rapidjson::Value& object) {
  std::vector<std::string> out;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    out.emplace_back(it->name.GetString());
  }
  return out;
}

TEST(RenderJsonTest, IsTheDocumentTreeMembersInOrder) {
  for (const auto& [name, doc] : {std::pair{"worked example", testing::ExampleDocument()},
                                  std::pair{"mixed plan", testing::MixedDocument()},
                                  std::pair{"empty document", PlanDocument{}}}) {
    SCOPED_TRACE(name);
    rapidjson::Document json = Json(RenderJson(doc));
    Tree tree = DocumentTree(doc);
    EXPECT_TRUE(json == TreeAsJson(tree));
    ASSERT_TRUE(json.IsObject());
    EXPECT_EQ(MemberNames(json), testing::Keys(tree));
  }
}

TEST(RenderJsonTest, PrettyTwoSpacesNoTrailingNewline) {
  const std::string json = RenderJson(PlanDocument{});
  EXPECT_TRUE(absl::StartsWith(json, "{\n  \"summary\": {\n    \"gpusUsed\": 0,\n")) << json;
  EXPECT_TRUE(absl::EndsWith(json, "\n  \"warnings\": []\n}")) << json;
}

TEST(RenderJsonTest, EscapesStringsAndKeepsThemExact) {
  PlanDocument doc;
  doc.warnings = {"quote \" backslash \\ newline \n tab \t", "control \x01", "unicode: zone é ✓",
                  "</script>"};
  rapidjson::Document json = Json(RenderJson(doc));
  const rapidjson::Value* warnings = common::FindMember(json, "warnings");
  ASSERT_TRUE(warnings && warnings->IsArray());
  ASSERT_EQ(warnings->Size(), doc.warnings.size());
  for (rapidjson::SizeType i = 0; i < warnings->Size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(std::string((*warnings)[i].GetString(), (*warnings)[i].GetStringLength()),
              doc.warnings[i]);
  }
}

TEST(RenderJsonTest, KeepsSixtyFourBitIntegersExact) {
  PlanDocument doc = testing::MixedDocument();
  ASSERT_FALSE(doc.plan.workloads.empty());
  // Bytes above 2^53 would be rounded by a writer going through double.
  doc.plan.workloads[0].sizing.total_bytes = (int64_t{1} << 60) + 1;
  doc.plan.workloads[0].sizing.terms.at(0).bytes = -((int64_t{1} << 62) + 3);
  rapidjson::Document json = Json(RenderJson(doc));
  const rapidjson::Value* workloads = common::FindMember(json, "workloads");
  ASSERT_TRUE(workloads && workloads->IsArray() && !workloads->Empty());
  const rapidjson::Value* memory = common::FindMember((*workloads)[0], "memory");
  ASSERT_NE(memory, nullptr);
  const rapidjson::Value* total = common::FindMember(*memory, "totalBytes");
  ASSERT_TRUE(total && total->IsInt64());
  EXPECT_EQ(total->GetInt64(), (int64_t{1} << 60) + 1);
  const rapidjson::Value* terms = common::FindMember(*memory, "terms");
  ASSERT_TRUE(terms && terms->IsArray() && !terms->Empty());
  const rapidjson::Value* bytes = common::FindMember((*terms)[0], "bytes");
  ASSERT_TRUE(bytes && bytes->IsInt64());
  EXPECT_EQ(bytes->GetInt64(), -((int64_t{1} << 62) + 3));
}

}  // namespace
}  // namespace plan
