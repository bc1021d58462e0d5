// The one writer (and its label escaper) every /metrics collector uses, and the registry the
// operator port renders (common/prometheus_text).
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

TEST(MetricsTextTest, WritesAFamilyThenItsSamples) {
  std::string out;
  MetricsText text(out);
  text.Family("gpu_tenancy_x_total", MetricsText::kCounter, "Things, by kind.");
  text.Sample("gpu_tenancy_x_total", {{"kind", "a\"b\nc"}, {"node", "n-1"}}, uint64_t{7});
  text.Sample("gpu_tenancy_x_total", {}, 0.25);
  text.Family("gpu_tenancy_h", MetricsText::kHistogram, "A histogram.");
  text.Sample("gpu_tenancy_h_bucket", std::vector<MetricLabel>{{"le", "+Inf"}}, -3);
  EXPECT_EQ(out,
            "# HELP gpu_tenancy_x_total Things, by kind.\n"
            "# TYPE gpu_tenancy_x_total counter\n"
            "gpu_tenancy_x_total{kind=\"a\\\"b\\nc\",node=\"n-1\"} 7\n"
            "gpu_tenancy_x_total 0.25\n"
            "# HELP gpu_tenancy_h A histogram.\n"
            "# TYPE gpu_tenancy_h histogram\n"
            "gpu_tenancy_h_bucket{le=\"+Inf\"} -3\n");
}

TEST(MetricsRegistryTest, RendersEveryCollectorInTheOrderAdded) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.Render(), "");
  int scrapes = 0;
  registry.Add([](MetricsText& m) {
    m.Family("first", MetricsText::kGauge, "1");
    m.Sample("first", {}, 1);
  });
  registry.Add([&scrapes](MetricsText& m) {
    m.Family("second", MetricsText::kGauge, "2");
    m.Sample("second", {}, ++scrapes);
  });
  EXPECT_EQ(registry.Render(),
            "# HELP first 1\n# TYPE first gauge\nfirst 1\n"
            "# HELP second 2\n# TYPE second gauge\nsecond 1\n");
  EXPECT_NE(registry.Render().find("second 2\n"), std::string::npos) << "collected per scrape";
}

}  // namespace
}  // namespace common
