// topology/device_report: when the node agent's report on a pod is believed, what it says of
// each device (its physical GPU, a MIG GPU-instance ID), which shared GPU a replica's memory
// counts on (the report's over bind's promise), why a report disagrees, and that a snapshot
// built from the facts counts shared memory on the reported GPU.
#include "topology/device_report.h"

#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"
#include "topology/snapshot.h"

namespace topology {
namespace {

const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kGpu1 = "GPU-aaaaaaaa-0000-4000-8000-000000000001";
const std::string kMigGpu = "GPU-bbbbbbbb-0000-4000-8000-000000000000";
const std::string kMig = "MIG-cccccccc-0000-4000-8000-000000000000";

NodeFacts ReportedNode() {
  NodeFacts node;
  node.name = "n1";
  node.reported_gpus = NodeGpus{{{kMigGpu, {kMig}}, {kGpu0, {}}, {kGpu1, {}}}, {}};
  return node;
}

PodHold Hold(const std::string& ns, const std::string& resource, const std::string& id,
             std::optional<int> promised = std::nullopt, const std::string& node = "n1") {
  PodHold hold;
  hold.namespace_name = ns;
  hold.name = "p";
  hold.demand.devices.Set(resource, 1);
  hold.gpu_index = promised;
  hold.device_report = DeviceReport{node, {{"main", {{resource, {id}}}}}};
  return hold;
}

TEST(DeviceReportTest, BelievedOnlyFromThePodsNodeInAGuardedNamespace) {
  NodeFacts node = ReportedNode();
  EXPECT_NE(BelievedReport(Hold("acme", "nvidia.com/gpu", kGpu0), node), nullptr);
  EXPECT_EQ(BelievedReport(Hold("acme", "nvidia.com/gpu", kGpu0, {}, "n2"), node), nullptr);
  EXPECT_EQ(BelievedReport(Hold("kube-system", "nvidia.com/gpu", kGpu0), node), nullptr);
  PodHold none = Hold("acme", "nvidia.com/gpu", kGpu0);
  none.device_report.reset();
  EXPECT_EQ(BelievedReport(none, node), nullptr);
}

TEST(DeviceReportTest, EachDeviceWithItsPhysicalGpu) {
  NodeFacts node = ReportedNode();
  const std::string old_mig = "MIG-" + kMigGpu + "/9/0";
  DeviceReport report{"n1",
                      {{"init", {{"nvidia.com/gpu", {kGpu0}}}},
                       {"main",
                        {{"nvidia.com/gpu", {kGpu0}},
                         {"nvidia.com/mig-1g.10gb", {kMig, old_mig}},
                         {"nvidia.com/gpu.shared", {kGpu1 + "::3"}}}}}};
  std::vector<ReportedDevice> devices = ReportedDevices(report, node);
  ASSERT_EQ(devices.size(), 4u);  // the init container's GPU is the main container's
  EXPECT_EQ(devices[0].gpu, kGpu0);
  EXPECT_FALSE(devices[0].mig || devices[0].replica);
  EXPECT_EQ(devices[1].gpu, kMigGpu);  // from the node's list: the ID does not say
  EXPECT_TRUE(devices[1].mig);
  EXPECT_EQ(devices[1].mig_instance, "");
  EXPECT_EQ(devices[2].gpu, kMigGpu);
  EXPECT_EQ(devices[2].mig_instance, "9");
  EXPECT_EQ(devices[3].gpu, kGpu1);
  EXPECT_TRUE(devices[3].replica);
  node.reported_gpus.reset();
  EXPECT_EQ(ReportedDevices(report, node)[1].gpu, "");
}

TEST(DeviceReportTest, TheReportedGpuOverridesThePromise) {
  NodeFacts node = ReportedNode();
  // Shared GPUs are numbered among the GPUs without MIG instances: kGpu1 is shared GPU 1.
  PodHold hold = Hold("acme", "nvidia.com/gpu.shared", kGpu1 + "::0", /*promised=*/0);
  EXPECT_EQ(ReportedSharedGpu(hold, node), 1);
  EXPECT_EQ(HeldSharedGpu(hold, node), 1);
  EXPECT_EQ(ReportDisagreement(hold, node),
            "bind chose shared GPU 0, the kubelet gave a replica of shared GPU 1");
  // Unknown GPU, whole GPU, no report: the promise stands.
  EXPECT_EQ(HeldSharedGpu(Hold("acme", "nvidia.com/gpu.shared", "GPU-other::0", 0), node), 0);
  EXPECT_EQ(HeldSharedGpu(Hold("acme", "nvidia.com/gpu", kGpu1, 0), node), 0);
  node.reported_gpus.reset();
  EXPECT_EQ(HeldSharedGpu(hold, node), 0);
}

TEST(DeviceReportTest, DisagreementsNameWhatDiffers) {
  NodeFacts node = ReportedNode();
  EXPECT_EQ(ReportDisagreement(Hold("acme", "nvidia.com/gpu.shared", kGpu0 + "::1", 0), node), "");
  EXPECT_EQ(ReportDisagreement(Hold("acme", "nvidia.com/gpu", kGpu0, {}, "n2"), node),
            "its devices were reported by the node agent of \"n2\", but it is bound to \"n1\"");
  PodHold other = Hold("acme", "nvidia.com/mig-3g.40gb", kMig);
  other.device_report->containers[0].resources[0].resource = "nvidia.com/mig-1g.10gb";
  EXPECT_EQ(ReportDisagreement(other, node),
            "it asked for 0 nvidia.com/mig-1g.10gb, the kubelet gave 1");
  EXPECT_EQ(ReportDisagreement(Hold("kube-system", "nvidia.com/gpu", kGpu0, {}, "n2"), node), "");
}

TEST(DeviceReportTest, TheSnapshotCountsSharedMemoryOnTheReportedGpu) {
  Policy policy = testing_fleet::DemoLikePolicy();
  ClusterData data;
  NodeFacts node = ReportedNode();
  node.labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                 {"nvidia.com/gpu.count", "2"},
                 {"nvidia.com/gpu.memory", "81920"},
                 {"nvidia.com/gpu.replicas", "4"},
                 {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  node.allocatable = {{"nvidia.com/gpu.shared", Quantity::FromUnits(8)}};
  node.reported_gpus = NodeGpus{{{kGpu0, {}}, {kGpu1, {}}}, {}};
  data.nodes.push_back(node);
  PodFacts pod;
  pod.namespace_name = "acme";
  pod.name = "p";
  pod.uid = "u";
  pod.node_name = "n1";
  pod.phase = "Running";
  pod.annotations = {{"gpu-tenancy.io/gpu-memory", "40Gi"}, {"gpu-tenancy.io/gpu-index", "0"}};
  ContainerFacts c;
  c.name = "main";
  c.limits = {{"nvidia.com/gpu.shared", Quantity::FromUnits(1)}};
  pod.containers.push_back(c);
  pod.device_report = DeviceReport{"n1", {{"main", {{"nvidia.com/gpu.shared", {kGpu1 + "::2"}}}}}};
  data.pods.push_back(pod);
  ClusterSnapshot snapshot = BuildSnapshot(data, common::BuiltinCatalog(), policy);
  const NodeState* state = snapshot.FindNode("n1");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->occupancy.shared_memory_by_gpu, (std::map<int, int64_t>{{1, 40960}}));
}

}  // namespace
}  // namespace topology
