// agent/annotation_plan: one round's writes. A GPU pod the kubelet served and kube-apiserver
// binds here gets its devices (NVIDIA resources only); an annotation already right, a pod
// without GPUs and a pod not bound here get nothing; a second round over what the first wrote
// plans nothing; the Node's GPUs and the agent's record of its reports are written when they
// change.
#include "agent/annotation_plan.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "wire/device_annotations.h"

namespace agent {
namespace {

const std::vector<topology::PodDevices> kKubelet = {
    {"acme",
     "llm",
     {{"server", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}, {"example.com/nic", {"eth1"}}}}}},
    {"research", "train", {{"main", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}}}},
    {"research", "notebook", {{"main", {{"nvidia.com/gpu.shared", {"GPU-c::3"}}}}}},
    {"web", "frontend", {{"nginx", {{"example.com/nic", {"eth2"}}}}}},
    {"acme", "not-bound-yet", {{"c", {{"nvidia.com/gpu", {"GPU-d"}}}}}},
};

std::string Devices(std::vector<topology::ContainerDevices> containers) {
  return wire::EncodePodDevices({"gpu-a", std::move(containers)});
}

TEST(PlanPodAnnotationsTest, WritesWhatIsMissingOrWrongAndNothingElse) {
  std::vector<BoundPod> bound = {
      {"acme", "llm", std::nullopt, "uid-llm"},
      {"research", "train", Devices({{"main", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}}}),
       "uid-train"},
      {"research", "notebook", std::string("{\"forged\":true}"), "uid-notebook"},
      {"web", "frontend", std::nullopt, "uid-frontend"},
  };
  std::vector<PodAnnotation> plan = PlanPodAnnotations("gpu-a", kKubelet, bound);
  std::vector<PodAnnotation> want = {
      {"acme", "llm", Devices({{"server", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}}}})},
      {"research", "notebook", Devices({{"main", {{"nvidia.com/gpu.shared", {"GPU-c::3"}}}}})},
  };
  EXPECT_EQ(plan, want);
  // What the round wrote, read back: the next round plans nothing.
  for (const PodAnnotation& p : plan) {
    for (BoundPod& b : bound) {
      if (b.namespace_name == p.namespace_name && b.name == p.name) b.devices = p.value;
    }
  }
  EXPECT_TRUE(PlanPodAnnotations("gpu-a", kKubelet, bound).empty());
  // Pods the kubelet no longer lists lose their annotation; those never annotated are left.
  std::vector<PodAnnotation> stale = {{"acme", "llm", std::nullopt},
                                      {"research", "train", std::nullopt},
                                      {"research", "notebook", std::nullopt}};
  EXPECT_EQ(PlanPodAnnotations("gpu-a", {}, bound), stale);
}

// The agent's record of its reports, for its Node: by UID, the same pods and devices the pods'
// annotations get (NVIDIA resources only), and none for a pod not bound here or without GPUs.
TEST(PlanPodRecordsTest, RecordsWhatThePodsAreAnnotatedWith) {
  std::vector<BoundPod> bound = {
      {"acme", "llm", std::nullopt, "uid-llm"},
      {"research", "train", std::nullopt, "uid-train"},
      {"research", "notebook", std::nullopt, "uid-notebook"},
      {"web", "frontend", std::nullopt, "uid-frontend"},
  };
  std::vector<topology::PodDeviceRecord> want = {
      {"uid-llm", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}}},
      {"uid-notebook", {{"nvidia.com/gpu.shared", {"GPU-c::3"}}}},
      {"uid-train", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}},
  };
  std::vector<topology::PodDeviceRecord> records = PlanPodRecords(kKubelet, bound);
  EXPECT_EQ(records, want);
  for (const PodAnnotation& p : PlanPodAnnotations("gpu-a", kKubelet, bound)) {
    SCOPED_TRACE(p.name);
    absl::StatusOr<wire::PodDevicesAnnotation> written = wire::DecodePodDevices(*p.value);
    ASSERT_TRUE(written.ok()) << written.status();
    const BoundPod* pod = nullptr;
    for (const BoundPod& b : bound) {
      if (b.name == p.name) pod = &b;
    }
    ASSERT_NE(pod, nullptr);
    const topology::PodDeviceRecord* record = nullptr;
    for (const topology::PodDeviceRecord& r : records) {
      if (r.uid == pod->uid) record = &r;
    }
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(record->resources, topology::RecordOf(written->containers));
  }
}

TEST(PlanNodeAnnotationTest, TheNodesGpusOnceThenNothing) {
  std::vector<topology::ResourceDevices> allocatable = {
      {"nvidia.com/gpu.shared", {"GPU-a::0", "GPU-a::1", "GPU-b::0", "GPU-b::1"}},
      {"nvidia.com/mig-1g.10gb", {"MIG-GPU-c/7/0"}},
      {"example.com/nic", {"eth1"}},
  };
  std::optional<std::string> value = PlanNodeAnnotation(allocatable, {}, std::nullopt);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value,
            R"({"gpus":[{"id":"GPU-a"},{"id":"GPU-b"},{"id":"GPU-c","mig":["MIG-GPU-c/7/0"]}]})");
  EXPECT_FALSE(PlanNodeAnnotation(allocatable, {}, value).has_value());
  EXPECT_EQ(PlanNodeAnnotation({}, {}, value), std::optional<std::string>(R"({"gpus":[]})"));
  // A new report changes the record, so the Node is written again.
  std::vector<topology::PodDeviceRecord> records = {
      {"u1", {{"nvidia.com/gpu.shared", {"GPU-a::0"}}}}};
  std::optional<std::string> recorded = PlanNodeAnnotation(allocatable, records, value);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(*recorded,
            R"({"gpus":[{"id":"GPU-a"},{"id":"GPU-b"},{"id":"GPU-c","mig":["MIG-GPU-c/7/0"]}],)"
            R"("pods":{"u1":{"nvidia.com/gpu.shared":["GPU-a::0"]}}})");
  EXPECT_FALSE(PlanNodeAnnotation(allocatable, records, recorded).has_value());
}

}  // namespace
}  // namespace agent
