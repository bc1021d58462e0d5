// Quantities must parse exactly as kube-apiserver parses them: a pod the API server accepted must
// never be rejected (or mis-sized) by the extender.
#include "topology/quantity.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

constexpr int64_t kKi = 1024;
constexpr int64_t kMi = kKi * 1024;
constexpr int64_t kGi = kMi * 1024;

struct ParseRow {
  std::string name;
  std::string text;
  int64_t milli;
  int64_t value;  // Value(): whole units, rounded away from zero
};

TEST(QuantityTest, ParsesKubernetesGrammar) {
  const std::vector<ParseRow> rows = {
      {"plain integer", "8", 8000, 8},
      {"zero", "0", 0, 0},
      {"leading zeros", "007", 7000, 7},
      {"binary Gi", "8Gi", 8 * kGi * 1000, 8 * kGi},
      {"decimal G", "8G", int64_t{8'000'000'000} * 1000, 8'000'000'000},
      {"milli", "500m", 500, 1},
      {"exponent", "1e3", 1'000'000, 1000},
      {"fraction with binary suffix", "1.5Gi", int64_t{1'610'612'736} * 1000, 1'610'612'736},
      {"fraction", "0.1", 100, 1},
      {"leading dot", ".5", 500, 1},
      {"trailing dot", "5.", 5000, 5},
      {"explicit plus", "+1", 1000, 1},
      {"negative", "-1", -1000, -1},
      {"negative fraction rounds away from zero", "-1.5", -1500, -2},
      {"capital exponent", "1E2", 100'000, 100},
      {"exponent with plus", "1e+2", 100'000, 100},
      {"Ki", "1Ki", kKi * 1000, kKi},
      {"Mi", "20Mi", 20 * kMi * 1000, 20 * kMi},
      {"Ti", "1Ti", kGi * 1024 * 1000, kGi * 1024},
      {"k", "2k", 2'000'000, 2000},
      {"M", "3M", int64_t{3'000'000} * 1000, 3'000'000},
      {"T", "1T", int64_t{1'000'000'000'000} * 1000, 1'000'000'000'000},
      {"negative exponent", "1e-3", 1, 1},
      {"one milli", "1m", 1, 1},
      {"fraction of Ki", "0.5Ki", 512'000, 512},
      {"fraction of milli rounds up", "0.1m", 1, 1},
      {"very small fraction rounds up", "0.0001", 1, 1},
      {"tiny exponent rounds up", "1e-9", 1, 1},
      {"far tiny exponent rounds up", "1e-900", 1, 1},
      {"negative tiny fraction rounds away from zero", "-0.0001", -1, -1},
      {"nano suffix rounds up to a milli", "1n", 1, 1},
      {"micro suffix", "500000u", 500, 1},
      {"exact micro", "1000u", 1, 1},
      {"zero with suffix", "0Gi", 0, 0},
      {"zero fraction", "0.000", 0, 0},
      {"largest milli", "9223372036854775807m", INT64_MAX, 9223372036854776},
      {"largest whole units", "9223372036854775", 9223372036854775000, 9223372036854775},
      {"many fraction digits with a binary suffix", "1.0000000000000000Ki", kKi * 1000, kKi},
      {"8Pi still fits", "8Pi", int64_t{8} * kGi * kMi * 1000, int64_t{8} * kGi * kMi},
  };
  for (const ParseRow& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<Quantity> q = Quantity::Parse(row.text);
    ASSERT_TRUE(q.ok()) << row.text << ": " << q.status();
    EXPECT_EQ(q->milli(), row.milli) << row.text;
    EXPECT_EQ(q->Value(), row.value) << row.text;
  }
}

TEST(QuantityTest, RejectsJunkWithInvalidArgumentNamingTheText) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"empty", ""},
      {"letters", "abc"},
      {"two dots", "1.2.3"},
      {"space before suffix", "1 Gi"},
      {"leading space", " 1"},
      {"trailing space", "1 "},
      {"suffix only", "Gi"},
      {"bytes suffix", "1Gb"},
      {"KiB", "1KiB"},
      {"lower-case binary", "1ki"},
      {"upper-case K", "1K"},
      {"double sign", "--1"},
      {"double plus", "++1"},
      {"exponent without digits", "1e"},
      {"exponent sign without digits", "1e+"},
      {"fractional exponent", "1e1.5"},
      {"exponent then suffix", "1E3Ki"},
      {"double exponent sign", "1e+-3"},
      {"sign only", "-"},
      {"dot only", "."},
      {"i alone", "1i"},
      {"milli-i", "0.1mi"},
      {"sign in the middle", "1+1.0M"},
      {"hex", "0x10"},
      {"comma", "1,5"},
      {"underscore", "1_000"},
      {"infinity", "Inf"},
      {"NaN", "NaN"},
      {"nul byte", std::string("1\0", 2)},
  };
  for (const auto& [name, text] : rows) {
    SCOPED_TRACE(name);
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_FALSE(q.ok()) << "\"" << text << "\" parsed as " << q->milli() << "m";
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(q.status().message(), "is not a valid Kubernetes quantity"))
        << q.status();
  }
}

TEST(QuantityTest, RejectsValuesTooLargeForMilliUnits) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"int64 max units", "9223372036854775807"},
      {"one past the largest whole units", "9223372036854776"},
      {"one past the largest milli", "9223372036854775808m"},
      {"8Ei", "8Ei"},
      {"exa", "1E"},
      {"9Pi", "9Pi"},
      {"huge exponent", "1e30"},
      {"exponent out of range", "1e99999"},
      {"forty digits", "1000000000000000000000000000000000000000"},
      {"negative huge", "-9223372036854775807"},
  };
  for (const auto& [name, text] : rows) {
    SCOPED_TRACE(name);
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_FALSE(q.ok()) << text << " parsed as " << q->milli() << "m";
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(QuantityTest, ValueMiBRoundsUp) {
  struct Row {
    std::string name;
    std::string text;
    int64_t mib;
  };
  const std::vector<Row> rows = {
      {"20Gi", "20Gi", 20480},
      {"one byte", "1", 1},
      {"exactly one MiB", "1Mi", 1},
      {"one byte over a MiB", "1048577", 2},
      {"decimal gigabytes", "16G", 15259},  // 16e9 / 2^20 = 15258.8
      {"zero", "0", 0},
      {"fractional Gi", "1.5Gi", 1536},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<Quantity> q = Quantity::Parse(row.text);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->ValueMiB(), row.mib);
  }
}

TEST(QuantityTest, ConstructorsAccessorsAndText) {
  EXPECT_EQ(Quantity::FromUnits(3).milli(), 3000);
  EXPECT_EQ(Quantity::FromMilli(1500).Value(), 2);
  EXPECT_EQ(Quantity::FromMilli(-1500).Value(), -2);
  EXPECT_EQ(Quantity::FromMilli(2000).Value(), 2);
  EXPECT_TRUE(Quantity().IsZero());
  EXPECT_TRUE(Quantity::FromMilli(-1).IsNegative());
  EXPECT_FALSE(Quantity::FromMilli(1).IsNegative());
  EXPECT_EQ(Quantity::FromMilli(1500).ToString(), "1500m");
  EXPECT_EQ(Quantity::FromUnits(3).ToString(), "3");
  EXPECT_EQ(Quantity::Parse("20Gi")->ToString(), "21474836480");
  EXPECT_LT(Quantity::FromMilli(999), Quantity::FromUnits(1));
  EXPECT_EQ(*Quantity::Parse("1k"), *Quantity::Parse("1000"));
  EXPECT_EQ(*Quantity::Parse("1e3"), *Quantity::Parse("1k"));
  EXPECT_EQ(*Quantity::Parse("0.5"), *Quantity::Parse("500m"));
}

}  // namespace
}  // namespace topology
