// Memory sizing term by term, from a model description or a high-water mark.
#include "plan/memory_sizing.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::HighWater;
using plan::testing::Llama13B;
using ::testing::HasSubstr;

const MemoryTerm* Term(const MemorySizing& s, absl::string_view name) {
  for (const MemoryTerm& t : s.terms) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(SizeMemoryTest, ModelDescriptionShowsEveryTerm) {
  absl::StatusOr<MemorySizing> s = SizeMemory(Llama13B());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source, "model");
  std::vector<std::string> names;
  for (const MemoryTerm& t : s->terms) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"weights", "kv-cache", "workspace", "headroom"}));
  EXPECT_EQ(Term(*s, "weights")->bytes, 26'000'000'000);  // 13B x 2 bytes (fp16 default)
  // 2 x 40 layers x 40 heads x 128 dim x 4096 tokens x 2 sequences x 2 bytes.
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, int64_t{2} * 40 * 40 * 128 * 4096 * 2 * 2);
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, 6'710'886'400);
  EXPECT_EQ(Term(*s, "workspace")->bytes, kGiB);  // documented default
  int64_t subtotal = 26'000'000'000 + 6'710'886'400 + kGiB;
  EXPECT_EQ(Term(*s, "headroom")->bytes, std::llround(subtotal * 0.10));
  EXPECT_EQ(s->total_bytes, subtotal + std::llround(subtotal * 0.10));
  EXPECT_EQ(s->total_mib, (s->total_bytes + kMiB - 1) / kMiB);
  EXPECT_EQ(GiBText(s->total_bytes, true), "34.62 GiB");
  EXPECT_THAT(Term(*s, "weights")->how, HasSubstr("13B params x 2 B"));
  EXPECT_THAT(Term(*s, "kv-cache")->how, HasSubstr("40 layers x 40 KV heads x 128 head dim"));
  EXPECT_THAT(Term(*s, "headroom")->how, HasSubstr("10% of"));
}

TEST(SizeMemoryTest, OverridesForQuantisationKvPrecisionWorkspaceAndHeadroom) {
  MemoryInput m = Llama13B();
  m.model->bytes_per_parameter = 0.5;  // int4
  m.model->kv_bytes_per_element = 1;   // fp8 KV cache
  m.workspace_bytes = 512 * kMiB;
  m.headroom_percent = 25;
  absl::StatusOr<MemorySizing> s = SizeMemory(m);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Term(*s, "weights")->bytes, 6'500'000'000);
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, 3'355'443'200);
  EXPECT_EQ(Term(*s, "workspace")->bytes, 512 * kMiB);
  int64_t subtotal = 6'500'000'000 + 3'355'443'200 + 512 * kMiB;
  EXPECT_EQ(Term(*s, "headroom")->bytes, std::llround(subtotal * 0.25));
}

TEST(SizeMemoryTest, HighWaterMarkGetsHeadroomOnly) {
  absl::StatusOr<MemorySizing> s = SizeMemory(HighWater(16 * kGiB));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source, "high-water mark");
  ASSERT_EQ(s->terms.size(), 2u);
  EXPECT_EQ(s->terms[0].name, "measured");
  EXPECT_EQ(s->terms[1].name, "headroom");
  EXPECT_EQ(s->terms[1].bytes, std::llround(16 * kGiB * 0.1));
  EXPECT_EQ(GiBText(s->total_bytes, true), "17.60 GiB");

  MemoryInput with_workspace = HighWater(16 * kGiB);
  with_workspace.workspace_bytes = kGiB;
  with_workspace.headroom_percent = 0;
  s = SizeMemory(with_workspace);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->total_bytes, 17 * kGiB);
}

TEST(SizeMemoryTest, RejectsBadInput) {
  MemoryInput neither;
  EXPECT_EQ(SizeMemory(neither).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput both = Llama13B();
  both.high_water_bytes = kGiB;
  EXPECT_EQ(SizeMemory(both).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput no_layers = Llama13B();
  no_layers.model->layers = 0;
  EXPECT_THAT(SizeMemory(no_layers).status().message(), HasSubstr("layers"));
  MemoryInput huge = Llama13B();
  huge.model->max_tokens = 1'000'000'000;
  huge.model->concurrency = 1'000'000;
  EXPECT_EQ(SizeMemory(huge).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput negative_headroom = HighWater(kGiB);
  negative_headroom.headroom_percent = -5;
  EXPECT_EQ(SizeMemory(negative_headroom).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace plan
