// What the node agent writes in one round, decided from what the kubelet says and what
// kube-apiserver holds: the pods on this node whose gpu-tenancy.io/devices annotation differs
// from the devices the kubelet assigned them, and the Node's gpu-tenancy.io/gpu-devices when
// its GPUs or its record of those reports differ. Only NVIDIA device-plugin resources count
// (nvidia.com/...); a pod with none gets nothing. An unchanged assignment encodes to the same
// bytes, so a second round over the same state plans nothing. Pure.
#ifndef GPU_TENANCY_AGENT_ANNOTATION_PLAN_H_
#define GPU_TENANCY_AGENT_ANNOTATION_PLAN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/device_ids.h"

namespace agent {

// A pod kube-apiserver has bound to this node, with the annotation as it stands.
struct BoundPod {
  std::string namespace_name;
  std::string name;
  std::optional<std::string> devices;  // gpu-tenancy.io/devices, when set
  std::string uid;
};

struct PodAnnotation {
  std::string namespace_name;
  std::string name;
  // The new gpu-tenancy.io/devices; nullopt removes it (the kubelet no longer lists the pod's
  // GPUs: it ended, or was never given any).
  std::optional<std::string> value;
  bool operator==(const PodAnnotation&) const = default;
};

// The pods to annotate, in the kubelet's order, then the pods whose annotation is stale (bound
// here and annotated, but holding no NVIDIA device the kubelet lists), in kube-apiserver's
// order. Pods the kubelet lists that kube-apiserver does not (yet, or any more) bind to `node`
// are skipped: the next round sees them.
std::vector<PodAnnotation> PlanPodAnnotations(absl::string_view node,
                                              const std::vector<topology::PodDevices>& kubelet,
                                              const std::vector<BoundPod>& bound);

// The agent's record of the reports it writes (topology::PodDeviceRecord), by UID: one for each
// pod the kubelet gave NVIDIA devices and kube-apiserver binds to `node`, the same pods and
// devices PlanPodAnnotations writes. The service believes a pod's report only when it matches
// this record on the pod's Node.
std::vector<topology::PodDeviceRecord> PlanPodRecords(
    const std::vector<topology::PodDevices>& kubelet, const std::vector<BoundPod>& bound);

// The Node's new gpu-tenancy.io/gpu-devices (its GPUs and `records`), or nullopt when `current`
// already says it. A node whose kubelet offers no NVIDIA devices says so with an empty GPU list.
std::optional<std::string> PlanNodeAnnotation(
    const std::vector<topology::ResourceDevices>& allocatable,
    std::vector<topology::PodDeviceRecord> records, const std::optional<std::string>& current);

// Whether `resource` is an NVIDIA device-plugin resource (nvidia.com/gpu, .shared, mig-...).
bool IsNvidiaResource(absl::string_view resource);

}  // namespace agent

#endif  // GPU_TENANCY_AGENT_ANNOTATION_PLAN_H_
