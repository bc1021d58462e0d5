// YAML to JSON with the YAML 1.2 core schema: what a cluster file or a policy means must not
// depend on whether it was written as YAML or JSON.
#include "common/yaml_json.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"

namespace common {
namespace {

// Converts "v: <scalar>" and returns the compact JSON of v.
std::string ScalarJson(absl::string_view yaml_scalar) {
  absl::StatusOr<rapidjson::Document> doc = YamlToJson(absl::StrCat("v: ", yaml_scalar, "\n"));
  EXPECT_TRUE(doc.ok()) << doc.status();
  if (!doc.ok()) return "<error>";
  const JsonValue* v = FindMember(*doc, "v");
  EXPECT_NE(v, nullptr);
  return v ? ToJson(*v) : "<missing>";
}

TEST(YamlJsonTest, ScalarsFollowTheCoreSchema) {
  struct Row {
    std::string name;
    std::string yaml;
    std::string json;
  };
  const std::vector<Row> rows = {
      {"integer", "1", "1"},
      {"negative integer", "-42", "-42"},
      {"plus integer", "+7", "7"},
      {"leading zero is decimal", "012", "12"},
      {"large integer", "9007199254740993", "9007199254740993"},
      {"float", "1.5", "1.5"},
      {"exponent float", "1e3", "1000.0"},
      {"quoted number stays a string", "'1'", "\"1\""},
      {"double-quoted number stays a string", "\"2\"", "\"2\""},
      {"true", "true", "true"},
      {"True", "True", "true"},
      {"false", "false", "false"},
      {"quoted boolean stays a string", "'true'", "\"true\""},
      {"yes is a string in YAML 1.2", "yes", "\"yes\""},
      {"no is a string in YAML 1.2", "no", "\"no\""},
      {"on is a string in YAML 1.2", "on", "\"on\""},
      {"null", "null", "null"},
      {"tilde", "~", "null"},
      {"empty", "", "null"},
      {"quoted empty stays a string", "''", "\"\""},
      {"quantity", "8Gi", "\"8Gi\""},
      {"milli quantity", "500m", "\"500m\""},
      {"version-like", "1.2.3", "\"1.2.3\""},
      {"lone dot", ".", "\".\""},
      {"letter e", "e", "\"e\""},
      {"explicit string tag", "!!str 10", "\"10\""},
      {"words", "gpu-mig", "\"gpu-mig\""},
      {"colon inside", "\"a: b\"", "\"a: b\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(ScalarJson(row.yaml), row.json);
  }
}

TEST(YamlJsonTest, StructuresAndAliases) {
  absl::StatusOr<rapidjson::Document> doc = YamlToJson(
      "base: &b {key: gpu-tenancy.io/pool, effect: NoSchedule}\n"
      "copy: *b\n"
      "list:\n- 1\n- two\n- [3, {four: 4}]\n"
      "flow: {a: [], b: {}}\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(ToJson(*doc), R"({"base":{"key":"gpu-tenancy.io/pool","effect":"NoSchedule"},)"
                          R"("copy":{"key":"gpu-tenancy.io/pool","effect":"NoSchedule"},)"
                          R"("list":[1,"two",[3,{"four":4}]],"flow":{"a":[],"b":{}}})");
}

TEST(YamlJsonTest, JsonIsYaml) {
  const std::string json = R"({"kind":"List","items":[{"a":1,"b":"x","c":null,"d":true,"e":1.5}]})";
  absl::StatusOr<rapidjson::Document> from_yaml = YamlToJson(json);
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  absl::StatusOr<rapidjson::Document> from_json = ParseJson(json);
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(*from_yaml, *from_json);  // DOM comparison, not strings
}

TEST(YamlJsonTest, MultipleDocuments) {
  absl::StatusOr<std::vector<rapidjson::Document>> docs =
      YamlDocumentsToJson("a: 1\n---\n---\nb: 2\n...\n---\n# only a comment\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);  // empty documents are dropped
  EXPECT_EQ(ToJson((*docs)[0]), R"({"a":1})");
  EXPECT_EQ(ToJson((*docs)[1]), R"({"b":2})");

  absl::StatusOr<rapidjson::Document> one = YamlToJson("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(), "expected one YAML document, found 2");
  absl::StatusOr<rapidjson::Document> none = YamlToJson("# nothing\n");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "expected one YAML document, found 0");
}

TEST(YamlJsonTest, Errors) {
  struct Row {
    std::string name;
    std::string yaml;
    std::string error;  // substring
  };
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "[";
  for (int i = 0; i < 300; ++i) deep += "]";
  const std::vector<Row> rows = {
      {"unclosed flow sequence", "a: [1, 2\n", "invalid YAML at line"},
      {"bad indentation", "a:\n  b: 1\n c: 2\n", "invalid YAML at line 3"},
      {"tab indentation", "a:\n\tb: 1\n", "invalid YAML at line"},
      {"unknown alias", "a: *nope\n", "invalid YAML at line 1"},
      {"complex key", "? [a, b]\n: 1\n", "map keys must be scalars"},
      {"deep nesting", deep, "YAML nests too deeply"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<std::vector<rapidjson::Document>> docs = YamlDocumentsToJson(row.yaml);
    ASSERT_FALSE(docs.ok());
    EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(docs.status().message(), row.error)) << docs.status();
  }
}

}  // namespace
}  // namespace common
