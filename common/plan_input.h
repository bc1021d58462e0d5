// The input of `gpu-tenancy plan`: the fleet and the workloads, as YAML (schema and a worked
// example in cmd/demo/plan-example.yaml). Parsed into plan::PlanInput; the planner does the
// rest.
//
//   ASSIGN_OR_RETURN(plan::PlanInput input, common::ParsePlanInput(yaml_text));
//
// Errors are InvalidArgument naming the YAML path ("workloads[2].memory.model.layers: must be a
// positive integer"). Unknown fields are errors, so a typo never silently changes a plan.
#ifndef GPU_TENANCY_COMMON_PLAN_INPUT_H_
#define GPU_TENANCY_COMMON_PLAN_INPUT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plan/input.h"

namespace common {

[[nodiscard]] absl::StatusOr<plan::PlanInput> ParsePlanInput(absl::string_view yaml_text);

// "7B", "13B", "6.7B", "350M", "1.5T", or a plain number: a count of model parameters.
[[nodiscard]] absl::StatusOr<int64_t> ParseParameterCount(absl::string_view text);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_PLAN_INPUT_H_
