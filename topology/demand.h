// What a pod asks of the GPU fleet: device resources by name and GPU memory, computed with
// Kubernetes' own effective-request rules (regular containers summed, init containers by
// maximum, restartable init containers added, pod overhead added).
#ifndef GPU_TENANCY_TOPOLOGY_DEMAND_H_
#define GPU_TENANCY_TOPOLOGY_DEMAND_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/resource_counts.h"

namespace topology {

struct GpuDemand {
  // GPU device resources (nvidia.com/gpu, nvidia.com/mig-*, *.shared, configured shared names)
  // and their effective pod-level counts. Memory resources are folded into memory_mib.
  ResourceCounts devices;
  int64_t memory_mib = 0;

  bool empty() const { return devices.empty() && memory_mib == 0; }
  bool operator==(const GpuDemand&) const = default;
};

// Effective pod-level requests for every resource, as the scheduler computes them. For each
// container a resource found only in limits counts as requested (kube-apiserver defaults
// requests of extended resources from limits).
ResourceList EffectiveRequests(const PodFacts& pod);

// True for names the model treats as GPU devices.
bool IsGpuDeviceResource(absl::string_view resource, const Policy& policy);

// InvalidArgument for fractional or negative device counts and for an unparseable memory
// annotation, naming the resource.
[[nodiscard]] absl::StatusOr<GpuDemand> ComputeDemand(const PodFacts& pod, const Policy& policy);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DEMAND_H_
