// The contract after admission. Admission is a gate at one moment; the contract must hold all
// the time. Pods and claims reach GPUs past the webhook (an outage under failurePolicy: Ignore,
// a namespace labelled off, a manual Binding, objects older than the service, a door not yet
// closed) and a policy reload can demote a tenant or lower its quota. These checks judge what
// is placed against the current policy:
//   - a bound pod the contract judges (topology::ContractPods) with the admission rule table's
//     own rows (webhook/rule_table.h, phase kAfterAdmission), so a rule added for admission is
//     checked after it too;
//   - what only a placed object can break: the pool its node gives (rule tier-pool), the devices
//     an allocated claim holds (claim-device: mode, MIG profile, memory), a tenant's quota (the
//     newest pods beyond it, tenant-quota);
//   - a MIG node about to be re-cut under what runs there (mig-drift).
// Pure: a snapshot and a policy in, violations out.
//
//   for (const ContractViolation& v : CheckPod(*facts, snapshot, policy)) ...
#ifndef GPU_TENANCY_GUARD_CONTRACT_H_
#define GPU_TENANCY_GUARD_CONTRACT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "topology/dra/model.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/snapshot.h"

namespace guard {

enum class ObjectKind { kPod, kResourceClaim, kNode };
absl::string_view KindName(ObjectKind kind);  // "Pod", "ResourceClaim", "Node"
// "Pod acme/train-0", "Node mig-a": how violations of one object are filed and found.
std::string ObjectKey(ObjectKind kind, absl::string_view namespace_name, absl::string_view name);

inline constexpr absl::string_view kTierPoolRule = "tier-pool";
inline constexpr absl::string_view kClaimDeviceRule = "claim-device";
inline constexpr absl::string_view kQuotaRule = "tenant-quota";
inline constexpr absl::string_view kMigDriftRule = "mig-drift";

// Every rule id the guard can report: the admission rows it runs on placed pods, then its own.
std::vector<std::string> GuardRuleIds();

// InvalidArgument naming "guard.actions.<rule>" for an action on a rule the guard never
// reports: a misspelt id would otherwise leave the evictions asked for off without a word.
absl::Status CheckGuardActions(const topology::GuardPolicy& guard);

struct ContractViolation {
  ObjectKind kind = ObjectKind::kPod;
  std::string namespace_name, name;
  std::string uid;      // the object's UID ("" when not known)
  std::string node;     // where it runs (a pod) or is allocated (a claim); "" when not tied
  std::string tenant;   // as the namespace resolves now
  std::string rule;     // the rule id, as admission's
  std::string message;  // one line, starting "[rule] ", ending with what to do
  std::string created;  // the object's creationTimestamp, for newest first

  // "Pod acme/train-0": one object's violations share it.
  std::string ObjectKey() const;
  bool operator==(const ContractViolation&) const = default;
};

// The pod's violations now. `pod` is one of snapshot.contract_pods().
std::vector<ContractViolation> CheckPod(const topology::PodFacts& pod,
                                        const topology::ClusterSnapshot& snapshot,
                                        const topology::Policy& policy);

// An allocated claim's violations: the devices it holds, read as the tenant's tier and limits
// allow (a device several claims may hold at once is time-slicing; a MIG device's profile; a
// device's memory against gpuMemoryPerPod, which admission may have left to the devices), its
// classes as the policy maps them. Nothing for a claim that is not allocated.
std::vector<ContractViolation> CheckClaim(const topology::DraClaim& claim,
                                          const topology::ClusterSnapshot& snapshot,
                                          const topology::Policy& policy);

// A tenant past its quota: its newest GPU pods (by creationTimestamp, then name), each beyond
// what the quota holds, so that without them it is within it again. Only items the quota
// names; nothing for a tenant within its quota or without one.
std::vector<ContractViolation> CheckQuota(absl::string_view tenant,
                                          const topology::ClusterSnapshot& snapshot,
                                          const topology::Policy& policy);

// A MIG node whose geometry differs from what its nvidia.com/mig.config predicts while
// mig-manager reports success (topology/mig_drift.h): mig-manager will re-cut it, destroying
// what runs there. No tenant: it is the platform's.
std::vector<ContractViolation> CheckNode(const topology::NodeState& node);

// Everything at once, without a ledger (`audit`, a cluster file): every contract pod, every
// allocated claim, every tenant's quota; by object and rule.
std::vector<ContractViolation> CheckAll(const topology::ClusterSnapshot& snapshot,
                                        const topology::Policy& policy);

}  // namespace guard

#endif  // GPU_TENANCY_GUARD_CONTRACT_H_
