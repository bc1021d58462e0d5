// The extender's decision for one pod over a set of candidate nodes: per node a verdict with its
// reason and a score. Shared by the filter and prioritize verbs and by `gpu-tenancy explain`.
// Pure: reads an immutable snapshot, performs no I/O.
#ifndef GPU_TENANCY_EXTENDER_DECIDE_H_
#define GPU_TENANCY_EXTENDER_DECIDE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "topology/fair_share.h"
#include "topology/fit.h"
#include "topology/preemption.h"
#include "topology/quota.h"
#include "topology/snapshot.h"

namespace extender {

struct PodDecision {
  std::string pod;  // "namespace/name"
  std::string tenant;
  std::string tier;  // empty when the tenant is denied
  topology::GpuDemand demand;
  // The tenant's quota items with what it uses of each (empty: no quota, or no GPU demand).
  std::vector<topology::QuotaLine> quota;
  // Fair sharing: where the pod's tenant stands (guaranteed, held, borrowed, lent, fair share),
  // for a tenant that takes part and a pod with GPU demand.
  std::optional<topology::TenantShare> share;
};

// One candidate's outcome. The fit's views point into the decision's demand, the policy and
// the node's supply: valid during the visitor's call.
struct NodeOutcome {
  topology::FitResult fit;
  int score = 0;  // 0 unless with_scores and it fits
  // With DecideOptions::victims, for an unschedulable node: the pods whose eviction would make
  // room, as the preempt verb would answer (topology::PreemptionRoom::Choose).
  topology::PreemptionChoice preemption;
  // Fair sharing, on a node that fits: whether the pod is placed within its tenant's guarantee
  // or borrows (PodDecision::share set); kGuaranteed otherwise.
  topology::ShareKind share = topology::ShareKind::kGuaranteed;
  bool fits() const { return fit.fits(); }
};
using NodeVisitor = absl::FunctionRef<void(size_t candidate_index, const NodeOutcome& outcome)>;
// Candidate i's node state, or null when unknown, which is unschedulable ("not yet known": the
// watch may simply lag).
using NodeLookup = absl::FunctionRef<const topology::NodeState*(size_t candidate_index)>;

// Decides every candidate and hands each outcome to `visit`, in candidate order; nothing is
// formatted or copied per node, so the caller decides what to keep. `lookup` is called at most
// once per candidate, in order. With `with_scores` false the scores stay 0 (filter does not
// need them). InvalidArgument when the pod is malformed.
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<absl::string_view>& candidates,
                                                 NodeLookup lookup, bool with_scores,
                                                 NodeVisitor visit);
struct DecideOptions {
  bool scores = false;
  bool victims = false;  // explain: who would be preempted on unschedulable nodes
};
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<absl::string_view>& candidates,
                                                 NodeLookup lookup, DecideOptions options,
                                                 NodeVisitor visit);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_DECIDE_H_
