#include "agent/annotation_plan.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/device_annotations.h"
#include "topology/wellknown.h"

namespace agent {

bool IsNvidiaResource(absl::string_view resource) {
  return absl::StartsWith(resource, topology::kNvidiaResourcePrefix);
}

std::vector<PodAnnotation> PlanPodAnnotations(absl::string_view node,
                                              const std::vector<topology::PodDevices>& kubelet,
                                              const std::vector<BoundPod>& bound) {
  absl::flat_hash_map<std::string, const BoundPod*> by_key;
  for (const BoundPod& p : bound) by_key[absl::StrCat(p.namespace_name, "/", p.name)] = &p;
  std::vector<PodAnnotation> out;
  absl::flat_hash_set<std::string> holding;  // namespace/name of pods the kubelet gave GPUs
  for (const topology::PodDevices& pod : kubelet) {
    common::PodDevicesAnnotation want{std::string(node), {}};
    for (const topology::ContainerDevices& c : pod.containers) {
      topology::ContainerDevices gpu{c.container, {}};
      for (const topology::ResourceDevices& r : c.resources) {
        if (IsNvidiaResource(r.resource)) gpu.resources.push_back(r);
      }
      if (!gpu.resources.empty()) want.containers.push_back(std::move(gpu));
    }
    if (want.containers.empty()) continue;
    std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    holding.insert(key);
    auto it = by_key.find(key);
    if (it == by_key.end()) continue;
    std::string value = common::EncodePodDevices(want);
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

std::optional<std::string> PlanNodeAnnotation(
    const std::vector<topology::ResourceDevices>& allocatable,
    const std::optional<std::string>& current) {
  std::vector<std::string> ids;
  for (const topology::ResourceDevices& r : allocatable) {
    if (IsNvidiaResource(r.resource)) ids.insert(ids.end(), r.ids.begin(), r.ids.end());
  }
  std::string value = common::EncodeNodeGpus(topology::GpusOfDevices(ids));
  if (current == value) return std::nullopt;
  return value;
}

}  // namespace agent
