// JSON Patch building, RFC 6901 escaping, base64, and the RFC 6902 applier.
#include "webhook/json_patch.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"

namespace {

using webhook_test::Json;

TEST(PointerTest, EscapesPerRfc6901) {
  struct Case {
    std::string name, token, escaped;
  } cases[] = {
      {"plain", "app", "app"},    {"slash", "gpu-tenancy.io/tenant", "gpu-tenancy.io~1tenant"},
      {"tilde", "a~b", "a~0b"},   {"tilde then one", "~1", "~01"},
      {"both", "x/~y", "x~1~0y"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(webhook::EscapePointerToken(c.token), c.escaped);
    EXPECT_EQ(webhook::UnescapePointerToken(c.escaped), c.token);
  }
  EXPECT_EQ(webhook::PointerJoin("/metadata/labels", "gpu-tenancy.io/tier"),
            "/metadata/labels/gpu-tenancy.io~1tier");
  EXPECT_EQ(webhook::PointerJoin("/spec/tolerations", size_t{3}), "/spec/tolerations/3");
}

TEST(JsonPatchTest, BuildsOperationsAndBase64) {
  webhook::JsonPatch patch;
  EXPECT_TRUE(patch.empty());
  patch.Add("/metadata/labels/a", "1");
  patch.Replace("/metadata/labels/b", "2");
  patch.Remove("/metadata/labels/c");
  EXPECT_EQ(patch.size(), 3u);
  rapidjson::Document want = Json(
      R"([{"op":"add","path":"/metadata/labels/a","value":"1"},
          {"op":"replace","path":"/metadata/labels/b","value":"2"},
          {"op":"remove","path":"/metadata/labels/c"}])");
  EXPECT_TRUE(patch.ops() == want) << patch.ToJson();
  std::string decoded;
  ASSERT_TRUE(absl::Base64Unescape(patch.ToBase64(), &decoded));
  EXPECT_TRUE(Json(decoded) == want);
  // Standard alphabet with padding, as the API server decodes it.
  EXPECT_EQ(patch.ToBase64().size() % 4, 0u);
}

TEST(JsonPatchTest, EnsureMapEntries) {
  struct Case {
    std::string name, metadata, want_patch;
  } cases[] = {
      {"no labels: whole map", R"({"name":"p"})",
       R"([{"op":"add","path":"/metadata/labels","value":{"a/b":"1","c":"2"}}])"},
      {"null labels: whole map", R"({"labels":null})",
       R"([{"op":"add","path":"/metadata/labels","value":{"a/b":"1","c":"2"}}])"},
      {"one missing, one wrong", R"({"labels":{"c":"9"}})",
       R"([{"op":"add","path":"/metadata/labels/a~1b","value":"1"},
           {"op":"replace","path":"/metadata/labels/c","value":"2"}])"},
      {"already there", R"({"labels":{"a/b":"1","c":"2","x":"y"}})", "[]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document meta = Json(c.metadata);
    webhook::JsonPatch patch;
    webhook::EnsureMapEntries(meta, "/metadata", "labels", {{"a/b", "1"}, {"c", "2"}}, patch);
    EXPECT_TRUE(patch.ops() == Json(c.want_patch)) << patch.ToJson();
  }
}

TEST(ApplyPatchTest, AppliesOperations) {
  struct Case {
    std::string name, doc, patch, want;
  } cases[] = {
      {"add member", R"({"a":1})", R"([{"op":"add","path":"/b","value":2}])", R"({"a":1,"b":2})"},
      {"add replaces existing member", R"({"a":1})", R"([{"op":"add","path":"/a","value":3}])",
       R"({"a":3})"},
      {"add escaped key", R"({"m":{}})", R"([{"op":"add","path":"/m/x~1y~0z","value":"v"}])",
       R"({"m":{"x/y~z":"v"}})"},
      {"append to array", R"({"l":[1,2]})", R"([{"op":"add","path":"/l/-","value":3}])",
       R"({"l":[1,2,3]})"},
      {"insert into array", R"({"l":[1,3]})", R"([{"op":"add","path":"/l/1","value":2}])",
       R"({"l":[1,2,3]})"},
      {"insert at end index", R"({"l":[1]})", R"([{"op":"add","path":"/l/1","value":2}])",
       R"({"l":[1,2]})"},
      {"replace nested", R"({"a":{"b":[{"c":1}]}})",
       R"([{"op":"replace","path":"/a/b/0/c","value":{"d":true}}])",
       R"({"a":{"b":[{"c":{"d":true}}]}})"},
      {"remove member", R"({"a":1,"b":2})", R"([{"op":"remove","path":"/a"}])", R"({"b":2})"},
      {"remove array element", R"({"l":[1,2,3]})", R"([{"op":"remove","path":"/l/1"}])",
       R"({"l":[1,3]})"},
      {"test then add", R"({"a":1})",
       R"([{"op":"test","path":"/a","value":1},{"op":"add","path":"/b","value":1}])",
       R"({"a":1,"b":1})"},
      {"replace whole document", R"({"a":1})", R"([{"op":"add","path":"","value":[1]}])", "[1]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document doc = Json(c.doc);
    absl::Status s = webhook::ApplyPatch(Json(c.patch), doc);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(doc == Json(c.want)) << common::ToJson(doc);
  }
}

TEST(ApplyPatchTest, RejectsBadOperations) {
  struct Case {
    std::string name, doc, patch, error;
  } cases[] = {
      {"missing parent", R"({})", R"([{"op":"add","path":"/a/b","value":1}])",
       "parent of /a/b does not exist"},
      {"replace missing", R"({})", R"([{"op":"replace","path":"/a","value":1}])",
       "/a does not exist"},
      {"remove missing", R"({})", R"([{"op":"remove","path":"/a"}])", "/a does not exist"},
      {"index out of range", R"({"l":[]})", R"([{"op":"add","path":"/l/2","value":1}])",
       "out of range"},
      {"leading zero index", R"({"l":[1,2]})", R"([{"op":"replace","path":"/l/01","value":1}])",
       "not an array index"},
      {"unsupported op", R"({})", R"([{"op":"move","from":"/a","path":"/b"}])",
       "unsupported op \"move\""},
      {"no value", R"({})", R"([{"op":"add","path":"/a"}])", "value: missing"},
      {"relative path", R"({})", R"([{"op":"add","path":"a","value":1}])", "must start with /"},
      {"not an array", R"({})", R"({"op":"add"})", "expected an array"},
      {"test fails", R"({"a":1})", R"([{"op":"test","path":"/a","value":2}])", "test failed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document doc = Json(c.doc);
    absl::Status s = webhook::ApplyPatch(Json(c.patch), doc);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s;
  }
}

}  // namespace
