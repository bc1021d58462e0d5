#include "topology/fair_share_check.h"

#include <utility>

namespace topology {

PodShareCheck::PodShareCheck(const FairShareLedger& ledger, const Policy& policy,
                             const Tenant& tenant, const GpuDemand& demand, QuotaUsage held)
    : ledger_(ledger), policy_(policy), tenant_(tenant), demand_(demand), held_(std::move(held)) {}

FitResult PodShareCheck::Check(const NodeSupply& supply, const Labels& node_labels) {
  offer_.clear();
  for (const ResourceCount& device : demand_.devices) {
    const OfferedResource* r = supply.Find(device);
    offer_.emplace_back(r ? r->kind : ResourceKind::kWholeGpu,
                        r ? absl::string_view(r->mig_profile) : absl::string_view());
  }
  if (checked_ && offer_ == last_offer_) return last_fit_;
  checked_ = true;
  std::swap(last_offer_, offer_);
  last_ = ClassifyRequest(ledger_, policy_, tenant_.name, held_,
                          UsageOf(demand_, node_labels, policy_));
  last_fit_ = FitResult{};
  if (last_.ok()) return last_fit_;
  last_fit_.verdict = Verdict::kUnresolvable;
  last_fit_.rule = last_.kind == ShareKind::kGroupLimit ? Rule::kGroupLimit : Rule::kBorrowOwed;
  last_fit_.subject = tenant_.name;
  last_fit_.resource = reasons_.emplace_back(last_.item);
  last_fit_.requested = last_.requested;
  last_fit_.detail = reasons_.emplace_back(last_.Reason(tenant_.name));
  return last_fit_;
}

bool PodShareCheck::GuaranteedOn(const NodeSupply& supply, const Labels& node_labels) {
  Check(supply, node_labels);
  return last_.kind == ShareKind::kGuaranteed;
}

FitResult ShareBeforeCapacity(const FitResult& fit, PodShareCheck* share, const NodeState& node) {
  if (!share || fit.verdict == Verdict::kUnresolvable || IsTenantCapRule(fit.rule)) return fit;
  FitResult refused = share->Check(node.supply, node.facts.labels);
  return refused.fits() ? fit : refused;
}

}  // namespace topology
