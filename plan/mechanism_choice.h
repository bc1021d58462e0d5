// Step 2 of the planner: which isolation a workload gets, from its trust, latency class and
// shape, and why. A table of rules, applied before sizing (a MIG workload too large for every
// profile later becomes exclusive):
//
//   VM boundary                    -> vm (reported, not placed; vGPU is licensed per
//                                     concurrent vGPU)
//   training                       -> exclusive whole GPUs
//   untrusted                      -> MIG; exclusive where the GPU has no MIG
//   SLA-bound (trusted)            -> MIG; MPS (or time-slicing if asked) without MIG, warned
//   trusted best-effort / bursty   -> time-slicing, or MPS with memory limits if asked
#ifndef GPU_TENANCY_PLAN_MECHANISM_CHOICE_H_
#define GPU_TENANCY_PLAN_MECHANISM_CHOICE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "plan/input.h"

namespace plan {

// The isolation a workload gets. kVmBoundary is not something the cluster can provide: the plan
// reports it and places nothing.
enum class Mechanism { kMig, kExclusive, kTimeslice, kMps, kVmBoundary };
absl::string_view MechanismName(Mechanism m);  // "mig", "exclusive", "timeslice", "mps", "vm"

struct MechanismChoice {
  Mechanism mechanism = Mechanism::kExclusive;
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;
};

// `gpu_name` only appears in the texts.
MechanismChoice ChooseMechanism(const WorkloadSpec& workload, absl::string_view gpu_name,
                                bool gpu_has_mig);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MECHANISM_CHOICE_H_
