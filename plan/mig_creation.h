// Step 4b of the planner: the `nvidia-smi mig -cgi a,b,c` order that creates a packed layout.
// The driver gives each new instance the highest free placement of its profile, so the order
// decides the geometry; that assumption is the one consistent with NVIDIA's documented example
// (on A100-40GB `-cgi 19,19,14,9` fails, `-cgi 9,19,14,19` succeeds).
#ifndef GPU_TENANCY_PLAN_MIG_CREATION_H_
#define GPU_TENANCY_PLAN_MIG_CREATION_H_

#include <optional>
#include <vector>

#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace plan {

// Replays `-cgi` in `order` on an empty GPU. nullopt when some instance finds no free placement
// or the result breaks a layout rule.
std::optional<std::vector<topology::PlacedInstance>> SimulateCreate(
    const topology::GpuModel& gpu, const std::vector<const topology::MigProfile*>& order);

struct CreationOrder {
  std::vector<const topology::MigProfile*> order;  // for -cgi
  std::vector<topology::PlacedInstance> layout;    // what that order creates, sorted by start
  bool verified = false;  // false: no order reproduces the layout; use explicit placements
};

// An order of the layout's instances that SimulateCreate turns into a valid layout of the same
// instances, trying largest-first first. Falls back to largest-first with verified = false.
CreationOrder PlanCreation(const topology::GpuModel& gpu,
                           const std::vector<topology::PlacedInstance>& layout);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MIG_CREATION_H_
