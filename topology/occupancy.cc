#include "topology/occupancy.h"

namespace topology {

int64_t NodeOccupancy::SharedMemoryUsedMiB() const {
  int64_t total = shared_memory_unassigned_mib;
  for (const auto& [index, mib] : shared_memory_by_gpu) total += mib;
  return total;
}

bool UsesSharedMemory(const GpuDemand& demand, const NodeSupply& supply) {
  if (demand.memory_mib == 0) return false;
  if (demand.devices.empty()) return true;
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (r && r->kind == ResourceKind::kSharedReplica && r->mode != SharingMode::kMigShared) {
      return true;
    }
  }
  return false;
}

void ApplyPod(NodeOccupancy& occupancy, const GpuDemand& demand, const NodeSupply& supply,
              std::optional<int> gpu_index, int sign) {
  for (const ResourceCount& device : demand.devices)
    occupancy.used.Add(device.name, sign * device.count);
  if (UsesSharedMemory(demand, supply)) {
    if (gpu_index) {
      int64_t& mib = occupancy.shared_memory_by_gpu[*gpu_index];
      mib += sign * demand.memory_mib;
      if (mib == 0) occupancy.shared_memory_by_gpu.erase(*gpu_index);
    } else {
      occupancy.shared_memory_unassigned_mib += sign * demand.memory_mib;
    }
  }
  occupancy.pods += sign;
}

}  // namespace topology
