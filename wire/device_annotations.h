// The node agent's annotations, as JSON (names in topology/wellknown.h):
//   on a pod, gpu-tenancy.io/devices: the node and what each container got from the kubelet,
//     {"node":"gpu-a","containers":[{"name":"main","devices":{"nvidia.com/gpu":["GPU-..."]}}]}
//   on a node, gpu-tenancy.io/gpu-devices: its GPUs in order, each with its MIG instances, the
//     MIG instances whose GPU the IDs do not say, and the agent's record of the pods it
//     reported (topology::PodDeviceRecord, by UID),
//     {"gpus":[{"id":"GPU-...","mig":["MIG-GPU-.../1/0"]}],"unplacedMig":["MIG-..."],
//      "pods":{"<uid>":{"nvidia.com/gpu":["GPU-..."]}}}
// Encoding is deterministic (the order given), so an unchanged assignment encodes to the same
// bytes and the agent writes nothing. Decoding refuses anything else with the offending field.
#ifndef GPU_TENANCY_WIRE_DEVICE_ANNOTATIONS_H_
#define GPU_TENANCY_WIRE_DEVICE_ANNOTATIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/device_ids.h"

namespace wire {

using PodDevicesAnnotation = topology::DeviceReport;

std::string EncodePodDevices(const PodDevicesAnnotation& value);
absl::StatusOr<PodDevicesAnnotation> DecodePodDevices(absl::string_view json);

std::string EncodeNodeGpus(const topology::NodeGpus& value);
absl::StatusOr<topology::NodeGpus> DecodeNodeGpus(absl::string_view json);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_DEVICE_ANNOTATIONS_H_
