#include "extender/decide.h"

#include <optional>

#include "base/status_macros.h"
#include "topology/dra/extended_resources.h"
#include "topology/fair_share_check.h"
#include "topology/quota.h"

namespace extender {

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   NodeLookup lookup, bool with_scores, NodeVisitor visit) {
  return Decide(pod, snapshot, policy, candidates, lookup, DecideOptions{with_scores, false},
                visit);
}

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   NodeLookup lookup, DecideOptions options, NodeVisitor visit) {
  const bool with_scores = options.scores;
  PodDecision out;
  out.pod = pod.Key();
  const topology::DraState& dra = snapshot.dra();
  ASSIGN_OR_RETURN(out.demand, topology::ComputeDemandWithDra(pod, policy, dra));
  // Only pods asking a DRA-backed name pay for the DRA path, and then only on the nodes that
  // offer the name through DRA alone.
  const bool uses_dra = topology::DemandUsesDra(out.demand, dra);
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
  // Fair sharing, for a tenant that takes part: guaranteed or borrowed, and whether what it
  // would borrow is owed to others. A policy without it pays nothing here.
  std::optional<topology::FairShareLedger> ledger;
  std::optional<topology::PodShareCheck> share;
  if (ctx.tenant.tenant && ctx.tenant.tenant->fair_share && !out.demand.empty()) {
    ledger.emplace(topology::MakeLedger(snapshot, policy));
    share.emplace(*ledger, policy, *ctx.tenant.tenant, out.demand,
                  quota ? quota->held() : topology::TenantUsage(snapshot, policy, ctx.tenant.name));
    if (const topology::TenantShare* mine = ledger->Find(ctx.tenant.name)) out.share = *mine;
  }
  auto tenant_of = [&](absl::string_view ns) {
    return topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns));
  };
  // Made on the first rejection that preemption might cure: a request whose candidates fit or
  // are plainly unresolvable never pays for it.
  std::optional<topology::PreemptionRoom> room;
  auto preemption = [&]() -> const topology::PreemptionRoom& {
    if (!room) {
      room.emplace(out.demand, ctx, pod, quota ? &quota->held() : nullptr, dra, tenant_of);
      if (share) {
        room->EnableReclaim(snapshot, *ledger, [&](const topology::NodeState& node) {
          return share->GuaranteedOn(node.supply, node.facts.labels);
        });
      }
    }
    return *room;
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    NodeOutcome o;
    if (out.demand.empty()) {
      // No GPU demand: nothing of ours to check, every node passes.
    } else if (const topology::NodeState* node = lookup(i); node == nullptr) {
      o.fit.verdict = topology::Verdict::kUnschedulable;
      o.fit.rule = topology::Rule::kUnknownNode;
    } else {
      o.fit = uses_dra ? topology::FitWithDra(out.demand, ctx, *node, dra)
                       : topology::Fit(out.demand, ctx, node->supply, node->occupancy);
      // Only tenants with a quota pay for the call (the hot path copies no FitResult).
      if (quota) o.fit = topology::QuotaBeforeCapacity(o.fit, &*quota, *node);
      if (share) {
        o.fit = topology::ShareBeforeCapacity(o.fit, &*share, *node);
        if (o.fit.fits()) o.share = share->last().kind;
      }
      // Failed only where evicting pods it may preempt would make room (kube-scheduler then
      // preempts), unresolvable otherwise.
      if (topology::PreemptionMayCure(o.fit)) {
        o.fit = preemption().Classify(o.fit, *node);
        if (options.victims && o.fit.verdict == topology::Verdict::kUnschedulable) {
          o.preemption = preemption().Choose(*node, snapshot.disruption_budgets());
        }
      }
      if (with_scores && o.fit.fits()) {
        o.score = uses_dra ? topology::ScoreWithDra(out.demand, ctx, *node, dra)
                           : topology::Score(out.demand, ctx, node->supply, node->occupancy);
      }
    }
    visit(i, o);
  }
  return out;
}

}  // namespace extender
