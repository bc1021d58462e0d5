// Step 3 of the planner, for MIG workloads: the smallest profile of the GPU model that holds the
// sized memory, with the reason in words ("needs 17.65 GiB -> 2g.20gb (19.62 GiB); 1g.10gb holds
// only 9.75 GiB").
#ifndef GPU_TENANCY_PLAN_MIG_PROFILE_CHOICE_H_
#define GPU_TENANCY_PLAN_MIG_PROFILE_CHOICE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "topology/catalog.h"

namespace plan {

struct ProfileChoice {
  const topology::MigProfile* profile = nullptr;  // nullptr: only the whole card holds it
  std::string explanation;
};

// The smallest profile (by memory) holding `need_bytes`, skipping attribute variants (+me) and
// the whole-card profile (a 7g instance is a whole GPU with less memory). Among profiles of
// equal memory it takes the one whose compute share matches its memory share (2g.20gb over
// 1g.20gb, 3g.40gb over 4g.40gb). FailedPrecondition when the catalog has no memory for the
// model's profiles.
[[nodiscard]] absl::StatusOr<ProfileChoice> ChooseProfile(const topology::GpuModel& gpu,
                                                          int64_t need_bytes);

// "1g.10gb+me" and the like: a profile with extra engines, never chosen to hold memory.
bool IsAttributeVariant(const topology::MigProfile& profile);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MIG_PROFILE_CHOICE_H_
