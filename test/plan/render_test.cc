// Rendering: YAML quotes exactly the strings a reader would take for something else, and the
// three formats of one document agree.
#include "plan/render.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "common/plan_input.h"
#include "common/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using ::testing::HasSubstr;

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

TEST(RenderYamlTest, EmptyCollectionsStayOnTheirKeysLine) {
  absl::StatusOr<std::string> yaml = RenderYamlTree(
      Tree::Map().Set("l", Tree::List()).Set("m", Tree::Map()).Set("z", Tree::Null()));
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, "l: []\nm: {}\nz: null\n");
}

TEST(RenderTest, TextYamlAndJsonComeFromOneDocument) {
  std::string path = GT_SOURCE_DIR "/cmd/demo/plan-example.yaml";
  FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) text.append(buf, n);
  std::fclose(f);
  absl::StatusOr<PlanInput> input = common::ParsePlanInput(text);
  ASSERT_TRUE(input.ok()) << input.status();
  absl::StatusOr<Plan> made = MakePlan(*input, Cat());
  ASSERT_TRUE(made.ok()) << made.status();
  PlanDocument doc = BuildDocument(*std::move(made));

  absl::StatusOr<rapidjson::Document> json = common::ParseJson(RenderJson(doc));
  ASSERT_TRUE(json.ok()) << json.status();
  absl::StatusOr<std::string> yaml = RenderYaml(doc);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  absl::StatusOr<rapidjson::Document> from_yaml = common::YamlToJson(*yaml);
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  EXPECT_TRUE(*from_yaml == *json);

  absl::StatusOr<std::string> people = RenderText(doc);
  ASSERT_TRUE(people.ok()) << people.status();
  EXPECT_THAT(*people, HasSubstr(doc.summary.text));
  for (const NodeCommands& node : doc.nvidia_smi) {
    for (const std::string& command : node.commands) EXPECT_THAT(*people, HasSubstr(command));
  }
}

}  // namespace
}  // namespace plan
