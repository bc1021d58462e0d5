// What the pods already on a node hold: device counts per resource and, for shared GPUs, the
// GPU memory promised to each GPU (by index where the assignment is known, per node otherwise).
#ifndef GPU_TENANCY_TOPOLOGY_OCCUPANCY_H_
#define GPU_TENANCY_TOPOLOGY_OCCUPANCY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/facts.h"
#include "topology/resource_counts.h"
#include "topology/supply.h"
#include "topology/wellknown.h"

namespace topology {

struct NodeOccupancy {
  ResourceCounts used;                          // device resource -> count held
  std::map<int, int64_t> shared_memory_by_gpu;  // GPU index -> MiB promised
  int64_t shared_memory_unassigned_mib = 0;     // MiB promised, GPU unknown
  int pods = 0;

  int64_t Used(absl::string_view resource) const { return used.Get(resource); }
  int64_t Used(const ResourceCount& resource) const { return used.Get(resource); }
  int64_t SharedMemoryUsedMiB() const;
};

// One pod's hold on a node: who it is and what it counts for. Node states keep the holds their
// occupancy sums, so the allocation inventory an auditor reads and the numbers the scheduler
// decides on come from the same records and cannot disagree.
struct PodHold {
  std::string uid;
  std::string namespace_name;
  std::string name;
  GpuDemand demand;
  std::optional<int> gpu_index;  // the shared GPU whose memory it was promised, if known
  bool assumed = false;          // placed by bind, not yet confirmed by the watch
  // What preemption needs to know of a holder: its priority, and its labels (a
  // PodDisruptionBudget selects pods by label).
  int32_t priority = 0;
  Labels labels;
  // What the node agent reported the kubelet gave it, as the pod carries it; whether it is
  // believed is decided against the node (topology/device_report.h).
  std::optional<DeviceReport> device_report;
  // metadata.creationTimestamp (RFC 3339, so text order is time order); fair sharing's reclaim
  // takes a tenant's newest borrowed pods first.
  std::string created = {};
};

// True when the pod's GPU memory comes out of a shared GPU's heap on this node (it uses a
// shared replica, or asks for memory without any device).
bool UsesSharedMemory(const GpuDemand& demand, const NodeSupply& supply);

// Adds (sign +1) or removes (sign -1) one pod's demand. Removing exactly what was added
// restores the previous value, so incremental updates and a rebuild agree.
void ApplyPod(NodeOccupancy& occupancy, const GpuDemand& demand, const NodeSupply& supply,
              std::optional<int> gpu_index, int sign);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_OCCUPANCY_H_
