// cmd/flags: "--name value", "--name=value", "-o value", switches and positional arguments;
// unknown flags, values given to switches and missing values are errors naming the flag.
// ReadFile returns a file's bytes exactly, or NotFound naming the path.
#include "cmd/flags.h"

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cmd {
namespace {

using Values = std::map<std::string, std::vector<std::string>>;

const std::set<std::string> kWithValue = {"policy", "cluster-file", "o", "listen"};
const std::set<std::string> kSwitches = {"demo", "v"};

TEST(ParseFlagsTest, AcceptsEverySpelling) {
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
      {"-o value", {"-o", "json"}, {{"o", {"json"}}}, {}, {}},
      {"-o=value", {"-o=yaml"}, {{"o", {"yaml"}}}, {}, {}},
      {"one dash or two", {"-policy", "a", "--o", "b"}, {{"policy", {"a"}}, {"o", {"b"}}}, {}, {}},
      {"empty inline value", {"--listen="}, {{"listen", {""}}}, {}, {}},
      {"only the first = splits", {"--listen=a=b"}, {{"listen", {"a=b"}}}, {}, {}},
      {"a value may look like a flag",
       {"--o", "--demo", "--policy", "-"},
       {{"o", {"--demo"}}, {"policy", {"-"}}},
       {},
       {}},
      {"repeated flags keep every value",
       {"--o", "a", "--o=b", "-o", "c"},
       {{"o", {"a", "b", "c"}}},
       {},
       {}},
      {"switches", {"--demo", "-v", "--demo"}, {}, {"demo", "v"}, {}},
      {"all mixed in order",
       {"pod.yaml", "--demo", "--o", "json", "x.yaml"},
       {{"o", {"json"}}},
       {"demo"},
       {"pod.yaml", "x.yaml"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<ParsedFlags> flags = ParseFlags(row.args, kWithValue, kSwitches);
    ASSERT_TRUE(flags.ok()) << flags.status();
    EXPECT_EQ(flags->values, row.values);
    EXPECT_EQ(flags->switches, row.switches);
    EXPECT_EQ(flags->positional, row.positional);
  }
}

TEST(ParseFlagsTest, RefusesWhatWouldSilentlyChangeBehaviour) {
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
      {"a short switch given a value", {"-v=1"}, "--v takes no value"},
      {"a value missing at the end", {"pod.yaml", "--policy"}, "--policy needs a value"},
      {"the first error wins", {"--nope", "--policy"}, "unknown flag --nope"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<ParsedFlags> flags = ParseFlags(row.args, kWithValue, kSwitches);
    EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(flags.status().message(), row.message);
  }
}

TEST(ParsedFlagsTest, HasAndGet) {
  absl::StatusOr<ParsedFlags> flags =
      ParseFlags({"--o", "a", "--o", "b", "--demo", "--listen="}, kWithValue, kSwitches);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->Has("o"));
  EXPECT_TRUE(flags->Has("demo"));
  EXPECT_TRUE(flags->Has("listen"));
  EXPECT_FALSE(flags->Has("policy"));
  EXPECT_FALSE(flags->Has("v"));
  EXPECT_EQ(flags->Get("o"), "b") << "the last value wins";
  EXPECT_EQ(flags->Get("listen", "fallback"), "") << "given empty is not absent";
  EXPECT_EQ(flags->Get("policy", "fallback"), "fallback");
  EXPECT_EQ(flags->Get("demo", "fallback"), "fallback") << "a switch has no value";
}

class ReadFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = ::testing::TempDir() + "/flags_test_" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(ReadFileTest, ReturnsTheBytesExactly) {
  const std::string bytes("line\r\n\0binary\xff\n", 15);
  absl::StatusOr<std::string> text = ReadFile(Write("bytes", bytes));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, bytes);
  absl::StatusOr<std::string> empty = ReadFile(Write("empty", ""));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, "");
}

TEST_F(ReadFileTest, AMissingFileIsNotFoundNamingIt) {
  const std::string path = ::testing::TempDir() + "/flags_test_does_not_exist.yaml";
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(text.status().message(), "cannot read " + path);
}

// Opening a directory succeeds on Linux and reads as nothing: `--policy /etc` must say so rather
// than parse as an empty policy.
TEST_F(ReadFileTest, ADirectoryIsAnErrorNamingIt) {
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<std::string> text = ReadFile(dir);
  ASSERT_FALSE(text.ok()) << "read " << text->size() << " bytes from a directory";
  EXPECT_EQ(text.status().message(), "cannot read " + dir + ": is a directory");
}

}  // namespace
}  // namespace cmd
