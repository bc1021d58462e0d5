// How the planner writes sizes and counts for people: "17.65 GiB", "13B", "2 sequences".
// The texts end up in the plan's explanations, so they follow nvidia-smi's habits where it has
// any (capacities in GiB with two decimals, rounded down).
#ifndef GPU_TENANCY_PLAN_QUANTITY_TEXT_H_
#define GPU_TENANCY_PLAN_QUANTITY_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace plan {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// "17.65 GiB": two decimals, rounded up (a need) or down (a capacity, as nvidia-smi prints).
std::string GiBText(int64_t bytes, bool round_up);
std::string MibText(int64_t mib, bool round_up);  // GiBText of a MiB count

// "40960Mi": a MiB count as a Kubernetes quantity.
std::string MiQuantity(int64_t mib);

// How many of `per` it takes to hold `need` (both positive).
inline int CeilDiv(int64_t need, int64_t per) { return static_cast<int>((need + per - 1) / per); }

// "13B", "7.24B", "350M", "1234": a parameter count as model cards write it.
std::string CountText(int64_t n);

// "1 sequence", "2 sequences".
std::string Plural(int64_t n, absl::string_view one, absl::string_view many);

// The shortest text that reads back as `v` ("2", "0.5").
std::string NumberText(double v);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_QUANTITY_TEXT_H_
