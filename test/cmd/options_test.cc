// cmd/options: the typed options the subcommands share. Each piece reads only its own flags,
// converts them once, and refuses a bad value with an error naming the flag: an empty file
// name, --context without --kubeconfig, a live cluster and a fixed one at once, an -o or
// --log-level outside what the command takes, a stray argument.
#include "cmd/options.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cmd {
namespace {

// Every shared flag, as the commands' tables spell them.
ParsedFlags SharedFlags(const std::vector<std::string>& args) {
  const common::FlagTable table{{"test"},
                                "",
                                {{"policy", "FILE", ""},
                                 {"cluster-file", "FILE", ""},
                                 {"demo", "", ""},
                                 {"kubeconfig", "FILE", ""},
                                 {"context", "NAME", ""},
                                 {"mig-parted-config", "FILE", ""},
                                 {"scheduler-config", "FILE", ""},
                                 {"log-level", "LEVEL", ""},
                                 {"output", "FORMAT", "", 'o'}}};
  absl::StatusOr<ParsedFlags> flags = table.Parse(args);
  EXPECT_TRUE(flags.ok()) << flags.status();
  return flags.ok() ? *flags : ParsedFlags{};
}

TEST(InputOptionsTest, FilesAndTheDemoArriveAsGiven) {
  absl::StatusOr<InputOptions> none = ParseInputOptions(SharedFlags({}));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->policy_file, "");
  EXPECT_EQ(none->cluster_file, "");
  EXPECT_FALSE(none->demo);
  EXPECT_FALSE(none->has_cluster());

  absl::StatusOr<InputOptions> all =
      ParseInputOptions(SharedFlags({"--policy", "p.yaml", "--cluster-file=c.json", "--demo"}));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->policy_file, "p.yaml");
  EXPECT_EQ(all->cluster_file, "c.json");
  EXPECT_TRUE(all->demo);
  EXPECT_TRUE(all->has_cluster());
  EXPECT_TRUE(ParseInputOptions(SharedFlags({"--demo"}))->has_cluster());
  EXPECT_TRUE(ParseInputOptions(SharedFlags({"--cluster-file", "c.json"}))->has_cluster());
}

TEST(InputOptionsTest, AnEmptyFileNameIsRefusedNamingTheFlag) {
  EXPECT_EQ(ParseInputOptions(SharedFlags({"--policy", ""})).status().message(),
            "--policy takes a file, not \"\"");
  EXPECT_EQ(ParseInputOptions(SharedFlags({"--cluster-file="})).status().message(),
            "--cluster-file takes a file, not \"\"");
}

TEST(KubeOptionsTest, AKubeconfigAndItsContext) {
  absl::StatusOr<KubeOptions> in_cluster = ParseKubeOptions(SharedFlags({}));
  ASSERT_TRUE(in_cluster.ok()) << in_cluster.status();
  EXPECT_EQ(in_cluster->kubeconfig, "");
  EXPECT_EQ(in_cluster->context, "");
  absl::StatusOr<KubeOptions> file =
      ParseKubeOptions(SharedFlags({"--kubeconfig", "kc.yaml", "--context", "prod"}));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->kubeconfig, "kc.yaml");
  EXPECT_EQ(file->context, "prod");
}

TEST(KubeOptionsTest, AContextWithoutAKubeconfigIsRefused) {
  // It used to be dropped silently, and the in-cluster account used instead.
  absl::StatusOr<KubeOptions> o = ParseKubeOptions(SharedFlags({"--context", "prod"}));
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status().message(),
            "--context needs --kubeconfig (the in-cluster service account has no contexts)");
  EXPECT_EQ(ParseKubeOptions(SharedFlags({"--kubeconfig", ""})).status().message(),
            "--kubeconfig takes a file, not \"\"");
}

TEST(CheckOneClusterSourceTest, ALiveClusterAndAFixedOneExcludeEachOther) {
  struct Row {
    std::vector<std::string> args;
    std::string error;  // empty: accepted
  };
  const std::vector<Row> rows = {
      {{}, ""},
      {{"--demo"}, ""},
      {{"--cluster-file", "c.json"}, ""},
      {{"--kubeconfig", "kc.yaml", "--context", "prod"}, ""},
      {{"--kubeconfig", "kc.yaml", "--demo"},
       "--kubeconfig and --demo exclude each other (a live cluster or a fixed one)"},
      {{"--cluster-file", "c.json", "--kubeconfig", "kc.yaml"},
       "--kubeconfig and --cluster-file exclude each other (a live cluster or a fixed one)"},
      {{"--context", "prod", "--demo"},
       "--context and --demo exclude each other (a live cluster or a fixed one)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(testing::PrintToString(row.args));
    absl::Status s = CheckOneClusterSource(SharedFlags(row.args));
    EXPECT_EQ(std::string(s.message()), row.error);
  }
}

TEST(AuditSourceFilesTest, BothFilesOrNeither) {
  absl::StatusOr<AuditSourceFiles> none = ParseAuditSourceFiles(SharedFlags({}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mig_parted_config, "");
  EXPECT_EQ(none->scheduler_config, "");
  absl::StatusOr<AuditSourceFiles> both = ParseAuditSourceFiles(
      SharedFlags({"--mig-parted-config", "m.yaml", "--scheduler-config", "s.yaml"}));
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->mig_parted_config, "m.yaml");
  EXPECT_EQ(both->scheduler_config, "s.yaml");
  EXPECT_EQ(ParseAuditSourceFiles(SharedFlags({"--scheduler-config="})).status().message(),
            "--scheduler-config takes a file, not \"\"");
}

TEST(OutputFormatTest, TextByDefaultAndOnlyWhatTheCommandTakes) {
  const std::vector<OutputFormat> text_json = {OutputFormat::kText, OutputFormat::kJson};
  EXPECT_EQ(*ParseOutputFormat(SharedFlags({}), text_json), OutputFormat::kText);
  EXPECT_EQ(*ParseOutputFormat(SharedFlags({"-o", "json"}), text_json), OutputFormat::kJson);
  EXPECT_EQ(*ParseOutputFormat(SharedFlags({"--output=json"}), text_json), OutputFormat::kJson);
  EXPECT_EQ(ParseOutputFormat(SharedFlags({"-o", "yaml"}), text_json).status().message(),
            "-o must be text or json, not \"yaml\"");
  EXPECT_EQ(ParseOutputFormat(SharedFlags({"-o", "JSON"}),
                              {OutputFormat::kText, OutputFormat::kYaml, OutputFormat::kJson})
                .status()
                .message(),
            "-o must be text, yaml or json, not \"JSON\"");
  EXPECT_EQ(OutputFormatName(OutputFormat::kMarkdown), "markdown");
  EXPECT_EQ(OutputFormatName(OutputFormat::kHtml), "html");
}

TEST(LogLevelFlagTest, UnsetOrOneOfTheFourLevels) {
  absl::StatusOr<std::optional<common::LogLevel>> unset = ParseLogLevelFlag(SharedFlags({}));
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->has_value());
  absl::StatusOr<std::optional<common::LogLevel>> warn =
      ParseLogLevelFlag(SharedFlags({"--log-level", "warn"}));
  ASSERT_TRUE(warn.ok());
  EXPECT_EQ(*warn, common::LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevelFlag(SharedFlags({"--log-level", "loud"})).status().message(),
            "--log-level takes debug, info, warn or error, not \"loud\"");
}

TEST(NoArgumentsTest, AStrayArgumentIsNamed) {
  EXPECT_TRUE(CheckNoArguments(SharedFlags({"--demo"})).ok());
  EXPECT_EQ(CheckNoArguments(SharedFlags({"--demo", "stray", "more"})).message(),
            "unexpected argument \"stray\"");
}

}  // namespace
}  // namespace cmd
