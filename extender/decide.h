// The extender's decision for one pod over a set of candidate nodes: per node a verdict with its
// reason and a score. Shared by the filter and prioritize verbs and by `gpu-tenancy explain`.
// Pure: reads an immutable snapshot, performs no I/O.
#ifndef GPU_TENANCY_EXTENDER_DECIDE_H_
#define GPU_TENANCY_EXTENDER_DECIDE_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "topology/fit.h"
#include "topology/snapshot.h"

namespace extender {

struct NodeDecision {
  std::string node;
  topology::FitResult fit;
  int score = 0;
};

struct PodDecision {
  std::string pod;  // "namespace/name"
  std::string tenant;
  std::string tier;  // empty when the tenant is denied
  topology::GpuDemand demand;
  std::vector<NodeDecision> nodes;
};

using NodeLookup = absl::FunctionRef<const topology::NodeState*(size_t candidate_index)>;

// Decides every candidate; `lookup` gives the node state of candidate i, or null when unknown,
// which is unschedulable ("not yet known": the watch may simply lag). With `with_scores` false
// the scores stay 0 (filter does not need them). InvalidArgument when the pod is malformed.
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<absl::string_view>& candidates,
                                                 NodeLookup lookup, bool with_scores);

// One candidate's outcome as DecideEach reports it. `code` is static; `reason` is valid only
// during the visitor's call (one buffer is reused for every candidate).
struct NodeOutcome {
  topology::Verdict verdict = topology::Verdict::kFits;
  absl::string_view code;
  absl::string_view reason;  // empty when it fits
  int score = 0;
  bool fits() const { return verdict == topology::Verdict::kFits; }
};
using NodeVisitor = absl::FunctionRef<void(size_t candidate_index, const NodeOutcome& outcome)>;
// Candidate i as a NodeRef: its state and, for nodes of the snapshot, Fit's inline summary
// (ClusterSnapshot::FindNodes gives both); both null when unknown.
using NodeRefLookup = absl::FunctionRef<topology::NodeRef(size_t candidate_index)>;

// Decide without a NodeDecision (two strings) per candidate: each outcome goes to `visit`, in
// candidate order, and the returned PodDecision's `nodes` stays empty. Same verdicts, reasons and
// scores as Decide; `lookup` is called once per candidate, in order, a few candidates ahead of
// the one being decided (so the node states' cache misses overlap with the work).
[[nodiscard]] absl::StatusOr<PodDecision> DecideEach(const topology::PodFacts& pod,
                                                     const topology::ClusterSnapshot& snapshot,
                                                     const topology::Policy& policy,
                                                     const std::vector<absl::string_view>& candidates,
                                                     NodeRefLookup lookup, bool with_scores,
                                                     NodeVisitor visit);

// Same, with every candidate looked up by name in the snapshot.
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<absl::string_view>& candidates,
                                                 bool with_scores);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_DECIDE_H_
