// common/flag_table: "--name value", "--name=value", "-x value", switches and positional
// arguments, every flag kept under its long name; unknown flags, values given to switches and
// missing values are errors naming the flag; the usage text lists every flag of the table.
#include "common/flag_table.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using Values = std::map<std::string, std::vector<std::string>>;

const FlagTable kTable{{"tool [flags] FILE..."},
                       "Reads files.",
                       {{"policy", "FILE", "the policy"},
                        {"cluster-file", "FILE", "the cluster"},
                        {"output", "FORMAT", "text or json", 'o'},
                        {"listen", "HOST:PORT", "where to listen"},
                        {"demo", "", "the demo"},
                        {"verbose", "", "say more", 'v'}}};

TEST(FlagTableTest, AcceptsEverySpelling) {
  struct Row {
    std::string name;
    std::vector<std::string> args;
    Values values;
    std::set<std::string> switches;
    std::vector<std::string> positional;
  };
  const std::vector<Row> rows = {
      {"nothing", {}, {}, {}, {}},
      {"positional only", {"pod.yaml", "other.yaml"}, {}, {}, {"pod.yaml", "other.yaml"}},
      {"a lone dash is positional (stdin)", {"-"}, {}, {}, {"-"}},
      {"--name value", {"--policy", "p.yaml"}, {{"policy", {"p.yaml"}}}, {}, {}},
      {"--name=value", {"--policy=p.yaml"}, {{"policy", {"p.yaml"}}}, {}, {}},
      {"-o value", {"-o", "json"}, {{"output", {"json"}}}, {}, {}},
      {"-o=value", {"-o=yaml"}, {{"output", {"yaml"}}}, {}, {}},
      {"one dash or two, either name",
       {"-policy", "a", "--o", "b", "-output", "c"},
       {{"policy", {"a"}}, {"output", {"b", "c"}}},
       {},
       {}},
      {"empty inline value", {"--listen="}, {{"listen", {""}}}, {}, {}},
      {"only the first = splits", {"--listen=a=b"}, {{"listen", {"a=b"}}}, {}, {}},
      {"a value may look like a flag",
       {"--o", "--demo", "--policy", "-"},
       {{"output", {"--demo"}}, {"policy", {"-"}}},
       {},
       {}},
      {"repeated flags keep every value",
       {"--o", "a", "--o=b", "-o", "c"},
       {{"output", {"a", "b", "c"}}},
       {},
       {}},
      {"switches", {"--demo", "-v", "--demo"}, {}, {"demo", "verbose"}, {}},
      {"help in both forms", {"-h", "--help"}, {}, {"help"}, {}},
      {"all mixed in order",
       {"pod.yaml", "--demo", "--o", "json", "x.yaml"},
       {{"output", {"json"}}},
       {"demo"},
       {"pod.yaml", "x.yaml"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<ParsedFlags> flags = kTable.Parse(row.args);
    ASSERT_TRUE(flags.ok()) << flags.status();
    EXPECT_EQ(flags->values, row.values);
    EXPECT_EQ(flags->switches, row.switches);
    EXPECT_EQ(flags->positional, row.positional);
  }
}

TEST(FlagTableTest, RefusesWhatWouldSilentlyChangeBehaviour) {
  struct Row {
    std::string name;
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"unknown flag", {"--polcy", "p.yaml"}, "unknown flag --polcy"},
      {"unknown flag with a value", {"--nope=1"}, "unknown flag --nope=1"},
      {"unknown short flag", {"-x"}, "unknown flag -x"},
      {"a double dash is no end-of-flags marker", {"--", "file"}, "unknown flag --"},
      {"a switch given a value", {"--demo=false"}, "--demo takes no value"},
      {"a short switch given a value", {"-v=1"}, "--verbose takes no value"},
      {"a long name is not a short one", {"-verbos"}, "unknown flag -verbos"},
      {"a value missing at the end", {"pod.yaml", "--policy"}, "--policy needs a value"},
      {"the first error wins", {"--nope", "--policy"}, "unknown flag --nope"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<ParsedFlags> flags = kTable.Parse(row.args);
    EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(flags.status().message(), row.message);
  }
}

TEST(ParsedFlagsTest, HasAndGet) {
  absl::StatusOr<ParsedFlags> flags =
      kTable.Parse({"-o", "a", "--output", "b", "--demo", "--listen="});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->Has("output"));
  EXPECT_FALSE(flags->Has("o")) << "kept under the long name";
  EXPECT_TRUE(flags->Has("demo"));
  EXPECT_TRUE(flags->Has("listen"));
  EXPECT_FALSE(flags->Has("policy"));
  EXPECT_FALSE(flags->Has("verbose"));
  EXPECT_EQ(flags->Get("output"), "b") << "the last value wins";
  EXPECT_EQ(flags->Get("listen", "fallback"), "") << "given empty is not absent";
  EXPECT_EQ(flags->Get("policy", "fallback"), "fallback");
  EXPECT_EQ(flags->Get("demo", "fallback"), "fallback") << "a switch has no value";
}

TEST(FlagTableTest, UsageListsEveryFlagInOneColumn) {
  const std::string usage = kTable.Usage();
  EXPECT_TRUE(absl::StartsWith(usage, "usage: tool [flags] FILE...\n\nReads files.\n\nflags:\n"))
      << usage;
  for (absl::string_view line :
       {"      --policy FILE", "  -o, --output FORMAT", "  -v, --verbose", "  -h, --help"}) {
    EXPECT_TRUE(absl::StrContains(usage, line)) << line << "\n" << usage;
  }
  // Every help text starts in the same column.
  size_t column = 0;
  for (absl::string_view line : absl::StrSplit(usage.substr(usage.find("flags:\n") + 7), '\n')) {
    if (line.empty()) continue;
    const size_t help = line.find("  ", line.find_first_not_of(' '));
    ASSERT_NE(help, absl::string_view::npos) << line;
    const size_t start = line.find_first_not_of(' ', help);
    if (column == 0) column = start;
    EXPECT_EQ(start, column) << line;
  }
}

TEST(FlagTableTest, LongHelpContinuesAndWideFlagsWrap) {
  const FlagTable table{{"t"},
                        "",
                        {{"a", "", "first line\nsecond line"},
                         {"a-flag-name-far-too-long-for-the-column", "VALUE", "its help"}}};
  const std::string usage = table.Usage();
  EXPECT_TRUE(absl::StrContains(usage, "first line\n"));
  const size_t second = usage.find("second line");
  const size_t first = usage.find("first line");
  EXPECT_EQ(second - usage.rfind('\n', second), first - usage.rfind('\n', first))
      << "the continuation starts in the help column\n"
      << usage;
  EXPECT_TRUE(absl::StrContains(usage, "--a-flag-name-far-too-long-for-the-column VALUE\n"))
      << "a wide flag puts its help on the next line\n"
      << usage;
  EXPECT_EQ(table.Find("a")->help, "first line\nsecond line");
  EXPECT_EQ(table.Find("help"), nullptr) << "--help is implied, not declared";
}

TEST(DurationFlagTest, ConvertsWithinItsRangeAndNamesTheFlagOtherwise) {
  ParsedFlags flags;
  flags.values["wait"] = {"90s"};
  flags.values["bad"] = {"soon"};
  flags.values["zero"] = {"0s"};
  const absl::Duration low = absl::Seconds(1), high = absl::Hours(1);
  EXPECT_EQ(*DurationFlag(flags, "wait", absl::Seconds(5), low, high, "10s"), absl::Seconds(90));
  EXPECT_EQ(*DurationFlag(flags, "absent", absl::Seconds(5), low, high, "10s"), absl::Seconds(5));
  EXPECT_EQ(DurationFlag(flags, "bad", absl::Seconds(5), low, high, "10s").status().message(),
            "--bad takes a duration such as 10s (1s..1h)");
  EXPECT_EQ(DurationFlag(flags, "zero", absl::Seconds(5), low, high, "10s").status().message(),
            "--zero takes a duration such as 10s (1s..1h)");
  EXPECT_EQ(DurationFlag(flags, "zero", absl::Seconds(5), absl::Milliseconds(1),
                         absl::InfiniteDuration(), "30s")
                .status()
                .message(),
            "--zero takes a duration such as 30s (at least 1ms)");
  EXPECT_EQ(*DurationFlag(flags, "zero", absl::Seconds(5), absl::ZeroDuration(), high, "5s"),
            absl::ZeroDuration());
}

}  // namespace
}  // namespace common
