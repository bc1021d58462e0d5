#include "extender/decide.h"

#include <optional>

#include "topology/quota.h"
#include "topology/status_macros.h"

namespace extender {

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   NodeLookup lookup, bool with_scores, NodeVisitor visit) {
  PodDecision out;
  out.pod = pod.Key();
  ASSIGN_OR_RETURN(out.demand, topology::ComputeDemand(pod, policy));
  ASSIGN_OR_RETURN(
      topology::PodContext ctx,
      topology::MakePodContext(pod, policy, snapshot.NamespaceLabels(pod.namespace_name)));
  out.tenant = ctx.tenant.name;
  if (ctx.tenant.tier) out.tier = ctx.tenant.tier->name;
  // The tenant's holdings are the same for every candidate; what the pod adds to them depends
  // on the node (what nvidia.com/gpu is there).
  std::optional<topology::PodQuotaCheck> quota;
  if (ctx.tenant.tenant && !ctx.tenant.tenant->quota.empty() && !out.demand.empty()) {
    quota.emplace(*ctx.tenant.tenant, policy, out.demand,
                  topology::TenantUsage(snapshot, policy, ctx.tenant.name));
    out.quota = topology::QuotaLines(ctx.tenant.tenant->quota, quota->held());
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    NodeOutcome o;
    if (out.demand.empty()) {
      // No GPU demand: nothing of ours to check, every node passes.
    } else if (const topology::NodeState* node = lookup(i); node == nullptr) {
      o.fit.verdict = topology::Verdict::kUnschedulable;
      o.fit.rule = topology::Rule::kUnknownNode;
    } else {
      o.fit = topology::Fit(out.demand, ctx, node->supply, node->occupancy);
      if (quota && o.fit.fits()) o.fit = quota->Check(node->supply, node->facts.labels);
      if (with_scores && o.fit.fits()) {
        o.score = topology::Score(out.demand, ctx, node->supply, node->occupancy);
      }
    }
    visit(i, o);
  }
  return out;
}

}  // namespace extender
