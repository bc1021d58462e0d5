#include "extender/decide.h"

#include "common/status_macros.h"

namespace extender {

using topology::FitResult;
using topology::Verdict;

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   bool with_scores) {
  return Decide(pod, snapshot, policy, candidates,
                [&](size_t i) { return snapshot.FindNode(candidates[i]); }, with_scores);
}

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   NodeLookup lookup, bool with_scores) {
  PodDecision out;
  out.pod = pod.Key();
  ASSIGN_OR_RETURN(out.demand, topology::ComputeDemand(pod, policy));
  ASSIGN_OR_RETURN(topology::PodContext ctx,
                   topology::MakePodContext(pod, policy,
                                            snapshot.NamespaceLabels(pod.namespace_name)));
  out.tenant = ctx.tenant.name;
  if (ctx.tenant.tier) out.tier = ctx.tenant.tier->name;
  out.nodes.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    NodeDecision d;
    d.node = std::string(candidates[i]);
    if (out.demand.empty()) {
      out.nodes.push_back(std::move(d));  // no GPU demand: nothing of ours to check
      continue;
    }
    const topology::NodeState* state = lookup(i);
    if (!state) {
      d.fit = FitResult{Verdict::kUnschedulable, "node not yet known to gpu-tenancy", "unknown-node"};
    } else {
      d.fit = topology::Fit(out.demand, ctx, state->supply, state->occupancy);
      if (with_scores && d.fit.fits()) {
        d.score = topology::Score(out.demand, ctx, state->supply, state->occupancy);
      }
    }
    out.nodes.push_back(std::move(d));
  }
  return out;
}

}  // namespace extender
