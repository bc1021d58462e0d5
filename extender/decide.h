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

// Same, with every candidate looked up by name in the snapshot.
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<absl::string_view>& candidates,
                                                 bool with_scores);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_DECIDE_H_
