// common/json: parsing into a caller's pool (how list pages are parsed) gives the same values
// and the same errors as the default allocator, and leaves the memory in that pool.
#include "common/json.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace common {
namespace {

TEST(JsonTest, ParsingIntoACallersPoolKeepsEverythingInIt) {
  std::string text = R"({"kind":"PodList","items":[)";
  for (int i = 0; i < 2000; ++i) {
    if (i > 0) text += ",";
    text += R"({"metadata":{"name":"pod-)" + std::to_string(i) + R"(","namespace":"team"}})";
  }
  text += "]}";
  rapidjson::MemoryPoolAllocator<> pool(1 << 20);
  absl::StatusOr<rapidjson::Document> doc = ParseJsonInPlace(text, &pool);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(&doc->GetAllocator(), &pool);
  // The text's copy and the values are in the pool's first (1 MiB) chunk.
  EXPECT_GT(pool.Size(), text.size());
  EXPECT_EQ(pool.Capacity(), size_t{1} << 20);
  text.assign(text.size(), 'x');  // the document does not point into the caller's text
  const JsonValue* items = FindMember(*doc, "items");
  ASSERT_NE(items, nullptr);
  ASSERT_EQ(items->Size(), 2000u);
  EXPECT_EQ(StringOr(*FindMember((*items)[1999], "metadata"), "name"), "pod-1999");
}

TEST(JsonTest, ErrorsAreTheSameWithACallersPool) {
  for (const char* bad : {R"({"items":[)", R"({"a":1} x)", "\xff", ""}) {
    rapidjson::MemoryPoolAllocator<> pool(1 << 20);
    absl::StatusOr<rapidjson::Document> pooled = ParseJsonInPlace(bad, &pool);
    absl::StatusOr<rapidjson::Document> plain = ParseJson(bad);
    ASSERT_FALSE(pooled.ok()) << bad;
    ASSERT_FALSE(plain.ok()) << bad;
    EXPECT_EQ(pooled.status().message(), plain.status().message());
    EXPECT_TRUE(absl::StartsWith(pooled.status().message(), "invalid JSON")) << pooled.status();
  }
}

TEST(JsonWriterTest, KeysAndStringsNeedNoTerminatingNul) {
  const std::string text = "nodeXgpu\"0";
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteKey(w, absl::string_view(text).substr(0, 4));
  WriteString(w, absl::string_view(text).substr(5));
  w.EndObject();
  EXPECT_EQ(absl::string_view(buffer.GetString(), buffer.GetSize()), R"({"node":"gpu\"0"})");
}

TEST(JsonStringTest, CopiesSoTheSourceMayGo) {
  rapidjson::Document doc(rapidjson::kObjectType);
  {
    std::string name = "tenant-a";
    doc.AddMember("name", JsonString(absl::string_view(name).substr(0, 6), doc.GetAllocator()),
                  doc.GetAllocator());
    name.assign("overwritten");
  }
  EXPECT_EQ(ToJson(doc), R"({"name":"tenant"})");
}

}  // namespace
}  // namespace common
