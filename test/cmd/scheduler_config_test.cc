// `gpu-tenancy scheduler-config` through the built binary: the extender entry it prints parses
// as YAML and manages every catalog name, --policy adds the configured names, --cluster-file
// narrows to what the nodes advertise, and usage mistakes exit 2 naming the flag.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "rapidjson/pointer.h"
#include "test/support/shell.h"

namespace {

testing_support::CommandResult SchedulerConfig(const std::string& args) {
  return testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " scheduler-config ", args));
}

std::string SourcePathArg(const std::string& relative) {
  return testing_support::ShellQuote(absl::StrCat(GT_SOURCE_DIR, "/", relative));
}

struct ManagedName {
  std::string name;
  bool ignored = false;
  bool operator==(const ManagedName&) const = default;
};

// The managedResources of the one extender entry in `yaml`.
std::vector<ManagedName> ManagedNamesOf(const std::string& yaml) {
  std::vector<ManagedName> out;
  absl::StatusOr<rapidjson::Document> doc = common::YamlToJson(yaml);
  EXPECT_TRUE(doc.ok()) << doc.status();
  if (!doc.ok()) return out;
  const rapidjson::Value* resources = rapidjson::Pointer("/extenders/0/managedResources").Get(*doc);
  EXPECT_TRUE(resources && resources->IsArray()) << yaml;
  if (!resources || !resources->IsArray()) return out;
  for (const rapidjson::Value& r : resources->GetArray()) {
    const rapidjson::Value* ignored = rapidjson::Pointer("/ignoredByScheduler").Get(r);
    out.push_back({std::string(common::StringOr(r, "name")),
                   ignored && ignored->IsBool() && ignored->GetBool()});
  }
  return out;
}

TEST(SchedulerConfigCmdTest, StanzaManagesTheWholeCatalog) {
  testing_support::CommandResult r = SchedulerConfig("");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "\n  preemptVerb: preempt")) << r.out;
  std::vector<ManagedName> names = ManagedNamesOf(r.out);
  // 2 whole-GPU names, 52 MIG profiles exclusive and shared, 2 memory names, 2 DRA classes.
  EXPECT_EQ(names.size(), 110u);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), (ManagedName{"nvidia.com/gpu", false}));
  EXPECT_EQ(names.back(),
            (ManagedName{"deviceclass.resource.kubernetes.io/mig.nvidia.com", false}));
  for (const char* name : {"nvidia.com/mig-1g.18gb", "nvidia.com/mig-1g.18gb.me.shared",
                           "nvidia.com/mig-1g.6gb.me", "nvidia.com/mig-7g.180gb.shared"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), ManagedName{name, false}), names.end()) << name;
  }
  // No line of the output is wider than the repository's 100 columns.
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) EXPECT_LE(line.size(), 100u) << line;
}

TEST(SchedulerConfigCmdTest, PolicyAddsItsSharedAndMemoryNames) {
  testing_support::CommandResult r = SchedulerConfig(
      absl::StrCat("--policy ", SourcePathArg("test/testdata/webhook/policy.yaml")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<ManagedName> names = ManagedNamesOf(r.out);
  ASSERT_EQ(names.size(), 111u);
  EXPECT_EQ(names[106], (ManagedName{"example.com/vgpu", false}));
  EXPECT_TRUE(absl::StrContains(r.out, "(sharedResources)")) << r.out;
}

TEST(SchedulerConfigCmdTest, ClusterFileNarrowsToAdvertisedNames) {
  testing_support::CommandResult r = SchedulerConfig(
      absl::StrCat("--layout=scheduler --cluster-file ", SourcePathArg("cmd/demo/cluster.yaml"),
                   " --policy ", SourcePathArg("test/testdata/webhook/policy.yaml")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The demo cluster's H100s and A100s advertise three MIG profiles, whole and time-sliced
  // GPUs; example.com/vgpu is advertised by no node; memory names are always kept.
  const std::vector<ManagedName> want = {
      {"nvidia.com/gpu", false},
      {"nvidia.com/gpu.shared", false},
      {"nvidia.com/mig-1g.10gb", false},
      {"nvidia.com/mig-2g.20gb", false},
      {"nvidia.com/mig-3g.40gb", false},
      {"nvidia.com/gpu.memory", true},
      {"nvidia.com/gpumem", true},
      // DRA extended resources: no node's allocatable lists them, so they are always kept.
      {"deviceclass.resource.kubernetes.io/gpu.nvidia.com", false},
      {"deviceclass.resource.kubernetes.io/mig.nvidia.com", false},
  };
  EXPECT_EQ(ManagedNamesOf(r.out), want) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "schedulerName: gpu-tenancy-scheduler")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "cmd/demo/cluster.yaml advertise")) << r.out;
}

TEST(SchedulerConfigCmdTest, BadFlagsExit2NamingTheFlag) {
  struct Row {
    std::string args;
    std::string names;  // in stderr
  };
  const std::vector<Row> rows = {
      {"--layout", "--layout needs a value"},
      {"--layout whole", "--layout must be stanza, scheduler or default-scheduler"},
      {"--profile scheduler", "unknown flag --profile"},
      {"--policy /nonexistent/policy.yaml", "--policy: cannot read /nonexistent/policy.yaml"},
      {absl::StrCat("--policy ", SourcePathArg("cmd/demo/cluster.yaml")), "--policy: "},
      {"--cluster-file /nonexistent/cluster.yaml", "--cluster-file: cannot read"},
      {"scheduler", "unexpected argument \"scheduler\""},
      {"--policy ''", "--policy takes a file, not \"\""},
      {"--cluster-file=", "--cluster-file takes a file, not \"\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.args);
    testing_support::CommandResult r = SchedulerConfig(row.args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(absl::StrContains(r.err, row.names)) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
