// Preemption under the tenants' contract. kube-scheduler preempts with its in-tree view only
// (node-level counts of extended resources; nothing of tiers, quotas, per-GPU memory, MIG
// placement or tenants), then asks the extender to keep, change or drop each node's victims.
// Everything the extender decides about it is here, pure:
//
//   - who may preempt whom: a pod may preempt lower-priority pods of its own tenant, and pods
//     of other tenants only where policy.preemption opens it (MayPreempt);
//   - whether preemption can help on a node (PreemptionRoom::Classify): the filter sends a
//     node to FailedNodes only when evicting pods this pod may preempt would make room under
//     our model, quota included, and to FailedAndUnresolvableNodes otherwise, so kube-scheduler
//     never evicts for a pod we would still refuse. Quota comes before capacity: a pod past
//     its tenant's quota is unresolvable on every node, except where evicting the same
//     tenant's lower-priority pods on that node brings it back under;
//   - the victims (PreemptionRoom::Choose), chosen as kube-scheduler chooses its own (remove
//     every pod that may go, then reprieve the most important ones first: budget-violating
//     before the rest, higher priority before lower) but judged by our fit and quota, so the
//     set is one the preemptor really fits after;
//   - fair sharing's reclaim (EnableReclaim): a pod within its tenant's guarantee may also
//     evict other tenants' borrowed pods (topology/fair_share.h), whatever their priority,
//     never a pod within its own tenant's guarantee. Borrowed pods go before anyone else: those
//     of the tenant furthest above its fair share first, its newest first. The rule above
//     stays for every other pod.
//
//   PreemptionRoom room(demand, ctx, pod, &held, snapshot.dra(), tenant_of);
//   FitResult r = room.Classify(rejection, node);        // filter, bind, explain
//   PreemptionChoice c = room.Choose(node, budgets);     // the preempt verb, explain
#ifndef GPU_TENANCY_TOPOLOGY_PREEMPTION_H_
#define GPU_TENANCY_TOPOLOGY_PREEMPTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/disruption_budget.h"
#include "topology/dra/model.h"
#include "topology/fair_share.h"
#include "topology/fit.h"
#include "topology/policy.h"
#include "topology/quota.h"
#include "topology/snapshot.h"

namespace topology {

// Whether a pod of `preemptor` (in namespace `preemptor_ns`) may preempt a lower-priority pod
// of `victim` (in `victim_ns`). Namespaces of no tenant are each their own tenant.
bool MayPreempt(const Policy& policy, const TenantRef& preemptor, absl::string_view preemptor_ns,
                const TenantRef& victim, absl::string_view victim_ns);

// Quota before capacity: the node's verdict for a pod whose fit there is `fit`, with the
// tenant's quota checked by `quota` (null: no quota). An unresolvable fit stands; otherwise a
// quota the pod would pass is the rejection, whatever the node's free capacity (Classify then
// says whether the tenant's own pods there could make room in it). Filter and bind both decide
// with it.
FitResult QuotaBeforeCapacity(const FitResult& fit, PodQuotaCheck* quota, const NodeState& node);

// True for a rejection that evicting pods might cure: capacity other pods hold, or the
// tenant's quota (its own pods may free it). The fit's other verdicts are final.
bool PreemptionMayCure(const FitResult& rejection);

// The victims for one node, or why there are none.
struct PreemptionChoice {
  // False when no set of pods this pod may preempt makes room; `blocked` then says what still
  // does not fit with all of them gone.
  bool possible = false;
  std::string blocked;
  std::vector<const PodHold*> victims;  // sorted by namespace and name; empty when it fits now
  int pdb_violations = 0;
};

class PreemptionRoom {
 public:
  // The tenant a namespace belongs to (ResolveTenant with the snapshot's labels). Kept by the
  // room, so a lambda written in the constructor call is fine.
  using TenantOf = std::function<TenantRef(absl::string_view namespace_name)>;

  // `tenant_held` is what the preemptor's tenant holds (TenantUsage), or null when it has no
  // quota. Everything else passed by reference must outlive the room.
  PreemptionRoom(const GpuDemand& demand, const PodContext& pod, const PodFacts& preemptor,
                 const QuotaUsage* tenant_held, const DraState& dra, TenantOf tenant_of);

  // `rejection` is the node's failed fit or quota verdict (PreemptionMayCure). Returns it as
  // kUnschedulable when evicting pods this pod may preempt would make room, fit and quota both,
  // and as kUnresolvable otherwise; the note says which. A pod whose devices come from DRA
  // (uses_dra()) keeps a capacity rejection as it is: what evicting a claim's pod frees is
  // kube-scheduler's DRA plugin's to judge.
  FitResult Classify(FitResult rejection, const NodeState& node) const;

  // The victims on `node` for this pod: as small as kube-scheduler's reprieve makes them, all
  // pods it may preempt. `budgets` are the cluster's PodDisruptionBudgets.
  PreemptionChoice Choose(const NodeState& node,
                          const std::vector<DisruptionBudget>& budgets) const;

  // True when `hold` is a pod this pod may preempt: lower priority, confirmed by the watch (an
  // assumed pod is mid-bind), and a tenant the policy lets it preempt.
  bool MayPreempt(const PodHold& hold) const;
  bool uses_dra() const { return uses_dra_; }

  // Fair sharing's reclaim for a preemptor whose tenant takes part: on nodes where
  // `guaranteed_on` says the pod is within its tenant's guarantee, other tenants' borrowed pods
  // (FindBorrowedPods over `snapshot` and `ledger`, found on first need) may go too. The
  // snapshot and the ledger must outlive the room.
  using GuaranteedOn = std::function<bool(const NodeState& node)>;
  void EnableReclaim(const ClusterSnapshot& snapshot, const FairShareLedger& ledger,
                     GuaranteedOn guaranteed_on);
  // MayPreempt, or a borrowed pod this pod may reclaim on `node`.
  bool MayEvict(const PodHold& hold, const NodeState& node) const;

 private:
  struct Working;
  // The borrowed pod `hold` is, when this pod may reclaim it (on a node where it is within its
  // guarantee); null otherwise.
  const BorrowedPod* Reclaimable(const PodHold& hold) const;
  // What `hold` frees of the preemptor's tenant's quota: nullopt for another tenant's pod, or
  // when the tenant has no quota.
  std::optional<QuotaUsage> OwnUsage(const PodHold& hold, const NodeState& node) const;
  // Whether the preemptor fits the working node, fit and quota; `why` says why not.
  bool Fits(const Working& node, std::string& why) const;

  const GpuDemand& demand_;
  const PodContext& pod_;
  const PodFacts& preemptor_;
  const QuotaUsage* tenant_held_;
  const DraState& dra_;
  TenantOf tenant_of_;
  bool uses_dra_;
  struct ReclaimState {
    const ClusterSnapshot* snapshot;
    const FairShareLedger* ledger;
    GuaranteedOn guaranteed_on;
    std::optional<BorrowedPods> borrowed;  // found on first need
  };
  mutable std::optional<ReclaimState> reclaim_;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PREEMPTION_H_
