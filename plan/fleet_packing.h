// Step 4 of MakePlan: every decided replica onto the fleet's GPUs. Exclusive replicas first
// (whole GPUs of one node, taken from the end of the fleet), then MIG instances per GPU type
// (plan/mig_packing.h, GPUs opened from the start of the fleet), canary slices, then shared
// clients by memory, one sharing method per node as the device plugin requires. Finally every
// MIG GPU gets its layout, re-checked by CheckLayout, and its -cgi order (plan/mig_creation.h).
#ifndef GPU_TENANCY_PLAN_FLEET_PACKING_H_
#define GPU_TENANCY_PLAN_FLEET_PACKING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plan/plan.h"

namespace plan {

// One replica to place.
struct PackingItem {
  Holder holder;
  std::string zone;  // empty: any
  int type = 0;      // index into Plan::gpu_types
  Mechanism mechanism = Mechanism::kMig;
  const topology::MigProfile* profile = nullptr;  // kMig
  int gpus = 1;                                   // kExclusive
  int64_t memory_mib = 0;                         // shared
};

// Fills the GpuPlans and NodePlans of `plan` (whose workloads, GPU types, nodes and GPUs are
// set). gpu_type and gpu_node give, per entry of plan.gpus, its index into plan.gpu_types and
// plan.nodes. ResourceExhausted names the replica that does not fit; Internal when a produced
// MIG layout fails CheckLayout.
[[nodiscard]] absl::Status PackFleet(std::vector<PackingItem> items,
                                     const std::vector<int>& gpu_type,
                                     const std::vector<int>& gpu_node, Plan& plan);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_FLEET_PACKING_H_
