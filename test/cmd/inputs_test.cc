// cmd/inputs: which cluster and policy a subcommand works on. A file named by a flag wins over
// --demo, which wins over the default (allow-all for the policy, an error for the cluster); a
// file that cannot be read or parsed is an error naming the file; the embedded demo is
// cmd/demo byte for byte.
#include "cmd/inputs.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace cmd {
namespace {

InputOptions Flags(const std::vector<std::string>& args) {
  const common::FlagTable table{
      {"test"}, "", {{"policy", "FILE", ""}, {"cluster-file", "FILE", ""}, {"demo", "", ""}}};
  absl::StatusOr<ParsedFlags> flags = table.Parse(args);
  EXPECT_TRUE(flags.ok()) << flags.status();
  absl::StatusOr<InputOptions> inputs = ParseInputOptions(flags.ok() ? *flags : ParsedFlags{});
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *inputs : InputOptions{};
}

std::string Source(const std::string& relative) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Write(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/inputs_test_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::string> TenantNames(const topology::Policy& policy) {
  std::vector<std::string> out;
  for (const topology::Tenant& t : policy.tenants) out.push_back(t.name);
  return out;
}

constexpr char kOneTenant[] =
    "tiers: [{name: gold, modes: [exclusive]}]\n"
    "tenants: [{name: solo, tier: gold, namespaces: [solo]}]\n";

TEST(DemoTextTest, IsTheDemoDirectoryAsEmbedded) {
  EXPECT_EQ(DemoClusterText(), Source("cmd/demo/cluster.yaml"));
  EXPECT_EQ(DemoPolicyText(), Source("cmd/demo/policy.yaml"));
}

TEST(ReadPolicyTest, FileThenDemoThenAllowAll) {
  const std::string file = Write("one-tenant.yaml", kOneTenant);
  struct Row {
    std::string name;
    std::vector<std::string> args;
    std::vector<std::string> tenants;
    std::vector<std::string> tiers;
  };
  const std::vector<Row> rows = {
      {"nothing given: allow-all", {}, {}, {"default"}},
      {"--demo",
       {"--demo"},
       {"acme", "bank", "research", "gpu-platform"},
       {"untrusted", "trusted", "platform"}},
      {"--policy wins over --demo", {"--demo", "--policy", file}, {"solo"}, {"gold"}},
      {"the last --policy wins",
       {"--policy", "/nonexistent/p.yaml", "--policy", file},
       {"solo"},
       {"gold"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<topology::Policy> policy = ReadPolicy(Flags(row.args));
    ASSERT_TRUE(policy.ok()) << policy.status();
    EXPECT_EQ(TenantNames(*policy), row.tenants);
    std::vector<std::string> tiers;
    for (const topology::Tier& t : policy->tiers) tiers.push_back(t.name);
    EXPECT_EQ(tiers, row.tiers);
  }
  absl::StatusOr<topology::Policy> allow_all = ReadPolicy(Flags({}));
  ASSERT_TRUE(allow_all.ok());
  EXPECT_EQ(allow_all->unknown_tenant_tier, std::optional<std::string>("default"))
      << "allow-all admits every namespace";
  absl::StatusOr<topology::Policy> demo = ReadPolicy(Flags({"--demo"}));
  ASSERT_TRUE(demo.ok());
  EXPECT_EQ(demo->unknown_tenant_tier, std::nullopt) << "the demo denies unknown tenants";
}

TEST(ReadPolicyTest, AFileThatCannotBeReadOrParsedIsAnErrorNamingIt) {
  const std::string missing = ::testing::TempDir() + "/inputs_test_missing-policy.yaml";
  absl::StatusOr<topology::Policy> policy = ReadPolicy(Flags({"--policy", missing}));
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(policy.status().message(), "cannot read " + missing);

  struct Row {
    std::string name;
    std::string text;
    std::string message_after_path;
  };
  const std::vector<Row> rows = {
      {"not a mapping", "- a\n- b\n", "policy: expected a mapping"},
      {"unknown mode", "tiers: [{name: t, modes: [sharing]}]\n",
       "tiers[0].modes: unknown mode \"sharing\" (use exclusive, mig, mig-shared, mps, "
       "timeslice)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const std::string path = Write("bad-policy.yaml", row.text);
    absl::StatusOr<topology::Policy> bad = ReadPolicy(Flags({"--demo", "--policy", path}));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(bad.status().message(), path + ": " + row.message_after_path);
  }
}

TEST(ReadClusterTest, FileThenDemoElseAnError) {
  const std::string yaml = Write("cluster.yaml",
                                 "kind: List\nitems:\n"
                                 "- {kind: Node, metadata: {name: only-node}}\n"
                                 "- {kind: Namespace, metadata: {name: ns, labels: {a: b}}}\n");
  const std::string json = Write("cluster.json",
                                 R"({"kind":"NodeList","items":[{"metadata":{"name":"j1"}},
                                     {"metadata":{"name":"j2"}}]})");
  struct Row {
    std::string name;
    std::vector<std::string> args;
    size_t nodes, pods;
  };
  const std::vector<Row> rows = {
      {"--demo", {"--demo"}, 7, 9},
      {"a YAML file wins over --demo", {"--demo", "--cluster-file", yaml}, 1, 0},
      {"kubectl's JSON list", {"--cluster-file", json}, 2, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<topology::ClusterData> data = ReadCluster(Flags(row.args));
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(data->nodes.size(), row.nodes);
    EXPECT_EQ(data->pods.size(), row.pods);
  }
  absl::StatusOr<topology::ClusterData> from_yaml = ReadCluster(Flags({"--cluster-file", yaml}));
  ASSERT_TRUE(from_yaml.ok());
  EXPECT_EQ(from_yaml->nodes[0].name, "only-node");
  EXPECT_EQ(from_yaml->namespace_labels.at("ns"), (topology::Labels{{"a", "b"}}));

  absl::StatusOr<topology::ClusterData> none = ReadCluster(Flags({}));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "give --cluster-file FILE (or --demo)");
}

TEST(ReadClusterTest, AFileThatCannotBeReadOrParsedIsAnErrorNamingIt) {
  const std::string missing = ::testing::TempDir() + "/inputs_test_missing-cluster.yaml";
  absl::StatusOr<topology::ClusterData> data =
      ReadCluster(Flags({"--demo", "--cluster-file", missing}));
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(data.status().message(), "cannot read " + missing);

  struct Row {
    std::string name;
    std::string text;
    std::string message_after_path;
  };
  const std::vector<Row> rows = {
      {"a list of nothing", "kind: List\n",
       "cluster file: no items (expected kubectl's List output)"},
      {"not a List object", "[1, 2]", "cluster file: expected a List object"},
      {"a Node without a name", "kind: List\nitems: [{kind: Node, metadata: {}}]\n",
       "items[0].metadata.name: missing"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const std::string path = Write("bad-cluster.yaml", row.text);
    absl::StatusOr<topology::ClusterData> bad = ReadCluster(Flags({"--cluster-file", path}));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(bad.status().message(), path + ": " + row.message_after_path);
  }
  absl::StatusOr<topology::ClusterData> junk =
      ReadCluster(Flags({"--cluster-file", Write("junk.json", "{\"kind\":")}));
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(junk.status().message(), "inputs_test_junk.json: invalid JSON"))
      << junk.status();
}

}  // namespace
}  // namespace cmd
