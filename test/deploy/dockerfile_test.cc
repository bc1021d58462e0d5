// The Dockerfile: the binary runs as non-root with each shared library it needs installed.
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/shell.h"

namespace {

using deploy_test::DeployTest;
using deploy_test::ReadFile;
using deploy_test::Source;
using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

TEST_F(DeployTest, DockerfileRunsTheBinaryAsNonRootWithItsLibraries) {
  std::string dockerfile = ReadFile(Source("Dockerfile"));
  ASSERT_FALSE(dockerfile.empty());
  EXPECT_TRUE(absl::StrContains(dockerfile, "FROM debian:bookworm AS build"));
  size_t runtime = dockerfile.find("FROM debian:bookworm-slim");
  ASSERT_NE(runtime, std::string::npos) << "multi-stage: a slim runtime stage";
  std::string runtime_stage = dockerfile.substr(runtime);
  EXPECT_TRUE(absl::StrContains(runtime_stage, "USER 65532:65532"));
  EXPECT_TRUE(absl::StrContains(runtime_stage, "COPY --from=build"));

  // Every shared library the binary links directly comes from a package the runtime stage
  // installs (or that bookworm-slim already has), so the image starts.
  // One dpkg query for all of them (each query reads the whole package database).
  CommandResult packages = RunShell(absl::StrCat(
      "bin=", ShellQuote(GT_BINARY), "; libs=$(ldd \"$bin\"); paths=(); ",
      "for so in $(readelf -d \"$bin\" | sed -n 's/.*Shared library: \\[\\(.*\\)\\]/\\1/p'); do ",
      "  real=$(readlink -f \"$(awk -v s=\"$so\" '$1==s {print $3}' <<<\"$libs\")\"); ",
      "  paths+=(\"$real\" \"${real#/usr}\"); ", "done; ",
      "found=$(dpkg -S \"${paths[@]}\" 2>/dev/null || true); ",
      "for ((i = 0; i < ${#paths[@]}; i += 2)); do ",
      "  grep -qF -e \"${paths[i]}\" -e \": ${paths[i+1]}\" <<<\"$found\" || echo "
      "\"unknown:${paths[i]}\"; ",
      "done; ", "cut -d: -f1 <<<\"$found\" | sort -u"));
  if (packages.exit_code != 0 || packages.out.empty()) {
    GTEST_SKIP() << "cannot map libraries to Debian packages here: " << packages.err;
  }
  const std::set<std::string> in_slim = {"libc6", "libstdc++6", "libgcc-s1"};
  for (absl::string_view package : absl::StrSplit(packages.out, '\n', absl::SkipEmpty())) {
    std::string p(package);
    EXPECT_NE(p, "unknown") << packages.out;
    if (in_slim.count(p)) continue;
    EXPECT_TRUE(absl::StrContains(runtime_stage, absl::StrCat(" ", p, " ")) ||
                absl::StrContains(runtime_stage, absl::StrCat(" ", p, "\n")))
        << "the runtime stage does not install " << p;
  }
}

// The build stage installs every library .ci/install-deps installs for building the binary
// (the test and benchmark libraries aside), so `docker build` finds each header it includes.
TEST_F(DeployTest, DockerfileBuildStageHasEveryBuildLibrary) {
  std::string dockerfile = ReadFile(Source("Dockerfile"));
  std::string deps = ReadFile(Source(".ci/install-deps"));
  ASSERT_FALSE(deps.empty());
  std::string build_stage = dockerfile.substr(0, dockerfile.find("FROM debian:bookworm-slim"));
  const std::set<std::string> test_only = {"libgtest-dev", "libgmock-dev", "libbenchmark-dev"};
  int checked = 0;
  for (absl::string_view line : absl::StrSplit(deps, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#")) continue;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      std::string package(word);
      if (!absl::EndsWith(package, "-dev") || test_only.count(package)) continue;
      ++checked;
      EXPECT_TRUE(absl::StrContains(build_stage, absl::StrCat(" ", package, " ")) ||
                  absl::StrContains(build_stage, absl::StrCat(" ", package, "\n")))
          << "the build stage does not install " << package;
    }
  }
  EXPECT_GE(checked, 7) << "found too few -dev packages in .ci/install-deps";
}

}  // namespace
