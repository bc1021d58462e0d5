// common::Fields: typed reads of one mapping, each error naming the field's path, and unknown
// keys refused.
#include "common/yaml_fields.h"

#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"

namespace {

using common::Fields;

rapidjson::Document Doc(const char* json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? *std::move(doc) : rapidjson::Document();
}

std::string Error(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(YamlFieldsTest, StringsRequiredOptionalAndTyped) {
  rapidjson::Document doc = Doc(R"({"name":"acme","empty":"","n":3,"nothing":null})");
  Fields f(doc, "tenants[2]");
  EXPECT_EQ(*f.String("name", true), "acme");
  EXPECT_EQ(*f.String("absent", false), "");
  EXPECT_EQ(*f.String("nothing", false), "") << "null reads as absent";
  EXPECT_EQ(Error(f.String("absent", true).status()), "tenants[2].absent: missing");
  EXPECT_EQ(Error(f.String("empty", true).status()), "tenants[2].empty: must not be empty");
  EXPECT_EQ(Error(f.String("n", false).status()), "tenants[2].n: expected a string");
}

TEST(YamlFieldsTest, EnumsTakeOneOfTheAllowedValuesOrTheFallback) {
  rapidjson::Document doc = Doc(R"({"mode":"mps","bad":"vgpu"})");
  Fields f(doc, "");
  EXPECT_EQ(*f.Enum("mode", {"mig", "mps"}, nullptr), "mps");
  EXPECT_EQ(*f.Enum("absent", {"mig", "mps"}, "mig"), "mig");
  EXPECT_EQ(Error(f.Enum("absent", {"mig", "mps"}, nullptr).status()), "absent: missing");
  EXPECT_EQ(Error(f.Enum("bad", {"mig", "mps"}, "mig").status()),
            "bad: \"vgpu\" is not one of mig, mps");
}

TEST(YamlFieldsTest, IntegersNumbersAndBooleans) {
  rapidjson::Document doc =
      Doc(R"({"i":7,"neg":-2,"f":1.5,"s":"7","big":100,"yes":true,"word":"yes"})");
  Fields f(doc, "p");
  EXPECT_EQ(**f.Int("i", true), 7);
  EXPECT_FALSE(f.Int("absent", false)->has_value());
  EXPECT_EQ(Error(f.Int("absent", true).status()), "p.absent: missing");
  EXPECT_EQ(Error(f.Int("f", false).status()), "p.f: expected an integer");
  EXPECT_EQ(Error(f.Int("s", false).status()), "p.s: expected an integer");

  EXPECT_EQ(**f.IntInRange("i", 0, 10), 7);
  EXPECT_FALSE(f.IntInRange("absent", 0, 10)->has_value());
  EXPECT_EQ(Error(f.IntInRange("neg", 0, 10).status()), "p.neg: expected an integer from 0 to 10");
  EXPECT_EQ(Error(f.IntInRange("big", 0, 99).status()), "p.big: expected an integer from 0 to 99");

  EXPECT_DOUBLE_EQ(**f.Number("f", 0, 2), 1.5);
  EXPECT_DOUBLE_EQ(**f.Number("i", 0, 10), 7.0) << "an integer is a number";
  EXPECT_EQ(Error(f.Number("f", 0, 1).status()), "p.f: expected a number from 0 to 1");

  EXPECT_TRUE(*f.Bool("yes"));
  EXPECT_TRUE(*f.Bool("absent", true));
  EXPECT_FALSE(*f.Bool("absent"));
  EXPECT_EQ(Error(f.Bool("word").status()), "p.word: expected true or false");
}

TEST(YamlFieldsTest, ListsOfScalarsNameTheBadItem) {
  rapidjson::Document doc =
      Doc(R"({"names":["a","b"],"mixed":["a",2],"ints":[1,2],"badints":[1,"x"],"scalar":"a"})");
  Fields f(doc, "t");
  EXPECT_EQ(*f.Strings("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(f.Strings("absent")->empty());
  EXPECT_EQ(Error(f.Strings("mixed").status()), "t.mixed[1]: expected a string");
  EXPECT_EQ(Error(f.Strings("scalar").status()), "t.scalar: expected a list");
  EXPECT_EQ(*f.Ints("ints"), (std::vector<int>{1, 2}));
  EXPECT_EQ(Error(f.Ints("badints").status()), "t.badints[1]: expected an integer");
}

TEST(YamlFieldsTest, QuantitiesBytesAndMemory) {
  rapidjson::Document doc =
      Doc(R"({"mem":"40Gi","zero":"0","neg":"-1Gi","junk":"lots","number":40,"small":"1Ki"})");
  Fields f(doc, "limits");
  EXPECT_EQ(**f.MemoryMiB("mem"), 40 * 1024);
  EXPECT_EQ(**f.MemoryMiB("zero"), 0) << "memory may be zero";
  EXPECT_EQ(Error(f.MemoryMiB("neg").status()), "limits.neg: must not be negative");
  EXPECT_EQ(**f.Bytes("small"), 1024);
  EXPECT_EQ(Error(f.Bytes("zero").status()), "limits.zero: must be positive");
  EXPECT_EQ(Error(f.Bytes("number").status()),
            "limits.number: expected a quantity such as \"16Gi\"");
  EXPECT_EQ(Error(f.MemoryMiB("number").status()),
            "limits.number: expected a quantity such as \"40Gi\"");
  std::string junk = Error(f.Quantity("junk", "1").status());
  EXPECT_EQ(junk.rfind("limits.junk: ", 0), 0u) << junk;
  EXPECT_FALSE(f.Quantity("absent", "1")->has_value());
}

TEST(YamlFieldsTest, NestedMappingsAndListsCarryTheirPath) {
  rapidjson::Document doc = Doc(
      R"({"limits":{"gpuMemory":"8Gi"},"scalar":1,
          "tenants":[{"name":"a"},{"name":"b","namespace":["x"]}],"empty":[],"bad":[1]})");
  Fields root(doc, "");
  std::optional<Fields> limits = *root.Object("limits");
  ASSERT_TRUE(limits.has_value());
  EXPECT_EQ(limits->Path("gpuMemory"), "limits.gpuMemory");
  EXPECT_FALSE(root.Object("absent")->has_value());
  EXPECT_EQ(Error(root.Object("scalar").status()), "scalar: expected a mapping");

  std::vector<std::string> names;
  absl::Status typo = root.List("tenants", true, [&](Fields& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::string name, t.String("name", true));
    names.push_back(name);
    return absl::OkStatus();
  });
  EXPECT_EQ(Error(typo), "tenants[1].namespace: unknown field");
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  auto ignore = [](Fields&) { return absl::OkStatus(); };
  EXPECT_EQ(Error(root.List("empty", true, ignore)), "empty: must not be empty");
  EXPECT_TRUE(root.List("empty", false, ignore).ok());
  EXPECT_EQ(Error(root.List("absent", true, ignore)), "absent: missing");
  EXPECT_TRUE(root.List("absent", false, ignore).ok());
  EXPECT_EQ(Error(root.List("bad", false, ignore)), "bad[0]: expected a mapping");
  EXPECT_EQ(Error(root.List("scalar", false, ignore)), "scalar: expected a list");
}

TEST(YamlFieldsTest, NoUnknownKeysRefusesWhatNobodyRead) {
  rapidjson::Document doc = Doc(R"({"name":"a","namespace":"typo"})");
  Fields f(doc, "tenants[0]");
  ASSERT_TRUE(f.String("name", true).ok());
  EXPECT_EQ(Error(f.NoUnknownKeys()), "tenants[0].namespace: unknown field");
  (void)f.Get("namespace");
  EXPECT_TRUE(f.NoUnknownKeys().ok()) << "reading a key, even to ignore it, accepts it";
}

}  // namespace
