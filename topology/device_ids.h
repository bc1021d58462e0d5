// Device-plugin devices as the kubelet reports them (its PodResources API, read by agent/): per
// pod and container the IDs of each resource's devices; and what an ID says about the physical
// GPU behind it. The NVIDIA device plugin names devices by UUID or by
// index (its deviceIDStrategy), and a shared device's replicas by a suffix:
//   GPU-<uuid>                 a whole GPU                        gpu: itself
//   MIG-<uuid>                 a MIG instance (driver R470 on)     gpu: unknown from the ID
//   MIG-GPU-<uuid>/<gi>/<ci>   a MIG instance (older drivers)      gpu: GPU-<uuid>
//   <n>                        a whole GPU by index                gpu: itself
//   <n>:<m>                    MIG instance m of GPU n by index    gpu: <n>
//   <any of these>::<r>        replica r of a time-sliced or MPS-shared device
// Pure: no I/O.
#ifndef GPU_TENANCY_TOPOLOGY_DEVICE_IDS_H_
#define GPU_TENANCY_TOPOLOGY_DEVICE_IDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace topology {

struct ResourceDevices {
  std::string resource;          // e.g. nvidia.com/mig-3g.40gb
  std::vector<std::string> ids;  // in the kubelet's order
  bool operator==(const ResourceDevices&) const = default;
};

struct ContainerDevices {
  std::string container;
  std::vector<ResourceDevices> resources;
  bool operator==(const ContainerDevices&) const = default;
};

struct PodDevices {
  std::string namespace_name;
  std::string name;
  std::vector<ContainerDevices> containers;
  bool operator==(const PodDevices&) const = default;
};

// What the node agent wrote on a pod (kPodDevicesAnnotation): the node whose kubelet it read,
// and what each container got there.
struct DeviceReport {
  std::string node;
  std::vector<ContainerDevices> containers;
  bool operator==(const DeviceReport&) const = default;
};

struct DeviceId {
  std::string device;  // the ID without its replica suffix
  // The physical GPU's ID where the ID says it (a GPU's own ID; the GPU of an older MIG ID or of
  // an index pair); "" for a MIG-<uuid>, whose parent only NVML knows.
  std::string gpu;
  bool mig = false;
  int replica = -1;  // r of "...::r"; -1 for an unshared device
  bool operator==(const DeviceId&) const = default;
};

// Never fails: an ID of no known form is a device of its own, with no GPU.
DeviceId ParseDeviceId(absl::string_view id);

// A node's GPUs, as its allocatable device IDs tell them: in order of first appearance, each
// with the MIG instances the IDs place on it. MIG instances whose GPU the IDs do not say are
// listed apart.
struct NodeGpu {
  std::string id;                // GPU-<uuid>, or the index
  std::vector<std::string> mig;  // MIG instance IDs on it, in order
  bool operator==(const NodeGpu&) const = default;
};
// The agent's own record of what it reported on one pod of its node: the pod's UID and, per
// NVIDIA resource, the device IDs its containers got (resources by name, IDs sorted, each once).
// It is kept on the Node, which only that node's agent may write (the admission policies of
// manifests/node-agent): a pod's report is the agent's when it matches its node's record.
struct PodDeviceRecord {
  std::string uid;
  std::vector<ResourceDevices> resources;
  bool operator==(const PodDeviceRecord&) const = default;
};

// What a report's containers amount to, as a record holds it.
std::vector<ResourceDevices> RecordOf(const std::vector<ContainerDevices>& containers);

// What a node's agent says about its node (kNodeDevicesAnnotation): its GPUs, and the record of
// the pods it reported.
struct NodeGpus {
  std::vector<NodeGpu> gpus;
  std::vector<std::string> unplaced_mig;  // MIG-<uuid> instances
  std::vector<PodDeviceRecord> pods;      // by UID; empty from an agent that keeps none
  bool operator==(const NodeGpus&) const = default;
  // The record of the pod with `uid`, or null.
  const PodDeviceRecord* FindPod(absl::string_view uid) const;
};
NodeGpus GpusOfDevices(const std::vector<std::string>& device_ids);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DEVICE_IDS_H_
