// Admission budgets: claims a replica admits without writing the usage record each time.
//
// Writing a claim's reservation into its tenant's usage record (webhook/claim_quota.h) costs a
// round trip to the API server and a write to etcd on every ResourceClaim CREATE. Far from the
// quota that exactness is not needed claim by claim, so the write that admits a claim may also
// reserve a budget for the replica that made it: the entry "budget.<replica>" of the record,
// amounts in the same form as a claim's reservation. Every other replica counts it as held, like
// any reservation, so whatever they admit leaves it free. The replica then admits further claims
// of that tenant from the budget in memory, with no I/O, while
//   - the budget covers what it has admitted from it plus the new claim, item by item, and
//   - the budget is younger than kBudgetSeconds, and
//   - its own snapshot (pods and claims it sees, with the claims it admitted and does not see
//     yet) still has room for the claim under the quota: a pod placed since the grant counts.
// Otherwise the claim goes through the record as before, and that write also converts every claim
// admitted from the budget into its own reservation (counted until every replica sees it) and
// replaces the budget: with a new one when the headroom allows, else with none. So that claims
// seldom meet a spent budget, a refill without a claim (RefillClaimBudget) does the same ahead
// of need once TakeRefillAhead says so. The budget stays open while that write is under way:
// the write carries what is left of it into the new budget entry (the old entry counted it
// already), so the claims admitted meanwhile, which it does not convert, stay covered; they are
// spent from the new budget, or, when no new one is granted, covered by the carried part alone
// with no budget open until the next write converts them.
//
// Sizes: a budget takes at most 1/kBudgetShare of the headroom left after the claim that asked,
// per quota item, and at most kBudgetClaims claims like it; none is granted unless it covers one
// more such claim. Near the quota there is therefore no budget and every claim is decided on the
// record, exactly; far from it, one write in up to kBudgetClaims (so that fewer than one claim in
// a hundred waits for a write, and the 99th percentile of admission does not).
//
// Why it stays within the quota across replicas: a budget is written with the record's
// resourceVersion as a precondition, counting everything the record and the snapshot hold; other
// replicas count it whole until the owner replaces it or kReservationGraceSeconds after its grant
// (the owner stops using it after kBudgetSeconds, so a claim admitted from it is counted by the
// budget at least kReservationGraceSeconds - kBudgetSeconds after its admission, and by its own
// reservation once converted). A refill ahead of need writes what is left of the old budget
// into the new entry: the old entry counted it whole, and the grant beside it is sized with it
// held, so what the record holds for the replica covers every claim it admitted and not
// converted, before, during and after the write. The key names the process, not the pod: a
// restarted replica never takes over, or drops, the budget of its previous run; that one expires.
//
// Thread-safe. Refills of one tenant take turns (RefillTurn), so a budget is never replaced by two
// writes at once.
#ifndef GPU_TENANCY_WEBHOOK_CLAIM_BUDGET_H_
#define GPU_TENANCY_WEBHOOK_CLAIM_BUDGET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "topology/policy.h"
#include "topology/quota.h"

namespace webhook {

inline constexpr int64_t kBudgetSeconds = 15;
inline constexpr int64_t kBudgetShare = 4;
inline constexpr int64_t kBudgetClaims = 128;

// The budget a write that admits `requested` may reserve, per item the quota sets (gpu_pods
// aside: claims hold no pods): min(headroom / kBudgetShare, kBudgetClaims x requested), where
// `held_after` is what the tenant holds with the claim admitted; nullopt when that does not cover
// one more claim like `requested` (or `requested` asks nothing the quota limits). Pure.
std::optional<topology::QuotaUsage> BudgetToGrant(const topology::TenantQuota& quota,
                                                  const topology::QuotaUsage& held_after,
                                                  const topology::QuotaUsage& requested);

// The claims admitted from a tenant's budgets whose reservations the record does not hold yet,
// by claim key (namespace.name).
using UnrecordedClaims = std::map<std::string, std::pair<topology::QuotaUsage, int64_t>>;

class ClaimBudgets {
 public:
  // `process_token`: letters, digits and '-' naming this process; the record key is
  // "budget.<token>".
  explicit ClaimBudgets(std::string process_token);
  ClaimBudgets(const ClaimBudgets&) = delete;
  ClaimBudgets& operator=(const ClaimBudgets&) = delete;

  const std::string& record_key() const { return record_key_; }

  // Admits claim `key` from the tenant's budget if it covers `requested` and the budget is
  // younger than kBudgetSeconds at `now_unix`, and if `observed` (what the snapshot sees the
  // tenant hold) plus the claims admitted from budgets the snapshot does not show yet
  // (`in_snapshot` says which it does, by claim key) plus `requested` is within `quota`. A key
  // admitted before is admitted again without counting twice (the API server retried).
  bool TryAdmit(absl::string_view tenant, const topology::TenantQuota& quota,
                const std::string& key, const topology::QuotaUsage& requested,
                const topology::QuotaUsage& observed,
                const std::function<bool(const std::string&)>& in_snapshot, int64_t now_unix);

  // Whether the tenant has a budget open at `now_unix`: without one TryAdmit refuses, so a caller
  // need not count what the snapshot holds for it.
  bool HasOpenBudget(absl::string_view tenant, int64_t now_unix);

  // Whether to refill the tenant's budget ahead of need, before a claim has to wait for the
  // write: true once per budget, when more than half of it is spent on any item or half of its
  // time is gone, so that a single refill is asked for (RefillClaimBudget, off the review's
  // path).
  bool TakeRefillAhead(absl::string_view tenant, const topology::TenantQuota& quota,
                       int64_t now_unix);
  // Whether the refill TakeRefillAhead asked for is still due: no write replaced the budget
  // since.
  bool RefillAheadDue(absl::string_view tenant);

  // The write that admits a claim, while the caller holds RefillTurn(tenant): Close() stops
  // admitting from the current budget and returns the claims the write must convert into
  // reservations; after the write succeeded, Written() forgets those and installs `granted`
  // (none: no budget until the next write). After a failed write nothing is called: the old
  // budget entry still covers the claims, and the next refill converts them.
  UnrecordedClaims Close(absl::string_view tenant);
  void Written(absl::string_view tenant, const UnrecordedClaims& converted,
               const std::optional<topology::QuotaUsage>& granted, int64_t now_unix);

  // A refill ahead of need, while the caller holds RefillTurn(tenant): the budget stays open.
  // BeginRefill returns the claims to convert and what is left of the budget at `now_unix`
  // (nothing once it expired), which the write carries into the new entry. After the write
  // succeeded, RefillWritten forgets the converted claims and opens `carried` + `granted`,
  // the claims admitted since BeginRefill spent from it (no grant: no budget open; the record
  // covers those claims with `carried` until the next write converts them). After a failed
  // write, RefillFailed closes the budget, as a failed write leaves it (its old entry still
  // covers every claim it admitted).
  struct Refill {
    UnrecordedClaims converted;
    topology::QuotaUsage carried;
  };
  Refill BeginRefill(absl::string_view tenant, const topology::TenantQuota& quota,
                     int64_t now_unix);
  void RefillWritten(absl::string_view tenant, const Refill& refill,
                     const std::optional<topology::QuotaUsage>& granted, int64_t now_unix);
  void RefillFailed(absl::string_view tenant);
  common::Mutex& RefillTurn(absl::string_view tenant);

 private:
  struct Tenant {
    std::optional<topology::QuotaUsage> budget;  // open while set
    int64_t granted_unix = 0;
    topology::QuotaUsage spent;            // admitted from `budget`
    topology::QuotaUsage spent_at_refill;  // `spent` when BeginRefill ran
    UnrecordedClaims unrecorded;
    topology::QuotaUsage unrecorded_total;  // what `unrecorded` holds, summed
    bool refill_ahead = false;              // asked for, for the current budget
    std::unique_ptr<common::Mutex> refill_turn = std::make_unique<common::Mutex>();
  };
  Tenant& Of(absl::string_view tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void ForgetConverted(Tenant& t, const UnrecordedClaims& converted);

  const std::string record_key_;
  common::Mutex mu_;
  std::map<std::string, Tenant, std::less<>> tenants_ ABSL_GUARDED_BY(mu_);
};

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_CLAIM_BUDGET_H_
