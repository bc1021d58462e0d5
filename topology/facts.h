// The plain facts the model reads from Kubernetes objects: what a Node advertises and what a Pod
// asks for. wire/k8s_codec fills them from JSON; everything in topology/ works on them, so the
// model can be tested with a few lines of C++ instead of kilobytes of JSON.
#ifndef GPU_TENANCY_TOPOLOGY_FACTS_H_
#define GPU_TENANCY_TOPOLOGY_FACTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/device_ids.h"
#include "topology/quantity.h"

namespace topology {

using Labels = std::map<std::string, std::string, std::less<>>;
using ResourceList = std::map<std::string, Quantity, std::less<>>;

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute

  bool operator==(const Taint&) const = default;
};

struct NodeFacts {
  std::string name;
  Labels labels;
  ResourceList allocatable;
  std::vector<Taint> taints;
  // The node agent's list of the node's GPUs (kNodeDevicesAnnotation); nullopt without a
  // readable one.
  std::optional<NodeGpus> reported_gpus;
  // status.capacity's nvidia.com/* entries: every device the device plugin registered, healthy or
  // not (allocatable counts the healthy ones), so the geometry the node was cut into. Last, with
  // an initializer, so brace-initialised facts may leave it out.
  ResourceList gpu_capacity = {};

  bool operator==(const NodeFacts&) const = default;
};

struct EnvVar {
  std::string name;
  std::string value;  // "" when set through valueFrom

  bool operator==(const EnvVar&) const = default;
};

struct ContainerFacts {
  std::string name;
  ResourceList requests;
  ResourceList limits;
  // An init container with restartPolicy: Always (a sidecar) runs beside the main containers.
  bool restartable = false;
  // The ways to a device past the device plugin (the webhook's device-access rule reads them,
  // at admission and on the live pods): securityContext.privileged, the capabilities added,
  // and of the environment only kDeviceEnvNames, in order.
  bool privileged = false;
  std::vector<std::string> capabilities_added;
  std::vector<EnvVar> env;

  bool operator==(const ContainerFacts&) const = default;
};

struct HostPathVolume {
  std::string volume;
  std::string path;

  bool operator==(const HostPathVolume&) const = default;
};

// A required node affinity `In` expression, from any of the pod's terms.
struct NodeAffinityIn {
  std::string key;
  std::vector<std::string> values;

  bool operator==(const NodeAffinityIn&) const = default;
};

// One entry of a pod's spec.resourceClaims: the name containers refer to, and the claim it
// resolves to (resourceClaimName, or for a template the claim status.resourceClaimStatuses
// names once the claim controller has made it).
struct PodClaimRef {
  std::string name;
  std::string claim;  // "" while a template's claim is not made yet
  std::string template_name;
  bool operator==(const PodClaimRef&) const = default;
};

struct PodFacts {
  std::string namespace_name;
  std::string name;
  std::string uid;
  // metadata.creationTimestamp as the API server writes it (RFC 3339 in UTC, so text order is
  // time order); "" when not known.
  std::string created;
  std::string node_name;  // empty until bound
  std::string phase;      // Pending, Running, Succeeded, Failed, Unknown
  Labels labels;
  Labels annotations;
  std::vector<ContainerFacts> containers;
  std::vector<ContainerFacts> init_containers;
  std::vector<ContainerFacts> ephemeral_containers;  // added by kubectl debug; no resources
  ResourceList overhead;
  // The rest of what admission reads: host paths, hostIPC, where the pod asks to run.
  std::vector<HostPathVolume> host_paths;
  bool host_ipc = false;
  Labels node_selector;
  std::vector<NodeAffinityIn> required_affinity_in;
  std::vector<PodClaimRef> resource_claims;  // DRA
  // spec.priority, which kube-apiserver's Priority admission fills from priorityClassName; 0
  // when unset, as kube-scheduler reads it. Preemption compares it.
  int32_t priority = 0;
  std::string priority_class_name;
  std::string scheduler_name;  // spec.schedulerName; "" reads as default-scheduler
  // spec.preemptionPolicy is Never: kube-scheduler never evicts anyone for this pod.
  bool never_preempts = false;
  // What the node agent reported the kubelet gave the pod (kPodDevicesAnnotation); nullopt
  // without a readable one. Whether to trust it is topology/device_report.h's question.
  std::optional<DeviceReport> device_report;

  bool operator==(const PodFacts&) const = default;
  std::string Key() const { return namespace_name + "/" + name; }
  // Bound pods in a terminal phase no longer hold devices.
  bool HoldsResources() const {
    return !node_name.empty() && phase != "Succeeded" && phase != "Failed";
  }
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_FACTS_H_
