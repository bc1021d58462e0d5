// Step 4a of the planner: MIG instances of one GPU model onto as few GPUs as possible, with
// valid placements only. First fit decreasing gives a plan (and an instance to blame when it
// fails); when that uses more GPUs than slice counting says is needed, a depth-first search with
// symmetry breaking looks for a better one within a node budget: exact for planning-sized
// inputs, never worse than first fit.
//
//   ASSIGN_OR_RETURN(auto layouts, plan::PackProfiles(h100, {p3g, p2g, p1g, p1g}));
#ifndef GPU_TENANCY_PLAN_MIG_PACKING_H_
#define GPU_TENANCY_PLAN_MIG_PACKING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace plan {

struct MigItem {
  const topology::MigProfile* profile = nullptr;
  std::string zone;  // empty: any GPU
};

struct MigPacking {
  std::vector<int> gpu_of_item;  // index into the candidate GPUs, per item
  int failed_item = -1;          // an item no search could place (when gpu_of_item is empty)
};

// Packs `items` onto candidate GPUs given in preference order by their zones (one entry per
// GPU). New GPUs are opened in that order. Empty gpu_of_item when some item cannot be placed.
MigPacking PackMigItems(const topology::GpuModel& model, std::vector<MigItem> items,
                        std::vector<std::string> gpu_zones);

// The layouts of as many GPUs as `profiles` need, each placed by PlaceProfiles and re-checked by
// CheckLayout. InvalidArgument if a profile does not belong to the model or fits no empty GPU.
[[nodiscard]] absl::StatusOr<std::vector<std::vector<topology::PlacedInstance>>> PackProfiles(
    const topology::GpuModel& gpu, const std::vector<const topology::MigProfile*>& profiles);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MIG_PACKING_H_
