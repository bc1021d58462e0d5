// One pod's fair-sharing check across many nodes (a filter's candidates, bind's one), as
// PodQuotaCheck is for its quota: what the pod adds to its tenant's holdings depends on how a
// node offers what it asks for, and most nodes offer it alike, so the verdict is kept while
// that does not change. Pure.
//
//   PodShareCheck share(ledger, policy, tenant, demand, held);
//   FitResult r = ShareBeforeCapacity(fit, &share, node);   // the tenant's cap checked before
//   if (r.fits()) ... share.last().kind says guaranteed or borrowed
#ifndef GPU_TENANCY_TOPOLOGY_FAIR_SHARE_CHECK_H_
#define GPU_TENANCY_TOPOLOGY_FAIR_SHARE_CHECK_H_

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "topology/demand.h"
#include "topology/fair_share.h"
#include "topology/fit.h"
#include "topology/snapshot.h"

namespace topology {

class PodShareCheck {
 public:
  // `tenant` takes part in fair sharing; `held` is what it holds now (TenantUsage). The ledger,
  // the policy, the tenant and the demand must outlive the check.
  PodShareCheck(const FairShareLedger& ledger, const Policy& policy, const Tenant& tenant,
                const GpuDemand& demand, QuotaUsage held);

  // Fits (last() says guaranteed or borrowed) or the rejection: Rule::kGroupLimit or
  // kBorrowOwed, kUnresolvable (evicting pods on a node gives nothing back to what the cluster
  // owes). The rejection's views point into the check, which keeps every reason it gave.
  FitResult Check(const NodeSupply& supply, const Labels& node_labels);
  const ShareVerdict& last() const { return last_; }
  // Whether the pod is within its tenant's guarantee on this node (reclaim may then help it).
  bool GuaranteedOn(const NodeSupply& supply, const Labels& node_labels);

 private:
  const FairShareLedger& ledger_;
  const Policy& policy_;
  const Tenant& tenant_;
  const GpuDemand& demand_;
  QuotaUsage held_;
  std::vector<std::pair<ResourceKind, absl::string_view>> last_offer_, offer_;
  bool checked_ = false;
  ShareVerdict last_;
  FitResult last_fit_;
  std::deque<std::string> reasons_;  // stable addresses for the rejections' views
};

// Fair sharing after the tenant's own cap, before capacity: an unresolvable fit or a cap
// rejection stands; otherwise a refusal of fair sharing is the answer whatever the node's
// free capacity, and else the fit. Null `share`: the fit as it is.
FitResult ShareBeforeCapacity(const FitResult& fit, PodShareCheck* share, const NodeState& node);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_FAIR_SHARE_CHECK_H_
