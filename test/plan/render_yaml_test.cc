// plan/render_yaml: block-style YAML of the document tree. It quotes exactly the strings (and
// keys) a reader would take for something else, writes empty collections and null on their
// key's line, indents by two spaces, and parses back to what RenderJson prints.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "plan/render.h"
#include "test/plan/render_test_util.h"

namespace plan {
namespace {

using testing::Json;

TEST(RenderYamlTest, QuotesOnlyWhatReadsAsAnotherType) {
  struct Row {
    std::string value;
    bool quoted;
  };
  const std::vector<Row> rows = {
      {"123", true},
      {"9", true},
      {"-7", true},
      {"1.5", true},
      {"0x1F", true},
      {"1_000", true},
      {"true", true},
      {"False", true},
      {"yes", true},
      {"off", true},
      {"null", true},
      {"~", true},
      {"", true},
      {".inf", true},
      {"1g.10gb", false},
      {"v1", false},
      {"6759Mi", false},
      {"34.62 GiB", false},
      {"nvidia.com/gpu", false},
      // Beyond the first table: YAML 1.1 words in any case, signed and dotted numbers.
      {"Y", true},
      {"n", true},
      {"ON", true},
      {"No", true},
      {"NULL", true},
      {"-.inf", true},
      {"+.INF", true},
      {".NaN", true},
      {"+1", true},
      {".5", true},
      {"-.5", true},
      {"1e3", true},
      {"0o17", true},
      {"1:30", true},
      {"a1", false},
      {"gpu-tenancy-h100-a", false},
      {"3g.40gb", false},
      {"yesterday", false},
      {"nullable", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.value);
    absl::StatusOr<std::string> yaml = RenderYamlTree(Tree::Map().SetString("k", row.value));
    ASSERT_TRUE(yaml.ok()) << yaml.status();
    EXPECT_EQ(*yaml, row.quoted ? absl::StrCat("k: \"", row.value, "\"\n")
                                : absl::StrCat("k: ", row.value, "\n"));
    absl::StatusOr<rapidjson::Document> back = common::YamlToJson(*yaml);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(common::StringOr(*back, "k", "(not a string)"), row.value);
  }
}

TEST(RenderYamlTest, KeysAreQuotedLikeValues) {
  absl::StatusOr<std::string> yaml =
      RenderYamlTree(Tree::Map().SetInt("123", 1).SetInt("yes", 2).SetInt("3g.40gb", 3));
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, "\"123\": 1\n\"yes\": 2\n3g.40gb: 3\n");
  absl::StatusOr<rapidjson::Document> back = common::YamlToJson(*yaml);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == Json(R"({"123":1,"yes":2,"3g.40gb":3})"));
}

TEST(RenderYamlTest, EmptyCollectionsStayOnTheirKeysLine) {
  absl::StatusOr<std::string> yaml = RenderYamlTree(
      Tree::Map().Set("l", Tree::List()).Set("m", Tree::Map()).Set("z", Tree::Null()));
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, "l: []\nm: {}\nz: null\n");
}

TEST(RenderYamlTest, BlockStyleTwoSpaceIndentPlainScalars) {
  Tree t = Tree::Map();
  t.Set("list", Tree::List().Push(Tree::Int(-5)).Push(Tree::Map().SetBool("on", false)))
      .Set("map", Tree::Map().SetString("a", "x"));
  absl::StatusOr<std::string> yaml = RenderYamlTree(t);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, "list:\n  - -5\n  - \"on\": false\nmap:\n  a: x\n");
}

TEST(RenderYamlTest, AwkwardStringsRoundTrip) {
  const std::vector<std::string> values = {"a: b",
                                           "# not a comment",
                                           "- not an item",
                                           "*alias",
                                           "&anchor",
                                           "!tag",
                                           "{flow}",
                                           "[flow]",
                                           " leading",
                                           "trailing ",
                                           "two\nlines",
                                           "tab\there",
                                           "quote \" inside",
                                           "back\\slash",
                                           "'single'",
                                           "%directive",
                                           "@reserved",
                                           "`backtick",
                                           "é ✓",
                                           "|",
                                           ">",
                                           "key: value # comment"};
  for (const std::string& value : values) {
    SCOPED_TRACE(value);
    absl::StatusOr<std::string> yaml =
        RenderYamlTree(Tree::Map().SetString("k", value).Set("l", Tree::Strings({value})));
    ASSERT_TRUE(yaml.ok()) << yaml.status();
    absl::StatusOr<rapidjson::Document> back = common::YamlToJson(*yaml);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << *yaml;
    EXPECT_EQ(common::StringOr(*back, "k", "(not a string)"), value) << *yaml;
    const rapidjson::Value* l = common::FindMember(*back, "l");
    ASSERT_TRUE(l && l->IsArray() && l->Size() == 1 && (*l)[0].IsString()) << *yaml;
    EXPECT_EQ((*l)[0].GetString(), value) << *yaml;
  }
}

TEST(RenderYamlTest, IntegersAtTheEdgesOfSixtyFourBits) {
  Tree t = Tree::Map()
               .SetInt("max", std::numeric_limits<int64_t>::max())
               .SetInt("min", std::numeric_limits<int64_t>::min())
               .SetInt("zero", 0);
  absl::StatusOr<std::string> yaml = RenderYamlTree(t);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, "max: 9223372036854775807\nmin: -9223372036854775808\nzero: 0\n");
}

TEST(RenderYamlTest, ParsesBackToWhatRenderJsonPrints) {
  for (const auto& [name, doc] : {std::pair{"worked example", testing::ExampleDocument()},
                                  std::pair{"mixed plan", testing::MixedDocument()},
                                  std::pair{"empty document", PlanDocument{}}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<rapidjson::Document> json = common::ParseJson(RenderJson(doc));
    ASSERT_TRUE(json.ok()) << json.status();
    absl::StatusOr<std::string> yaml = RenderYaml(doc);
    ASSERT_TRUE(yaml.ok()) << yaml.status();
    absl::StatusOr<rapidjson::Document> from_yaml = common::YamlToJson(*yaml);
    ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
    EXPECT_TRUE(*from_yaml == *json);
    absl::StatusOr<std::string> tree_yaml = RenderYamlTree(DocumentTree(doc));
    ASSERT_TRUE(tree_yaml.ok()) << tree_yaml.status();
    EXPECT_EQ(*yaml, *tree_yaml) << "RenderYaml is RenderYamlTree of the document tree";
  }
}

}  // namespace
}  // namespace plan
