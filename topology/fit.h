// Fit and Score: can this node hold this pod now, and how good a home is it.
//
// Fit is a pure function with three outcomes, never mixed (as kube-scheduler's own plugins):
//   kFits;
//   kUnschedulable  - not now: capacity is held by other pods (preemption or time may help);
//   kUnresolvable   - never as things stand: wrong tier for the pool, node mid-reconfiguration,
//                     resource not offered, request larger than any GPU.
// The reason is one line naming the resource, what was asked and what is free, e.g.
//   "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2".
#ifndef GPU_TENANCY_TOPOLOGY_FIT_H_
#define GPU_TENANCY_TOPOLOGY_FIT_H_

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

struct FitResult {
  Verdict verdict = Verdict::kFits;
  std::string reason;  // empty when it fits
  // A fixed, short name of the rule that decided ("exhausted", "tier-pool"...), for metrics:
  // reasons carry counts and names, codes stay a bounded label set.
  absl::string_view code;
  bool fits() const { return verdict == Verdict::kFits; }
};

// Everything about the pod that is the same on every node.
struct PodContext {
  const Policy* policy = nullptr;
  TenantRef tenant;
  bool canary = false;  // may use the canary reservation
  std::optional<ScoringStrategy> scoring;  // per-pod override of policy.scoring
};

FitResult Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy);

// 0..10, higher is better; only meaningful for nodes that fit (others score 0).
// binpack fills nodes whose requested resources are already in use (keeps whole nodes and whole
// MIG geometries free); spread does the opposite. Tenants whose tier may share are steered away
// from MIG pools so hardware isolation stays free for tenants who need it.
int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy);

// Where bind puts a pod, recorded on the pod as annotations for audit and metrics.
struct Placement {
  std::string node;
  std::string tenant;
  std::string tier;
  std::string pool;
  std::optional<int> gpu_index;  // the shared GPU whose memory it was promised
  std::string mig_profile;       // first MIG profile requested, if any
};

// The shared GPU a pod with this demand should land on: the fullest one that still has room
// (memory best fit). nullopt when the demand uses no shared memory or nothing has room.
std::optional<int> ChooseSharedGpu(const GpuDemand& demand, const NodeSupply& supply,
                                   const NodeOccupancy& occupancy);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_FIT_H_
