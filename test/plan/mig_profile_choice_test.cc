// MIG profile choice: the smallest that holds the memory, balanced among equals, explained.
#include "plan/mig_profile_choice.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Model;
using ::testing::HasSubstr;

TEST(ChooseProfileTest, SmallestProfileThatHoldsIt) {
  struct Row {
    std::string model;
    int64_t need_bytes;
    std::string want;  // empty: whole card
  };
  const std::vector<Row> rows = {
      {"H100-80GB", 3 * kGiB, "1g.10gb"},
      {"H100-80GB", 9984 * kMiB, "1g.10gb"},      // exactly 9.75 GiB still fits
      {"H100-80GB", 9984 * kMiB + 1, "2g.20gb"},  // one byte more does not
      {"H100-80GB", 17 * kGiB, "2g.20gb"},        // not 1g.20gb: same memory, 1 SM slice
      {"H100-80GB", 35 * kGiB, "3g.40gb"},        // not 4g.40gb: same memory, more compute
      {"H100-80GB", 40448 * kMiB + 1, ""},        // only the whole card holds it
      {"A100-40GB", 8 * kGiB, "2g.10gb"},
      {"A100-40GB", 4 * kGiB, "1g.5gb"},
      {"A100-80GB", 30 * kGiB, "3g.40gb"},
      {"A30-24GB", 10 * kGiB, "2g.12gb"},
      {"A30-24GB", 12 * kGiB, ""},
      {"H100-NVL-94GB", 45 * kGiB, "3g.47gb"},
      {"H100-96GB-GH200", 11 * kGiB, "1g.12gb"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat(row.model, " ", row.need_bytes));
    absl::StatusOr<ProfileChoice> c = ChooseProfile(Model(row.model), row.need_bytes);
    ASSERT_TRUE(c.ok()) << c.status();
    if (row.want.empty()) {
      EXPECT_EQ(c->profile, nullptr);
      EXPECT_THAT(c->explanation, HasSubstr("no MIG profile short of the whole card"));
    } else {
      ASSERT_NE(c->profile, nullptr);
      EXPECT_EQ(c->profile->name, row.want);
      EXPECT_EQ(c->profile->name.find('+'), std::string::npos);
    }
  }
}

TEST(ChooseProfileTest, ExplainsTheRounding) {
  absl::StatusOr<ProfileChoice> c = ChooseProfile(Model("H100-80GB"), std::llround(17.6 * kGiB));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->explanation, HasSubstr("needs 17.60 GiB -> 2g.20gb (19.62 GiB)"));
  EXPECT_THAT(c->explanation, HasSubstr("1g.10gb holds only 9.75 GiB"));
  EXPECT_THAT(c->explanation, HasSubstr("1g.20gb has the same memory"));
}

TEST(ChooseProfileTest, CannotSizeWithoutCatalogMemory) {
  for (const char* model : {"H200-141GB", "B200-180GB", "GB200-186GB", "GH200-144GB-HBM3e"}) {
    SCOPED_TRACE(model);
    absl::StatusOr<ProfileChoice> c = ChooseProfile(Model(model), 10 * kGiB);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(c.status().message(), HasSubstr("cannot size"));
    EXPECT_THAT(c.status().message(), HasSubstr(model));
  }
}

}  // namespace
}  // namespace plan
