#include "agent/annotation_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/wellknown.h"
#include "wire/device_annotations.h"

namespace agent {

bool IsNvidiaResource(absl::string_view resource) {
  return absl::StartsWith(resource, topology::kNvidiaResourcePrefix);
}

namespace {

// The pod's containers with their NVIDIA devices only; containers without any are left out.
std::vector<topology::ContainerDevices> NvidiaDevices(const topology::PodDevices& pod) {
  std::vector<topology::ContainerDevices> out;
  for (const topology::ContainerDevices& c : pod.containers) {
    topology::ContainerDevices gpu{c.container, {}};
    for (const topology::ResourceDevices& r : c.resources) {
      if (IsNvidiaResource(r.resource)) gpu.resources.push_back(r);
    }
    if (!gpu.resources.empty()) out.push_back(std::move(gpu));
  }
  return out;
}

absl::flat_hash_map<std::string, const BoundPod*> ByKey(const std::vector<BoundPod>& bound) {
  absl::flat_hash_map<std::string, const BoundPod*> by_key;
  for (const BoundPod& p : bound) by_key[absl::StrCat(p.namespace_name, "/", p.name)] = &p;
  return by_key;
}

}  // namespace

std::vector<PodAnnotation> PlanPodAnnotations(absl::string_view node,
                                              const std::vector<topology::PodDevices>& kubelet,
                                              const std::vector<BoundPod>& bound) {
  absl::flat_hash_map<std::string, const BoundPod*> by_key = ByKey(bound);
  std::vector<PodAnnotation> out;
  absl::flat_hash_set<std::string> holding;  // namespace/name of pods the kubelet gave GPUs
  for (const topology::PodDevices& pod : kubelet) {
    wire::PodDevicesAnnotation want{std::string(node), NvidiaDevices(pod)};
    if (want.containers.empty()) continue;
    std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    holding.insert(key);
    auto it = by_key.find(key);
    if (it == by_key.end()) continue;
    std::string value = wire::EncodePodDevices(want);
    if (it->second->devices == value) continue;
    out.push_back({pod.namespace_name, pod.name, std::move(value)});
  }
  for (const BoundPod& p : bound) {
    if (p.devices && !holding.contains(absl::StrCat(p.namespace_name, "/", p.name))) {
      out.push_back({p.namespace_name, p.name, std::nullopt});
    }
  }
  return out;
}

std::vector<topology::PodDeviceRecord> PlanPodRecords(
    const std::vector<topology::PodDevices>& kubelet, const std::vector<BoundPod>& bound) {
  absl::flat_hash_map<std::string, const BoundPod*> by_key = ByKey(bound);
  std::vector<topology::PodDeviceRecord> out;
  for (const topology::PodDevices& pod : kubelet) {
    std::vector<topology::ContainerDevices> devices = NvidiaDevices(pod);
    if (devices.empty()) continue;
    auto it = by_key.find(absl::StrCat(pod.namespace_name, "/", pod.name));
    if (it == by_key.end() || it->second->uid.empty()) continue;
    out.push_back({it->second->uid, topology::RecordOf(devices)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.uid < b.uid; });
  return out;
}

std::optional<std::string> PlanNodeAnnotation(
    const std::vector<topology::ResourceDevices>& allocatable,
    std::vector<topology::PodDeviceRecord> records, const std::optional<std::string>& current) {
  std::vector<std::string> ids;
  for (const topology::ResourceDevices& r : allocatable) {
    if (IsNvidiaResource(r.resource)) ids.insert(ids.end(), r.ids.begin(), r.ids.end());
  }
  topology::NodeGpus gpus = topology::GpusOfDevices(ids);
  gpus.pods = std::move(records);
  std::string value = wire::EncodeNodeGpus(gpus);
  if (current == value) return std::nullopt;
  return value;
}

}  // namespace agent
