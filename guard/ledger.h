// The contract's violations as they stand, followed from snapshot to snapshot. Each update
// judges only what changed since the last one (guard/contract.h): the contract pods and claims
// whose objects differ (PersistentMap::ForEachDifference, DraClaimSet::ForEachDifference), the
// pods on nodes whose facts changed (a pool label, say), and the quota of every tenant those
// belong to; a new policy, new namespace labels or `full` judge everything. Each violation keeps
// the time it was first seen; one that no longer holds is dropped. Pure: the caller passes the
// time and the snapshots.
//
//   ContractLedger ledger;
//   ContractLedger::Changes c = ledger.Update(state->snapshot, state->policy, now, false);
//   for (const Tracked& t : c.started) RecordEvent(t.violation);
#ifndef GPU_TENANCY_GUARD_LEDGER_H_
#define GPU_TENANCY_GUARD_LEDGER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "guard/contract.h"
#include "topology/policy.h"
#include "topology/snapshot.h"

namespace guard {

struct Tracked {
  ContractViolation violation;
  int64_t since_unix = 0;  // when it was first seen

  bool operator==(const Tracked&) const = default;
};

class ContractLedger {
 public:
  struct Changes {
    std::vector<Tracked> started;          // new since the last update
    std::vector<ContractViolation> ended;  // held before, not now
    size_t judged = 0;                     // pods, claims and tenants judged
    bool full = false;                     // everything was judged
  };

  Changes Update(std::shared_ptr<const topology::ClusterSnapshot> snapshot,
                 std::shared_ptr<const topology::Policy> policy, int64_t now_unix, bool full);

  // Every violation, by object and rule.
  std::vector<Tracked> Current() const;
  // Those of one object ("Pod acme/train-0", ContractViolation::ObjectKey).
  std::vector<Tracked> Of(absl::string_view object_key) const;
  size_t size() const;

 private:
  // Replaces the violations filed under `key` in `table` with `now`, keeping the first-seen time
  // of those that stay and noting what started and ended.
  void File(absl::flat_hash_map<std::string, std::vector<Tracked>>& table, const std::string& key,
            std::vector<ContractViolation> now, int64_t now_unix, Changes& changes);

  std::shared_ptr<const topology::ClusterSnapshot> last_;
  std::shared_ptr<const topology::Policy> last_policy_;
  // Pods and claims by ObjectKey; quotas by tenant (a quota's violations span its pods).
  absl::flat_hash_map<std::string, std::vector<Tracked>> objects_;
  absl::flat_hash_map<std::string, std::vector<Tracked>> quotas_;
  // Where each judged pod runs, so a node's changed facts re-judge its pods.
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> pods_on_node_;
};

}  // namespace guard

#endif  // GPU_TENANCY_GUARD_LEDGER_H_
