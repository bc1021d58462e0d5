// common/json_path: a lazily spelled path reads as JoinPath and IndexPath build it, and its
// helpers give the string-path helpers' values and errors.
#include "common/json_path.h"

#include <string>

#include "gtest/gtest.h"

namespace common {
namespace {

TEST(JsonPathTest, SpellsWhatJoinPathAndIndexPathBuild) {
  const JsonPath root("resourceclaim");
  const JsonPath spec(root, "spec");
  const JsonPath requests(spec, "requests");
  const JsonPath first(requests, 0);
  const JsonPath exactly(first, "exactly");
  EXPECT_EQ(
      exactly.str(),
      JoinPath(IndexPath(JoinPath(JoinPath("resourceclaim", "spec"), "requests"), 0), "exactly"));
  EXPECT_EQ(exactly.str(), "resourceclaim.spec.requests[0].exactly");

  // An empty root starts with the first key, as JoinPath("", key) does; an index needs no key.
  const JsonPath none("");
  const JsonPath items(none, "items");
  const JsonPath item(items, 3);
  EXPECT_EQ(JsonPath(item, "spec").str(), "items[3].spec");
  EXPECT_EQ(JsonPath(none, 2).str(), IndexPath("", 2));
  EXPECT_EQ(none.str(), "");
}

TEST(JsonPathTest, HelpersAnswerAndFailAsTheStringPathOnes) {
  absl::StatusOr<rapidjson::Document> doc = ParseJson(R"({"s":"x","o":{},"a":[],"n":null,"i":1})");
  ASSERT_TRUE(doc.ok());
  const JsonPath root("obj");
  for (const char* key : {"s", "o", "a", "n", "i", "absent"}) {
    SCOPED_TRACE(key);
    auto same = [](const auto& lazy, const auto& eager) {
      ASSERT_EQ(lazy.ok(), eager.ok());
      if (lazy.ok()) {
        EXPECT_EQ(*lazy, *eager);
      } else {
        EXPECT_EQ(lazy.status(), eager.status());
      }
    };
    same(RequireString(*doc, key, root), RequireString(*doc, key, "obj"));
    same(RequireObject(*doc, key, root), RequireObject(*doc, key, "obj"));
    same(OptionalObject(*doc, key, root), OptionalObject(*doc, key, "obj"));
    same(OptionalArray(*doc, key, root), OptionalArray(*doc, key, "obj"));
  }
}

}  // namespace
}  // namespace common
