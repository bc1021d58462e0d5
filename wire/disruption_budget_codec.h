// PodDisruptionBudget (policy/v1) to topology::DisruptionBudget: what preemption counts.
#ifndef GPU_TENANCY_WIRE_DISRUPTION_BUDGET_CODEC_H_
#define GPU_TENANCY_WIRE_DISRUPTION_BUDGET_CODEC_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/disruption_budget.h"

namespace wire {

// InvalidArgument naming the field for a missing name or namespace, a selector that is not a
// label selector (an unknown operator, values with Exists), or a non-integer
// status.disruptionsAllowed. A budget whose status is not written yet allows no disruption, as
// kube-scheduler reads it.
[[nodiscard]] absl::StatusOr<topology::DisruptionBudget> ParseDisruptionBudget(
    const common::JsonValue& object, absl::string_view path = "poddisruptionbudget");

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_DISRUPTION_BUDGET_CODEC_H_
