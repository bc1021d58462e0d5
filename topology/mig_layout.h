// MIG placement math on one GPU: is a set of instances a valid layout, and where can a multiset
// of profiles be placed. The rule (NVIDIA MIG user guide): every instance starts at one of its
// profile's placements, no two [start, start + memory_slices) ranges overlap, no profile exceeds
// its max count, and compute slices add up to at most the GPU's.
#ifndef GPU_TENANCY_TOPOLOGY_MIG_LAYOUT_H_
#define GPU_TENANCY_TOPOLOGY_MIG_LAYOUT_H_

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "topology/catalog.h"

namespace topology {

struct PlacedInstance {
  const MigProfile* profile = nullptr;
  int start = 0;
};

// OK, or InvalidArgument naming the first broken rule.
absl::Status CheckLayout(const GpuModel& gpu, const std::vector<PlacedInstance>& layout);

// Places the profiles on one empty GPU, largest first, backtracking over the valid starts.
// Returns the layout sorted by start, or nullopt when no valid layout holds them all.
std::optional<std::vector<PlacedInstance>> PlaceProfiles(
    const GpuModel& gpu, const std::vector<const MigProfile*>& profiles);

// How many of each profile, largest first (memory slices, then compute slices; ties keep the
// order first seen), as mig-parted configs and people list a GPU's cut.
std::vector<std::pair<const MigProfile*, int>> CountProfiles(
    const std::vector<const MigProfile*>& profiles);
std::vector<std::pair<const MigProfile*, int>> CountProfiles(
    const std::vector<PlacedInstance>& layout);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_MIG_LAYOUT_H_
