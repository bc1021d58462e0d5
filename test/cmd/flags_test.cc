// cmd/flags: ReadFile returns a file's bytes exactly, or NotFound naming the path.
#include "cmd/flags.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cmd {
namespace {

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
