#include "topology/preemption.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "topology/device_report.h"
#include "topology/dra/extended_resources.h"
#include "topology/occupancy.h"

namespace topology {
namespace {

bool Lists(const std::vector<std::string>& names, absl::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool Matches(const TenantMatch& match, const TenantRef& tenant) {
  if (tenant.tenant && Lists(match.tenants, tenant.name)) return true;
  return tenant.tier && Lists(match.tiers, tenant.tier->name);
}

bool SameTenant(const TenantRef& a, absl::string_view a_ns, const TenantRef& b,
                absl::string_view b_ns) {
  if (a.tenant) return a.tenant == b.tenant;
  return !b.tenant && a_ns == b_ns;  // namespaces of no tenant stand alone
}

}  // namespace

bool MayPreempt(const Policy& policy, const TenantRef& preemptor, absl::string_view preemptor_ns,
                const TenantRef& victim, absl::string_view victim_ns) {
  if (SameTenant(preemptor, preemptor_ns, victim, victim_ns)) return true;
  for (const CrossTenantPreemption& rule : policy.preemption.across_tenants) {
    if ((rule.preemptors.empty() || Matches(rule.preemptors, preemptor)) &&
        Matches(rule.victims, victim)) {
      return true;
    }
  }
  return false;
}

FitResult QuotaBeforeCapacity(const FitResult& fit, PodQuotaCheck* quota, const NodeState& node) {
  if (!quota || fit.verdict == Verdict::kUnresolvable) return fit;
  FitResult over = quota->Check(node.supply, node.facts.labels);
  return over.fits() ? fit : over;
}

bool PreemptionMayCure(const FitResult& rejection) {
  return IsTenantCapRule(rejection.rule) ||
         (rejection.verdict == Verdict::kUnschedulable && rejection.rule != Rule::kUnknownNode);
}

// A node with some pods taken away: its occupancy without them, and what they free of the
// preemptor's tenant's quota. The holds are tracked only for the DRA path, which reads them.
struct PreemptionRoom::Working {
  Working(const NodeState& node, bool track_holds)
      : base(node), occupancy(node.occupancy), track_holds(track_holds) {
    if (track_holds) holds = node.holds;
  }
  // Takes `hold` out (sign -1) or puts it back (+1); `own` is what it frees of the quota, or
  // null when it is another tenant's.
  void Move(const PodHold& hold, const QuotaUsage* own, int sign) {
    ApplyPod(occupancy, hold.demand, base.supply, HeldSharedGpu(hold, base.facts), sign);
    if (own) released.Add(*own, -sign);
    if (!track_holds) return;
    if (sign < 0) {
      holds.erase(std::remove_if(holds.begin(), holds.end(),
                                 [&](const auto& h) { return h.get() == &hold; }),
                  holds.end());
      return;
    }
    for (const auto& h : base.holds) {
      if (h.get() == &hold) holds.push_back(h);
    }
  }

  const NodeState& base;
  NodeOccupancy occupancy;
  bool track_holds;
  std::vector<std::shared_ptr<const PodHold>> holds;
  QuotaUsage released;
};

PreemptionRoom::PreemptionRoom(const GpuDemand& demand, const PodContext& pod,
                               const PodFacts& preemptor, const QuotaUsage* tenant_held,
                               const DraState& dra, TenantOf tenant_of)
    : demand_(demand),
      pod_(pod),
      preemptor_(preemptor),
      tenant_held_(pod.tenant.tenant && !pod.tenant.tenant->quota.empty() ? tenant_held : nullptr),
      dra_(dra),
      tenant_of_(std::move(tenant_of)),
      uses_dra_(DemandUsesDra(demand, dra)) {}

bool PreemptionRoom::MayPreempt(const PodHold& hold) const {
  if (hold.assumed || hold.priority >= preemptor_.priority) return false;
  if (!preemptor_.uid.empty() && hold.uid == preemptor_.uid) return false;
  return topology::MayPreempt(*pod_.policy, pod_.tenant, preemptor_.namespace_name,
                              tenant_of_(hold.namespace_name), hold.namespace_name);
}

std::optional<QuotaUsage> PreemptionRoom::OwnUsage(const PodHold& hold,
                                                   const NodeState& node) const {
  if (!tenant_held_ || tenant_of_(hold.namespace_name).tenant != pod_.tenant.tenant) {
    return std::nullopt;
  }
  return HoldUsage(hold.demand, node.supply, node.facts.labels, *pod_.policy);
}

void PreemptionRoom::EnableReclaim(const ClusterSnapshot& snapshot, const FairShareLedger& ledger,
                                   GuaranteedOn guaranteed_on) {
  reclaim_.emplace(ReclaimState{&snapshot, &ledger, std::move(guaranteed_on), std::nullopt});
}

const BorrowedPod* PreemptionRoom::Reclaimable(const PodHold& hold) const {
  if (!reclaim_ || hold.assumed) return nullptr;
  if (!preemptor_.uid.empty() && hold.uid == preemptor_.uid) return nullptr;
  if (!reclaim_->borrowed) {
    reclaim_->borrowed = FindBorrowedPods(*reclaim_->snapshot, *pod_.policy, *reclaim_->ledger);
  }
  auto it = reclaim_->borrowed->find(hold.uid);
  if (it == reclaim_->borrowed->end() || it->second.tenant == pod_.tenant.name) return nullptr;
  return &it->second;
}

bool PreemptionRoom::MayEvict(const PodHold& hold, const NodeState& node) const {
  return MayPreempt(hold) ||
         (reclaim_ && reclaim_->guaranteed_on(node) && Reclaimable(hold) != nullptr);
}

FitResult PreemptionRoom::Classify(FitResult rejection, const NodeState& node) const {
  // Devices that DRA claims hold are freed when their pods go, which this model does not
  // follow: kube-scheduler's own DRA plugin picks those victims (extender/preempt.h).
  if (uses_dra_ && !IsTenantCapRule(rejection.rule)) return rejection;
  // Whether evicting every pod `may` admits makes room.
  auto helps_with = [&](auto may) {
    // Most nodes hold nothing this pod may evict: found without copying the node.
    auto first = std::find_if(node.holds.begin(), node.holds.end(),
                              [&](const auto& hold) { return may(*hold); });
    if (first == node.holds.end()) return false;
    Working w(node, uses_dra_);
    for (auto it = first; it != node.holds.end(); ++it) {
      if (it != first && !may(**it)) continue;
      std::optional<QuotaUsage> own = OwnUsage(**it, node);
      w.Move(**it, own ? &*own : nullptr, -1);
    }
    std::string unused;
    return Fits(w, unused);
  };
  const bool quota = IsTenantCapRule(rejection.rule);
  bool helps = helps_with([&](const PodHold& hold) { return MayPreempt(hold); });
  bool reclaim = false;
  // Over its cap the pod is above its guarantee too: reclaim is for capacity alone.
  if (!helps && !quota && reclaim_ && reclaim_->guaranteed_on(node)) {
    helps = reclaim = helps_with(
        [&](const PodHold& hold) { return MayPreempt(hold) || Reclaimable(hold) != nullptr; });
  }
  rejection.verdict = helps ? Verdict::kUnschedulable : Verdict::kUnresolvable;
  rejection.preemption = reclaim            ? PreemptionNote::kReclaim
                         : helps && quota   ? PreemptionNote::kOwnPodsFreeQuota
                         : !helps && !quota ? PreemptionNote::kCannotHelp
                                            : PreemptionNote::kNone;
  return rejection;
}

PreemptionChoice PreemptionRoom::Choose(const NodeState& node,
                                        const std::vector<DisruptionBudget>& budgets) const {
  PreemptionChoice choice;
  Working w(node, uses_dra_);
  if (Fits(w, choice.blocked)) {
    choice.possible = true;  // room without anyone leaving
    return choice;
  }
  struct Candidate {
    const PodHold* hold;
    std::optional<QuotaUsage> own;  // what it frees of the preemptor's tenant's quota
    const BorrowedPod* borrowed;    // reclaimable: another tenant's borrowed pod
    bool violates = false;
  };
  const bool reclaiming = reclaim_ && reclaim_->guaranteed_on(node);
  std::vector<Candidate> candidates;
  for (const auto& hold : node.holds) {
    const BorrowedPod* borrowed = reclaiming ? Reclaimable(*hold) : nullptr;
    if (borrowed || MayPreempt(*hold)) {
      candidates.push_back({hold.get(), OwnUsage(*hold, node), borrowed});
    }
  }
  auto move = [&](const Candidate& c, int sign) {
    w.Move(*c.hold, c.own ? &*c.own : nullptr, sign);
  };
  for (const Candidate& c : candidates) move(c, -1);
  if (candidates.empty() || !Fits(w, choice.blocked)) return choice;
  choice.blocked.clear();
  choice.possible = true;
  // The most important first, as kube-scheduler orders them: higher priority first (holds come
  // sorted by namespace and name, which breaks ties the same way every time). Borrowed pods
  // come last, so they are the first to go: the tenant nearest its fair share first, and each
  // tenant's oldest before its newest.
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.hold->priority > b.hold->priority; });
  auto reprieved_first = [](const Candidate& a, const Candidate& b) {
    if (!a.borrowed || !b.borrowed) return !a.borrowed && b.borrowed;
    return std::tie(a.borrowed->above_fair_share, a.borrowed->created) <
           std::tie(b.borrowed->above_fair_share, b.borrowed->created);
  };
  std::stable_sort(candidates.begin(), candidates.end(), reprieved_first);
  std::vector<BudgetedPod> budgeted;
  budgeted.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    budgeted.push_back({c.hold->namespace_name, c.hold->name, &c.hold->labels});
  }
  std::vector<bool> violations = BudgetViolations(budgeted, budgets);
  for (size_t i = 0; i < candidates.size(); ++i) candidates[i].violates = violations[i];
  // Reprieve: put each back and keep it unless the preemptor stops fitting; pods whose eviction
  // breaks a budget get the first chance to stay, then the rest, then the borrowed in order.
  std::string unused;
  auto reprieve = [&](const Candidate& c) {
    move(c, +1);
    if (Fits(w, unused)) return;
    move(c, -1);
    choice.victims.push_back(c.hold);
    choice.pdb_violations += c.violates;
  };
  for (bool violating : {true, false}) {
    for (const Candidate& c : candidates) {
      if (!c.borrowed && c.violates == violating) reprieve(c);
    }
  }
  for (const Candidate& c : candidates) {
    if (c.borrowed) reprieve(c);
  }
  std::sort(choice.victims.begin(), choice.victims.end(), [](const PodHold* a, const PodHold* b) {
    return std::tie(a->namespace_name, a->name, a->uid) <
           std::tie(b->namespace_name, b->name, b->uid);
  });
  return choice;
}

bool PreemptionRoom::Fits(const Working& w, std::string& why) const {
  // Quota before capacity, as everywhere.
  if (tenant_held_) {
    QuotaUsage held = *tenant_held_;
    held.Add(w.released, -1);
    QuotaVerdict verdict = CheckQuota(pod_.tenant.tenant->quota, held,
                                      UsageOf(demand_, w.base.facts.labels, *pod_.policy));
    if (!verdict.ok) {
      why = TenantCapRejection(*pod_.tenant.tenant, verdict).Reason();
      return false;
    }
  }
  FitResult fit;
  if (uses_dra_) {
    NodeState node{w.base.facts, w.base.supply, w.occupancy, w.holds, {}};
    fit = FitWithDra(demand_, pod_, node, dra_);
    if (!fit.fits()) why = fit.Reason();  // before `node`, which its views point into, goes
  } else {
    fit = Fit(demand_, pod_, w.base.supply, w.occupancy);
    if (!fit.fits()) why = fit.Reason();
  }
  return fit.fits();
}

}  // namespace topology
