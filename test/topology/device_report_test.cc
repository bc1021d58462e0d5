// topology/device_report: a report is believed only as the node agent of the pod's node recorded
// it on its Node, whatever the namespace; what it says of each device (its physical GPU, a MIG
// GPU-instance ID), which shared GPU a replica's memory counts on (the report's over bind's
// promise), why a report disagrees or is not believed, and that a snapshot built from the facts
// counts shared memory on the reported GPU, and a forged report changes nothing.
#include "topology/device_report.h"

#include <algorithm>
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
  node.reported_gpus = NodeGpus{{{kMigGpu, {kMig}}, {kGpu0, {}}, {kGpu1, {}}}, {}, {}};
  return node;
}

PodHold Hold(const std::string& ns, const std::string& resource, const std::string& id,
             std::optional<int> promised = std::nullopt, const std::string& node = "n1") {
  PodHold hold;
  hold.uid = "uid-" + ns;
  hold.namespace_name = ns;
  hold.name = "p";
  hold.demand.devices.Set(resource, 1);
  hold.gpu_index = promised;
  hold.device_report = DeviceReport{node, {{"main", {{resource, {id}}}}}};
  return hold;
}

// The node's agent recorded `hold`'s report, as it does when it writes one.
NodeFacts Recording(NodeFacts node, const PodHold& hold) {
  node.reported_gpus->pods.push_back({hold.uid, RecordOf(hold.device_report->containers)});
  std::sort(node.reported_gpus->pods.begin(), node.reported_gpus->pods.end(),
            [](const auto& a, const auto& b) { return a.uid < b.uid; });
  return node;
}

TEST(DeviceReportTest, BelievedOnlyAsThePodsNodeAgentRecordedIt) {
  const PodHold acme = Hold("acme", "nvidia.com/gpu", kGpu0);
  const PodHold system = Hold("kube-system", "nvidia.com/gpu", kGpu1);
  const NodeFacts node = Recording(Recording(ReportedNode(), acme), system);
  ASSERT_TRUE(BelievedReport(acme, node).has_value());
  EXPECT_EQ(*BelievedReport(acme, node), *acme.device_report) << "the pod's own, with containers";
  EXPECT_EQ(ReportDoubt(acme, node), "");
  // Any namespace, the webhooks' exempt ones included: the record is the agent's word.
  EXPECT_TRUE(BelievedReport(system, node).has_value());

  // Written by someone else: no record for the pod...
  const PodHold forged = Hold("dev", "nvidia.com/gpu", kGpu0);
  EXPECT_FALSE(BelievedReport(forged, node).has_value());
  EXPECT_EQ(ReportDoubt(forged, node),
            "the node agent of \"n1\" recorded no report for this pod: it did not write it; it is "
            "not believed");
  // ... or over the agent's: the record stands.
  PodHold rewritten = acme;
  rewritten.device_report->containers[0].resources[0].ids = {kGpu1};
  ASSERT_TRUE(BelievedReport(rewritten, node).has_value());
  EXPECT_EQ(ReportedDevices(*BelievedReport(rewritten, node), node)[0].id, kGpu0);
  EXPECT_EQ(ReportDoubt(rewritten, node),
            "its gpu-tenancy.io/devices names other devices than the node agent of \"n1\" "
            "recorded for it: the agent did not write it; what the node agent of \"n1\" recorded "
            "is believed");
  PodHold elsewhere = acme;
  elsewhere.device_report->node = "n2";
  EXPECT_EQ(ReportedDevices(*BelievedReport(elsewhere, node), node)[0].id, kGpu0);
  // A pod whose own annotation is gone still has the agent's record.
  PodHold removed = acme;
  removed.device_report.reset();
  EXPECT_TRUE(BelievedReport(removed, node).has_value());
  EXPECT_EQ(ReportDoubt(removed, node), "");
  // A node whose agent says nothing confirms nothing.
  NodeFacts silent = node;
  silent.reported_gpus.reset();
  EXPECT_FALSE(BelievedReport(acme, silent).has_value());
  EXPECT_EQ(ReportDoubt(acme, silent),
            "node \"n1\" has no node agent report (gpu-tenancy.io/gpu-devices) to confirm it; it "
            "is not believed");
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
  // Shared GPUs are numbered among the GPUs without MIG instances: kGpu1 is shared GPU 1.
  PodHold hold = Hold("acme", "nvidia.com/gpu.shared", kGpu1 + "::0", /*promised=*/0);
  NodeFacts node = Recording(ReportedNode(), hold);
  EXPECT_EQ(ReportedSharedGpu(hold, node), 1);
  EXPECT_EQ(HeldSharedGpu(hold, node), 1);
  EXPECT_EQ(ReportDisagreement(hold, node),
            "bind chose shared GPU 0, the kubelet gave a replica of shared GPU 1");
  // Unknown GPU, whole GPU, no report: the promise stands.
  PodHold unknown = Hold("acme", "nvidia.com/gpu.shared", "GPU-other::0", 0);
  EXPECT_EQ(HeldSharedGpu(unknown, Recording(ReportedNode(), unknown)), 0);
  PodHold whole = Hold("acme", "nvidia.com/gpu", kGpu1, 0);
  EXPECT_EQ(HeldSharedGpu(whole, Recording(ReportedNode(), whole)), 0);
  // A report nobody recorded moves nothing, nor one written over the agent's.
  EXPECT_EQ(HeldSharedGpu(hold, ReportedNode()), 0);
  PodHold moved = hold;
  moved.device_report->containers[0].resources[0].ids = {kGpu0 + "::0"};
  EXPECT_EQ(HeldSharedGpu(moved, node), 1);
  node.reported_gpus.reset();
  EXPECT_EQ(HeldSharedGpu(hold, node), 0);
}

TEST(DeviceReportTest, DisagreementsNameWhatDiffers) {
  PodHold same = Hold("acme", "nvidia.com/gpu.shared", kGpu0 + "::1", 0);
  EXPECT_EQ(ReportDisagreement(same, Recording(ReportedNode(), same)), "");
  EXPECT_EQ(ReportDisagreement(Hold("acme", "nvidia.com/gpu", kGpu0, {}, "n2"), ReportedNode()),
            "its devices were reported by the node agent of \"n2\", but it is bound to \"n1\"; "
            "it is not believed");
  EXPECT_EQ(ReportDisagreement(Hold("kube-system", "nvidia.com/gpu", kGpu0), ReportedNode()),
            "the node agent of \"n1\" recorded no report for this pod: it did not write it; it is "
            "not believed");
  PodHold other = Hold("acme", "nvidia.com/mig-3g.40gb", kMig);
  other.device_report->containers[0].resources[0].resource = "nvidia.com/mig-1g.10gb";
  EXPECT_EQ(ReportDisagreement(other, Recording(ReportedNode(), other)),
            "it asked for 0 nvidia.com/mig-1g.10gb, the kubelet gave 1");
  // A forged report beside the agent's record: both said.
  PodHold forged = other;
  forged.device_report->containers[0].resources[0].ids = {"MIG-dddddddd"};
  EXPECT_EQ(ReportDisagreement(forged, Recording(ReportedNode(), other)),
            "its gpu-tenancy.io/devices names other devices than the node agent of \"n1\" "
            "recorded for it: the agent did not write it; what the node agent of \"n1\" recorded "
            "is believed; it asked for 0 nvidia.com/mig-1g.10gb, the kubelet gave 1");
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
  node.reported_gpus = NodeGpus{{{kGpu0, {}}, {kGpu1, {}}}, {}, {}};
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
  // Not recorded by the node's agent: the report is not its, and the promise (GPU 0) stands.
  ClusterSnapshot forged = BuildSnapshot(data, common::BuiltinCatalog(), policy);
  ASSERT_NE(forged.FindNode("n1"), nullptr);
  EXPECT_EQ(forged.FindNode("n1")->occupancy.shared_memory_by_gpu,
            (std::map<int, int64_t>{{0, 40960}}));
  data.nodes[0].reported_gpus->pods.push_back({"u", RecordOf(pod.device_report->containers)});
  ClusterSnapshot snapshot = BuildSnapshot(data, common::BuiltinCatalog(), policy);
  const NodeState* state = snapshot.FindNode("n1");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->occupancy.shared_memory_by_gpu, (std::map<int, int64_t>{{1, 40960}}));
}

}  // namespace
}  // namespace topology
