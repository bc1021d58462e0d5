// Every subcommand's --help, through the binary: written from the command's flag table, so it
// lists each flag the command accepts, and a flag the table lacks is refused with that usage.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/shell.h"

namespace {

using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

CommandResult RunGpuTenancy(const std::string& args) {
  return RunShell(absl::StrCat(ShellQuote(GT_BINARY), " ", args));
}

struct SubcommandFlags {
  std::string name;
  std::vector<std::string> flags;  // some of the flags the command reads
};

const std::vector<SubcommandFlags> kSubcommands = {
    {"serve",
     {"--policy FILE", "--leader-elect true|false", "--request-deadline DURATION",
      "--validating-webhook-config NAME", "--bench-routes"}},
    {"explain", {"--cluster-file FILE", "--pod FILE|NS/NAME", "-o, --output FORMAT"}},
    {"plan", {"--input FILE", "--policy FILE", "-o, --output FORMAT"}},
    {"audit", {"--kubeconfig FILE", "--mig-parted-config FILE", "--scheduler-config FILE"}},
    {"check", {"-n, --namespace NS", "--namespace-labels NS=k=v,...", "--cluster-file FILE"}},
    {"reconfigure", {"--to CONFIG", "--settle DURATION", "--dry-run", "--skip-traffic-check"}},
    {"scheduler-config", {"--layout LAYOUT", "--cluster-file FILE"}},
    {"ui", {"--listen HOST:PORT", "--policy FILE"}},
    {"webhook-config", {"--policy FILE"}},
    {"node-agent", {"--node NAME", "--pod-resources-socket PATH", "--interval DURATION", "--once"}},
};

TEST(HelpTest, EveryCommandListsItsFlags) {
  for (const SubcommandFlags& c : kSubcommands) {
    SCOPED_TRACE(c.name);
    for (const char* help : {"--help", "-h"}) {
      CommandResult r = RunGpuTenancy(absl::StrCat(c.name, " ", help));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_TRUE(absl::StartsWith(r.out, absl::StrCat("usage: gpu-tenancy ", c.name))) << r.out;
      EXPECT_TRUE(absl::StrContains(r.out, "\nflags:\n")) << r.out;
      EXPECT_TRUE(absl::StrContains(r.out, "  -h, --help ")) << r.out;
      for (const std::string& flag : c.flags) {
        // Its help follows on the same line, or on the next when the flag is wide.
        EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat(flag, " ")) ||
                    absl::StrContains(r.out, absl::StrCat(flag, "\n")))
            << flag << "\n"
            << r.out;
      }
    }
  }
}

TEST(HelpTest, AFlagNotInTheTableIsRefusedWithTheUsage) {
  for (const SubcommandFlags& c : kSubcommands) {
    SCOPED_TRACE(c.name);
    CommandResult r = RunGpuTenancy(absl::StrCat(c.name, " --helpp"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(absl::StartsWith(r.err, "error: unknown flag --helpp\nusage: gpu-tenancy "))
        << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, "  -h, --help ")) << r.err;
  }
}

}  // namespace
