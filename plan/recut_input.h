// The re-cut search's input (plan/mig_recut.h) read off the cluster: which pending pods ask for
// MIG instances only, which nodes a new geometry could serve them on, and what re-cutting each
// node would drain. A node is a candidate when it runs the mixed MIG strategy on a catalog GPU,
// is settled, sits in a MIG pool, and no pod holds one of its GPUs whole (the node's labels do not
// say which GPU that is, so no config could keep it). A pod may use a candidate when its tier
// may use the node's pool and its quota lets it, and nothing but the node's free instances
// stands in its way: the same rules the filter applies, so advice never names a node the pod
// could not use after the re-cut.
#ifndef GPU_TENANCY_PLAN_RECUT_INPUT_H_
#define GPU_TENANCY_PLAN_RECUT_INPUT_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "plan/mig_recut.h"
#include "topology/facts.h"
#include "topology/snapshot.h"

namespace plan {

struct RecutInput {
  RecutProblem problem;
  std::vector<std::string> current_config;  // per problem node: its nvidia.com/mig.config
  int pending_pods = 0;                     // pending pods asking for GPUs at all, MIG or not
  std::vector<std::string> skipped;         // pending GPU pods left out, and why
};

// `pods` may hold any pods: those bound to a node, finished, or asking for no MIG instance are
// not pending MIG demand. Pure.
RecutInput RecutInputFromCluster(const topology::ClusterSnapshot& snapshot,
                                 const topology::Policy& policy,
                                 absl::Span<const topology::PodFacts> pods);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_RECUT_INPUT_H_
