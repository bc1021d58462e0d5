// Fit and Score: can this node hold this pod now, and how good a home is it.
//
// Fit is a pure function with three outcomes, never mixed (as kube-scheduler's own plugins):
//   kFits;
//   kUnschedulable  - not now: capacity is held by other pods (preemption or time may help);
//   kUnresolvable   - never as things stand: wrong tier for the pool, node mid-reconfiguration
//                     or about to be re-cut (MIG drift), resource not offered, request larger
//                     than any GPU.
// The reason is one line naming the resource, what was asked and what is free, e.g.
//   "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2".
#ifndef GPU_TENANCY_TOPOLOGY_FIT_H_
#define GPU_TENANCY_TOPOLOGY_FIT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/occupancy.h"
#include "topology/policy.h"
#include "topology/supply.h"

namespace topology {

enum class Verdict { kFits, kUnschedulable, kUnresolvable };
absl::string_view VerdictName(Verdict v);  // "fits", "unschedulable", "unresolvable"

// The rule that decided. Each has a fixed, short code ("exhausted", "tier-pool"...) for
// metrics and logs: reasons carry counts and names, codes stay a bounded label set.
enum class Rule : uint8_t {
  kFits,
  kTenantDenied,  // subject: the tenant
  kNoGpu,
  kMigReconfiguring,    // subject: the node's nvidia.com/mig.config.state
  kMigDrift,            // subject: NodeSupply::mig_drift (config and differences)
  kPoolUndefined,       // subject: the pool
  kTierPool,            // subject: the pool; mode; tier
  kProfileUnsupported,  // resource; subject: the GPU model; detail: the MIG profile
  kNotOffered,          // resource
  kTierResource,        // resource; mode; tier
  kExceedsNode,         // resource; requested; capacity (outside any canary reserve)
  kExhausted,           // resource; requested; free; capacity
  kMemoryNoSharedGpu,
  kMemoryUnknown,
  kMemoryLargerThanGpu,    // requested, capacity: MiB
  kMemoryExhausted,        // requested, free (largest on one GPU), capacity: MiB
  kMemoryLargerThanSlice,  // resource: the device that gives the memory; requested, capacity
  kUnknownNode,            // the candidate is not in the snapshot (the watch may lag)
  // subject: the tenant; resource: the quota item (kQuotaGpuMemory: amounts in MiB; for MIG
  // instances "nvidia.com/mig-" with the profile as detail); requested; free: what the quota
  // leaves (negative when a lowered quota is already passed); capacity: the quota.
  kTenantQuota,
  // DRA extended resources (topology/dra/extended_resources.h). resource: the name the pod asks;
  // subject: the device class; requested; free: matching devices neither claimed nor asked by
  // pods on the node; capacity: matching devices; detail: devices not counted and why, or "".
  kDraExceedsNode,
  kDraExhausted,
  // Fair sharing (topology/fair_share.h). kTenantLimit: kTenantQuota's fields, for a tenant
  // whose hard cap is its fair-sharing `limit`. kGroupLimit (a group of the tenant would pass
  // its limit) and kBorrowOwed (the capacity a borrowed pod would take is owed to other
  // tenants): subject: the tenant; detail: the whole reason (topology::ShareVerdict::Reason).
  kTenantLimit,
  kGroupLimit,
  kBorrowOwed,
};
// The tenant's own cap, quota or fair-sharing limit: evicting its own pods may cure it.
inline bool IsTenantCapRule(Rule rule) {
  return rule == Rule::kTenantQuota || rule == Rule::kTenantLimit;
}
inline constexpr absl::string_view kQuotaGpuMemory = "GPU memory";

// What preemption can do about a rejection (topology/preemption.h), said in its reason.
enum class PreemptionNote : uint8_t {
  kNone,
  kOwnPodsFreeQuota,  // over quota, but the tenant's own lower-priority pods here would free it
  kCannotHelp,        // full, and no pod here that this pod may preempt frees enough
  kReclaim,           // full, but other tenants' borrowed pods here would free it
};
absl::string_view RuleCode(Rule rule);

// Fit's answer as data, like kube-scheduler's InsufficientResource: which rule, about which
// resource, what was asked and what is free. The views point into the demand, the pod context
// (and its policy) and the node's supply passed to Fit (and, for the DRA rules, the snapshot's
// DraState), and are valid while those are. The reason
// text is made only when someone needs it, e.g. "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2".
struct FitResult {
  Verdict verdict = Verdict::kFits;
  Rule rule = Rule::kFits;
  absl::string_view resource;
  int64_t requested = 0;  // devices, or MiB for the memory rules
  int64_t free = 0;
  int64_t capacity = 0;
  absl::string_view subject;
  absl::string_view detail;
  absl::string_view tier;
  SharingMode mode = SharingMode::kExclusive;
  bool canary_reserve = false;  // part of the resource is held back for canaries
  PreemptionNote preemption = PreemptionNote::kNone;

  bool fits() const { return verdict == Verdict::kFits; }
  absl::string_view code() const { return RuleCode(rule); }
  // Appends the one-line reason (nothing when it fits).
  void AppendReason(std::string& out) const;
  void AppendRuleReason(std::string& out) const;  // the same without the preemption note
  std::string Reason() const;
  bool operator==(const FitResult&) const = default;
};

// Everything about the pod that is the same on every node.
struct PodContext {
  const Policy* policy = nullptr;
  TenantRef tenant;
  bool canary = false;                     // may use the canary reservation
  std::optional<ScoringStrategy> scoring;  // per-pod override of policy.scoring
};

// The decision for one node. Pure, allocates nothing; see FitResult for the lifetime of its
// views.
FitResult Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy);

// 0..10, higher is better; 0 for a node that does not fit.
// binpack fills nodes whose requested resources are already in use (keeps whole nodes and whole
// MIG geometries free); spread does the opposite. Tenants whose tier may share are steered away
// from MIG pools so hardware isolation stays free for tenants who need it.
int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy);

// The shared GPU a pod with this demand should land on: the fullest one that still has room
// (memory best fit). nullopt when the demand uses no shared memory or nothing has room.
std::optional<int> ChooseSharedGpu(const GpuDemand& demand, const NodeSupply& supply,
                                   const NodeOccupancy& occupancy);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_FIT_H_
