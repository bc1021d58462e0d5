// extender/inventory: Prometheus label escaping and the inventory gauges (per node and per pool
// allocatable and free units, shared GPU memory, nodes per pool, nodes mid-MIG change) rendered
// from a small fleet built in the test.
#include "extender/inventory.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/config_loader.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

namespace extender {
namespace {

constexpr char kH100[] =
    "nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.memory: '81559'";
constexpr char kMig[] =
    "nvidia.com/gpu.count: '1', nvidia.com/mig.capable: 'true', nvidia.com/mig.strategy: mixed,"
    " nvidia.com/mig-1g.10gb.count: '4', nvidia.com/mig-1g.10gb.memory: '9984',"
    " nvidia.com/mig-3g.40gb.count: '1', nvidia.com/mig-3g.40gb.memory: '40448'";

// A Node as a YAML flow map: `labels` and `allocatable` are flow-map bodies.
std::string Node(const std::string& name, const std::string& labels,
                 const std::string& allocatable) {
  return absl::StrCat("- {kind: Node, metadata: {name: ", name, ", labels: {", labels,
                      "}}, status: {allocatable: {cpu: '8', ", allocatable, "}}}\n");
}

std::string Pod(const std::string& node, const std::string& name, const std::string& limits,
                const std::string& annotations = "") {
  return absl::StrCat("- {kind: Pod, metadata: {name: ", name, ", namespace: ns, uid: u-", name,
                      ", annotations: {", annotations, "}}, spec: {nodeName: ", node,
                      ", containers: [{name: c, resources: {limits: {", limits,
                      "}}}]}, status: {phase: Running}}\n");
}

class InventoryTest : public ::testing::Test {
 protected:
  std::string Render(const std::string& items) {
    absl::StatusOr<std::vector<rapidjson::Document>> docs =
        common::YamlDocumentsToJson(absl::StrCat("kind: List\nitems:\n", items));
    EXPECT_TRUE(docs.ok() && docs->size() == 1) << docs.status();
    if (!docs.ok() || docs->size() != 1) return "";
    absl::StatusOr<topology::ClusterData> data = wire::ParseClusterList(docs->front());
    EXPECT_TRUE(data.ok()) << data.status();
    if (!data.ok()) return "";
    state_.policy = std::make_shared<const topology::Policy>(topology::Policy::AllowAll());
    state_.catalog = &common::BuiltinCatalog();
    state_.snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*data, *state_.catalog, *state_.policy));
    std::string out = "# before\n";
    common::MetricsText text(out);
    AppendInventoryMetrics(state_, text);
    EXPECT_TRUE(absl::StartsWith(out, "# before\n")) << "appends, never replaces";
    return out.substr(9);
  }

  // The sample lines (no # lines) of one metric family, in order.
  static std::vector<std::string> Samples(const std::string& text, absl::string_view name) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, absl::StrCat(name, "{")) ||
          absl::StartsWith(line, absl::StrCat(name, " "))) {
        out.emplace_back(line);
      }
    }
    return out;
  }

  topology::ModelState state_;
};

TEST_F(InventoryTest, EmptyFleetStillHasEveryFamily) {
  const std::string out = Render(Node("cpu", "kubernetes.io/os: linux", "memory: 1Gi"));
  for (const char* name :
       {"gpu_tenancy_node_resource_allocatable", "gpu_tenancy_node_resource_free",
        "gpu_tenancy_pool_resource_free", "gpu_tenancy_node_shared_memory_free_mib",
        "gpu_tenancy_pool_nodes", "gpu_tenancy_nodes_mig_unsettled"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(absl::StrContains(out, absl::StrCat("# HELP ", name, " ")));
    EXPECT_TRUE(absl::StrContains(out, absl::StrCat("# TYPE ", name, " gauge\n")));
  }
  EXPECT_TRUE(Samples(out, "gpu_tenancy_node_resource_allocatable").empty());
  EXPECT_TRUE(Samples(out, "gpu_tenancy_pool_nodes").empty());
  EXPECT_EQ(Samples(out, "gpu_tenancy_nodes_mig_unsettled"),
            std::vector<std::string>{"gpu_tenancy_nodes_mig_unsettled 0"});
  EXPECT_FALSE(absl::StrContains(out, "cpu\""));
}

TEST_F(InventoryTest, MigNodesPerNodeAndPerPool) {
  const std::string mig_labels = absl::StrCat(kH100, ", ", kMig, ", gpu-tenancy.io/pool: gpu-mig");
  const std::string out =
      Render(Node("mig-b", mig_labels, "nvidia.com/mig-1g.10gb: '4', nvidia.com/mig-3g.40gb: '1'") +
             Node("mig-a", absl::StrCat(mig_labels, ", nvidia.com/mig.config.state: pending"),
                  "nvidia.com/mig-1g.10gb: '4', nvidia.com/mig-3g.40gb: '1'") +
             Pod("mig-a", "one", "nvidia.com/mig-1g.10gb: '3'") +
             Pod("mig-b", "two", "nvidia.com/mig-1g.10gb: '1'") +
             Pod("mig-b", "three", "nvidia.com/mig-3g.40gb: '1'"));
  const std::string a = "node=\"mig-a\",pool=\"gpu-mig\",resource=\"nvidia.com/mig-";
  const std::string b = "node=\"mig-b\",pool=\"gpu-mig\",resource=\"nvidia.com/mig-";
  EXPECT_EQ(Samples(out, "gpu_tenancy_node_resource_allocatable"),
            (std::vector<std::string>{
                "gpu_tenancy_node_resource_allocatable{" + a + "1g.10gb\",kind=\"mig\"} 4",
                "gpu_tenancy_node_resource_allocatable{" + a + "3g.40gb\",kind=\"mig\"} 1",
                "gpu_tenancy_node_resource_allocatable{" + b + "1g.10gb\",kind=\"mig\"} 4",
                "gpu_tenancy_node_resource_allocatable{" + b + "3g.40gb\",kind=\"mig\"} 1",
            }));
  EXPECT_EQ(Samples(out, "gpu_tenancy_node_resource_free"),
            (std::vector<std::string>{
                "gpu_tenancy_node_resource_free{" + a + "1g.10gb\",kind=\"mig\"} 1",
                "gpu_tenancy_node_resource_free{" + a + "3g.40gb\",kind=\"mig\"} 1",
                "gpu_tenancy_node_resource_free{" + b + "1g.10gb\",kind=\"mig\"} 3",
                "gpu_tenancy_node_resource_free{" + b + "3g.40gb\",kind=\"mig\"} 0",
            }));
  EXPECT_EQ(Samples(out, "gpu_tenancy_pool_resource_free"),
            (std::vector<std::string>{
                "gpu_tenancy_pool_resource_free{pool=\"gpu-mig\",resource=\"nvidia.com/"
                "mig-1g.10gb\",kind=\"mig\"} 4",
                "gpu_tenancy_pool_resource_free{pool=\"gpu-mig\",resource=\"nvidia.com/"
                "mig-3g.40gb\",kind=\"mig\"} 1",
            }));
  EXPECT_EQ(Samples(out, "gpu_tenancy_pool_nodes"),
            std::vector<std::string>{"gpu_tenancy_pool_nodes{pool=\"gpu-mig\"} 2"});
  EXPECT_EQ(Samples(out, "gpu_tenancy_nodes_mig_unsettled"),
            std::vector<std::string>{"gpu_tenancy_nodes_mig_unsettled 1"});
  EXPECT_TRUE(Samples(out, "gpu_tenancy_node_shared_memory_free_mib").empty());
}

TEST_F(InventoryTest, SharedAndWholeGpus) {
  const std::string ts_labels =
      "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.memory: '40960',"
      " nvidia.com/gpu.count: '2', nvidia.com/gpu.replicas: '4',"
      " nvidia.com/gpu.sharing-strategy: time-slicing, gpu-tenancy.io/pool: gpu-ts";
  const std::string out = Render(
      Node("ts", ts_labels, "nvidia.com/gpu.shared: '8'") +
      Node("whole", absl::StrCat(kH100, ", nvidia.com/gpu.count: '2'"), "nvidia.com/gpu: '2'") +
      Pod("ts", "s1", "nvidia.com/gpu.shared: '1'", "gpu-tenancy.io/gpu-memory: 10Gi") +
      Pod("ts", "s2", "nvidia.com/gpu.shared: '2'") + Pod("whole", "w1", "nvidia.com/gpu: '2'"));
  EXPECT_EQ(Samples(out, "gpu_tenancy_node_resource_free"),
            (std::vector<std::string>{
                "gpu_tenancy_node_resource_free{node=\"ts\",pool=\"gpu-ts\",resource=\"nvidia.com/"
                "gpu.shared\",kind=\"replica\"} 5",
                "gpu_tenancy_node_resource_free{node=\"whole\",pool=\"exclusive\",resource="
                "\"nvidia.com/gpu\",kind=\"gpu\"} 0",
            }));
  // Two physical GPUs (8 replicas / 4) of 40960 MiB, 10 GiB promised to s1.
  EXPECT_EQ(Samples(out, "gpu_tenancy_node_shared_memory_free_mib"),
            std::vector<std::string>{
                "gpu_tenancy_node_shared_memory_free_mib{node=\"ts\",pool=\"gpu-ts\"} 71680"});
  EXPECT_EQ(Samples(out, "gpu_tenancy_pool_nodes"),
            (std::vector<std::string>{"gpu_tenancy_pool_nodes{pool=\"exclusive\"} 1",
                                      "gpu_tenancy_pool_nodes{pool=\"gpu-ts\"} 1"}));
}

TEST_F(InventoryTest, LabelValuesAreEscaped) {
  const std::string out = Render(Node("whole",
                                      absl::StrCat(kH100,
                                                   ", nvidia.com/gpu.count: '1',"
                                                   " gpu-tenancy.io/pool: 'a\"b\\c'"),
                                      "nvidia.com/gpu: '1'"));
  EXPECT_EQ(Samples(out, "gpu_tenancy_pool_nodes"),
            std::vector<std::string>{"gpu_tenancy_pool_nodes{pool=\"a\\\"b\\\\c\"} 1"})
      << out;
}

}  // namespace
}  // namespace extender
