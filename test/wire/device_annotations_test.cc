// wire/device_annotations: the node agent's pod and node annotations round-trip byte for byte
// (so an unchanged assignment is never written again), keep the kubelet's order, and a value a
// tenant could have typed by hand is refused naming the field.
#include "wire/device_annotations.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace wire {
namespace {

TEST(DeviceAnnotationsTest, APodsDevicesRoundTrip) {
  PodDevicesAnnotation value{
      "gpu-a",
      {{"main", {{"nvidia.com/gpu", {"GPU-b", "GPU-a"}}, {"nvidia.com/mig-1g.10gb", {"MIG-x"}}}},
       {"sidecar", {{"nvidia.com/gpu.shared", {"GPU-c::3"}}}}}};
  const std::string json = EncodePodDevices(value);
  EXPECT_EQ(json, R"({"node":"gpu-a","containers":[{"name":"main","devices":{"nvidia.com/gpu":)"
                  R"(["GPU-b","GPU-a"],"nvidia.com/mig-1g.10gb":["MIG-x"]}},{"name":"sidecar",)"
                  R"("devices":{"nvidia.com/gpu.shared":["GPU-c::3"]}}]})");
  absl::StatusOr<PodDevicesAnnotation> back = DecodePodDevices(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, value);
  EXPECT_EQ(EncodePodDevices(*back), json);
}

TEST(DeviceAnnotationsTest, ANodesGpusRoundTrip) {
  topology::NodeGpus value{
      {{"GPU-a", {"MIG-GPU-a/1/0", "MIG-GPU-a/2/0"}}, {"GPU-b", {}}},
      {"MIG-x"},
      {{"uid-1", {{"nvidia.com/gpu", {"GPU-b"}}}},
       {"uid-2",
        {{"nvidia.com/gpu.shared", {"GPU-a::0", "GPU-a::3"}}, {"nvidia.com/mig", {"MIG-x"}}}}}};
  const std::string json = EncodeNodeGpus(value);
  EXPECT_EQ(
      json,
      R"({"gpus":[{"id":"GPU-a","mig":["MIG-GPU-a/1/0","MIG-GPU-a/2/0"]},{"id":"GPU-b"}],)"
      R"("unplacedMig":["MIG-x"],"pods":{"uid-1":{"nvidia.com/gpu":["GPU-b"]},)"
      R"("uid-2":{"nvidia.com/gpu.shared":["GPU-a::0","GPU-a::3"],"nvidia.com/mig":["MIG-x"]}}})");
  absl::StatusOr<topology::NodeGpus> back = DecodeNodeGpus(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, value);
  EXPECT_EQ(EncodeNodeGpus(topology::NodeGpus{}), R"({"gpus":[]})");
}

// The agent's record is compared with what a pod's report amounts to (topology::RecordOf): read
// back from any order, it comes out by UID, resources by name, IDs sorted.
TEST(DeviceAnnotationsTest, ANodesRecordReadsInTheOrderItIsCompared) {
  absl::StatusOr<topology::NodeGpus> got =
      DecodeNodeGpus(R"({"gpus":[],"pods":{"b":{"nvidia.com/gpu":["GPU-2","GPU-1"]},)"
                     R"("a":{"nvidia.com/z":["z"],"nvidia.com/gpu":["GPU-3"]}}})");
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<topology::PodDeviceRecord> want = {
      {"a", {{"nvidia.com/gpu", {"GPU-3"}}, {"nvidia.com/z", {"z"}}}},
      {"b", {{"nvidia.com/gpu", {"GPU-1", "GPU-2"}}}}};
  EXPECT_EQ(got->pods, want);
  ASSERT_NE(got->FindPod("b"), nullptr);
  EXPECT_EQ(got->FindPod("b")->resources,
            topology::RecordOf({{"main", {{"nvidia.com/gpu", {"GPU-2"}}}},
                                {"side", {{"nvidia.com/gpu", {"GPU-1", "GPU-2"}}}}}));
  EXPECT_EQ(got->FindPod("c"), nullptr);
}

TEST(DeviceAnnotationsTest, MalformedValuesAreRefusedNamingTheField) {
  struct Row {
    std::string json;
    std::string error;
  };
  std::vector<Row> pods = {
      {"GPU-a", "gpu-tenancy.io/devices: "},
      {"[]", "gpu-tenancy.io/devices: must be a JSON object"},
      {R"({"containers":[]})", "gpu-tenancy.io/devices: node must be a string"},
      {R"({"node":"a"})", "gpu-tenancy.io/devices: containers must be a list"},
      {R"({"node":"a","containers":[{"devices":{}}]})",
       "gpu-tenancy.io/devices: containers[0].name must be a string"},
      {R"({"node":"a","containers":[{"name":"c"}]})",
       "gpu-tenancy.io/devices: containers[0].devices must be an object"},
      {R"({"node":"a","containers":[{"name":"c","devices":{"nvidia.com/gpu":"GPU-a"}}]})",
       "gpu-tenancy.io/devices: containers[0].devices[\"nvidia.com/gpu\"] must be a list of IDs"},
      {R"({"node":"a","containers":[{"name":"c","devices":{"nvidia.com/gpu":[1]}}]})",
       "gpu-tenancy.io/devices: containers[0].devices[\"nvidia.com/gpu\"] must hold strings "
       "only"},
  };
  for (const Row& row : pods) {
    SCOPED_TRACE(row.json);
    absl::StatusOr<PodDevicesAnnotation> got = DecodePodDevices(row.json);
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(absl::StartsWith(got.status().message(), row.error)) << got.status();
  }
  std::vector<Row> nodes = {
      {R"({})", "gpu-tenancy.io/gpu-devices: gpus must be a list"},
      {R"({"gpus":[{"mig":[]}]})", "gpu-tenancy.io/gpu-devices: gpus[0].id must be a string"},
      {R"({"gpus":[{"id":"GPU-a","mig":"MIG-x"}]})",
       "gpu-tenancy.io/gpu-devices: gpus[0].mig must be a list of IDs"},
      {R"({"gpus":[],"unplacedMig":[true]})",
       "gpu-tenancy.io/gpu-devices: unplacedMig must hold strings only"},
      {R"({"gpus":[],"pods":[]})", "gpu-tenancy.io/gpu-devices: pods must be an object"},
      {R"({"gpus":[],"pods":{"u":["GPU-a"]}})",
       "gpu-tenancy.io/gpu-devices: pods[\"u\"] must be an object"},
      {R"({"gpus":[],"pods":{"u":{"nvidia.com/gpu":"GPU-a"}}})",
       "gpu-tenancy.io/gpu-devices: pods[\"u\"][\"nvidia.com/gpu\"] must be a list of IDs"},
  };
  for (const Row& row : nodes) {
    SCOPED_TRACE(row.json);
    absl::StatusOr<topology::NodeGpus> got = DecodeNodeGpus(row.json);
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(absl::StartsWith(got.status().message(), row.error)) << got.status();
  }
}

}  // namespace
}  // namespace wire
