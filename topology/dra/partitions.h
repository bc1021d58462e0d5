// Partitionable DRA devices (NVIDIA's DynamicMIG) as GPUs: per shared counter set, which is one
// physical GPU, the placements allocated claims hold and the placements that could still be cut
// (neither held nor blocked by the counters the held ones use), each with the memory slices it
// takes. What /debug/allocations shows under `partitionedGpus`; computed from the same counts
// the DRA extended-resource fit and `explain` read, so they cannot disagree. Pure.
#ifndef GPU_TENANCY_TOPOLOGY_DRA_PARTITIONS_H_
#define GPU_TENANCY_TOPOLOGY_DRA_PARTITIONS_H_

#include <string>
#include <vector>

#include "topology/dra/model.h"

namespace topology {

struct HeldPlacement {
  const DraDevice* device = nullptr;
  const DraClaim* claim = nullptr;  // the first allocated claim that names it
};

struct PartitionedGpu {
  std::string node, driver, pool, counter_set;
  std::vector<HeldPlacement> held;        // by device name
  std::vector<const DraDevice*> can_cut;  // by device name
  std::vector<const DraDevice*> blocked;  // by device name
};

// Every counter set some device consumes, by node, driver, pool and set name.
std::vector<PartitionedGpu> PartitionedGpus(const DraState& dra);

// The indices N of the counters named "...memory-slice-N" a device consumes from `counter_set`,
// ascending: where on the GPU a MIG placement sits.
std::vector<int> MemorySlices(const DraDevice& device, const std::string& counter_set);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_PARTITIONS_H_
