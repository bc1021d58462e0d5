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

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/inlined_vector.h"
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

// The same decision without a string per call: the reason is written into `reason` (cleared
// first, left empty when the node fits), so a caller deciding hundreds of nodes reuses one
// buffer. `code` points at a static string.
struct FitVerdict {
  Verdict verdict = Verdict::kFits;
  absl::string_view code;
  bool fits() const { return verdict == Verdict::kFits; }
};
FitVerdict Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
               const NodeOccupancy& occupancy, std::string& reason);

// Fit's inputs from one node, packed into a few bytes that ClusterSnapshot keeps inline beside
// its index entry. At thousands of nodes the supply and occupancy of a candidate are cold, and
// reading them is a chain of cache misses (node state, resource array, resource names, the
// occupancy map); with the summary the extender decides most nodes from the entry its lookup
// has just read, plus the one resource the pod asks for. Nodes with more resources than fit
// inline are not `usable` and take the full path.
struct NodeFitSummary {
  static constexpr size_t kMaxResources = 4;
  struct Resource {
    size_t name_hash = 0;                      // absl::Hash<absl::string_view> of the name
    const OfferedResource* offered = nullptr;  // into the summarised NodeSupply::resources
    int64_t used = 0;                          // NodeOccupancy::Used(name)
  };
  std::array<Resource, kMaxResources> resources{};
  uint8_t count = 0;
  bool usable = false;
  bool has_gpus = false;
  bool mig_unsettled = false;
  std::optional<SharingMode> pool_mode;
};
// The summary points into `supply`, which must outlive it (both live in one NodeState).
NodeFitSummary SummarizeForFit(const NodeSupply& supply, const NodeOccupancy& occupancy);

// Hashes of the demand's device names (in demand.devices order), made once per pod.
struct DemandKeys {
  absl::InlinedVector<size_t, 4> name_hashes;
};
DemandKeys MakeDemandKeys(const GpuDemand& demand);

// Fit and ScoreFitting reading `summary` where it can and `supply` / `occupancy` (the ones it
// summarises) only for the rest: reasons naming the pool or GPU model, and GPU memory. Same
// verdict, code, reason and score as the functions without a summary.
FitVerdict Fit(const GpuDemand& demand, const DemandKeys& keys, const PodContext& pod,
               const NodeFitSummary& summary, const NodeSupply& supply,
               const NodeOccupancy& occupancy, std::string& reason);

// 0..10, higher is better; only meaningful for nodes that fit (others score 0).
// binpack fills nodes whose requested resources are already in use (keeps whole nodes and whole
// MIG geometries free); spread does the opposite. Tenants whose tier may share are steered away
// from MIG pools so hardware isolation stays free for tenants who need it.
int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy);
// Score for a node that Fit has just accepted, without deciding the fit again (Score does both).
// The result is meaningless for a node that does not fit.
int ScoreFitting(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
                 const NodeOccupancy& occupancy);
int ScoreFitting(const GpuDemand& demand, const DemandKeys& keys, const PodContext& pod,
                 const NodeFitSummary& summary, const NodeSupply& supply,
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
