// The extender's decision for one pod over a set of candidate nodes: per node a verdict with its
// reason and a score. Shared by the filter and prioritize verbs and by `gpu-tenancy explain`.
// Pure: reads an immutable snapshot, performs no I/O.
#ifndef GPU_TENANCY_EXTENDER_DECIDE_H_
#define GPU_TENANCY_EXTENDER_DECIDE_H_

#include <string>
#include <vector>

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

// Decides every candidate; a candidate the snapshot does not know is unschedulable ("node not
// in the extender's cache yet": the watch may simply lag). With `with_scores` false the scores
// stay 0 (filter does not need them). InvalidArgument when the pod itself is malformed.
[[nodiscard]] absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                                 const topology::ClusterSnapshot& snapshot,
                                                 const topology::Policy& policy,
                                                 const std::vector<std::string>& candidates,
                                                 bool with_scores);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_DECIDE_H_
