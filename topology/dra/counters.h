// Partitionable devices (KEP-4815): devices that draw on counters their pool shares, such as
// every MIG placement NVIDIA's DynamicMIG publishes for one GPU next to the whole GPU. Such a
// device is free only when no claim holds it and what it consumes fits what the held devices
// leave in each counter set it names; that is how kube-scheduler's allocator decides, so the
// whole GPU is not free while any placement is allocated, and placements on the same memory
// slices exclude each other. Pure: no I/O.
//
//   DraCounterSets left = CountersLeft(CurrentCounterSets(slices), held_devices);
//   bool free = !held && CountersFit(device, left);
#ifndef GPU_TENANCY_TOPOLOGY_DRA_COUNTERS_H_
#define GPU_TENANCY_TOPOLOGY_DRA_COUNTERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "topology/dra/model.h"

namespace topology {

// The counter sets of the slices consumers use (each pool's highest generation, as
// CurrentDevices), from any slice of the pool: from 1.35 they come in slices of their own.
DraCounterSets CurrentCounterSets(const std::vector<DraSlice>& slices);

// What is left of each set once the `held` devices take what they consume. A held device that
// names a set or counter no slice publishes takes nothing from the others.
DraCounterSets CountersLeft(DraCounterSets sets, absl::Span<const DraDevice* const> held);

// True when what the device consumes fits `left`: each set it names exists in its pool and
// has at least that much of each counter. A device that consumes nothing always fits.
bool CountersFit(const DraDevice& device, const DraCounterSets& left);

// Fills set.partitioned_nodes from the set's devices and the slices' counter sets.
void IndexDraPartitions(DraDeviceSet& set, const std::vector<DraSlice>& slices);

// The devices of `node` no claim holds whose counters the held ones use up (indices in
// state.devices(), ascending); empty for a node without partitionable devices.
std::vector<uint32_t> DraBlockedDevices(const DraState& state, const std::string& node);

// Recounts counts.classes[*].blocked for one node of set.partitioned_nodes from the devices
// counts.results says are held; a node without partitionable devices is left alone. Costs
// O(the node's devices x what each consumes).
void CountDraBlocked(const DraDeviceSet& set, const std::string& node, DraNodeCounts& counts);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_COUNTERS_H_
