// Steps 1 to 3 of MakePlan for one workload: its memory, the fleet GPU type it runs on, its
// mechanism, how its memory rounds to a MIG profile, whole GPUs or a share of a card, and its
// replicas (spread over zones when mirrored). Packing comes after (plan/fleet_packing.h).
#ifndef GPU_TENANCY_PLAN_WORKLOAD_DECISION_H_
#define GPU_TENANCY_PLAN_WORKLOAD_DECISION_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plan/plan.h"
#include "topology/catalog.h"

namespace plan {

struct WorkloadDecision {
  WorkloadPlan plan;
  int gpu_type = 0;  // index into Plan::gpu_types
};

// `fleet` has its GPU types, nodes and GPUs set; gpu_type gives, per entry of fleet.gpus, its
// index into fleet.gpu_types. Errors name the workload: InvalidArgument for inconsistent input,
// FailedPrecondition when the catalog lacks a memory size, ResourceExhausted when the workload
// is larger than it may be.
[[nodiscard]] absl::StatusOr<WorkloadDecision> DecideWorkload(const WorkloadSpec& spec,
                                                              const Plan& fleet,
                                                              const std::vector<int>& gpu_type,
                                                              const topology::Catalog& catalog);

// "workload \"chat\": <message>", keeping the code.
absl::Status WithWorkload(const WorkloadSpec& workload, const absl::Status& status);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_WORKLOAD_DECISION_H_
