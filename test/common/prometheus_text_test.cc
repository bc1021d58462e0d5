// The one label escaper every /metrics writer uses (common/prometheus_text).
#include "common/prometheus_text.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace common {
namespace {

TEST(EscapeLabelValueTest, EscapesWhatTheExpositionFormatNames) {
  struct Row {
    std::string in;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"", ""},
      {"gpu-node-a", "gpu-node-a"},
      {"a\"b", "a\\\"b"},
      {"back\\slash", "back\\\\slash"},
      {"two\nlines", "two\\nlines"},
      {"\\\"\n", "\\\\\\\"\\n"},
      {"tab\tand\rcr", "tab\tand\rcr"},  // only the three the exposition format names
      {"nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb"},
  };
  for (const Row& row : rows) EXPECT_EQ(EscapeLabelValue(row.in), row.want) << row.in;
}

}  // namespace
}  // namespace common
