// What the kubelet's PodResources API says of device-plugin devices, as plain data: per pod and
// container the IDs of each resource's devices, and the node's allocatable devices. The IDs are
// the device plugin's, as it reported them to the kubelet: "GPU-<uuid>" for a whole GPU,
// "MIG-<uuid>" (or "MIG-GPU-<uuid>/<gi>/<ci>") for a MIG instance, "<id>::<n>" for the n-th
// time-slicing or MPS replica of a device.
#ifndef GPU_TENANCY_AGENT_KUBELET_DEVICES_H_
#define GPU_TENANCY_AGENT_KUBELET_DEVICES_H_

#include <string>
#include <vector>

namespace agent {

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

}  // namespace agent

#endif  // GPU_TENANCY_AGENT_KUBELET_DEVICES_H_
