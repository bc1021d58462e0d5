// Tenant quotas for DRA claims, enforced at admission. kube-scheduler's DRA allocator places
// claims without calling the extender, so the validating webhook is the one gate: a
// ResourceClaim CREATE that would take its tenant past a quota item is denied (rule
// "tenant-quota"), whatever quotaEnforcement says for pods: nothing later checks a claim's
// quota. Counted by topology::CountClaimQuota. A template's claims are judged when
// kube-controller-manager creates them, as ResourceClaim CREATEs.
//
// Race-free across replicas, the way Kubernetes' ResourceQuota admission is: each tenant has a
// usage record (kube/usage_record.h keeps it in a ConfigMap) listing what admitted claims
// reserve; a claim is admitted only by writing its reservation with the record's
// resourceVersion as a precondition, and a conflict means "decide again on the new record".
// Reservations are counted until every replica's watch has seen the claim: a replica counts a
// claim from its own snapshot once it sees it, and a reservation from the record only while it
// does not. A reservation older than kReservationGraceSeconds is dropped at the next write:
// by then the claim is in every snapshot, or it was never created or is gone (the record is
// repaired from the claims themselves).
//
// Far from the quota, one write may also reserve an admission budget from which this replica
// admits further claims without writing (webhook/claim_budget.h).
//
// The decision is pure (DecideClaimQuota); the record's I/O is the caller's RecordUpdate.
#ifndef GPU_TENANCY_WEBHOOK_CLAIM_QUOTA_H_
#define GPU_TENANCY_WEBHOOK_CLAIM_QUOTA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "common/mutex.h"
#include "topology/dra/claim_quota.h"
#include "topology/dra/model.h"
#include "topology/policy.h"
#include "topology/quota.h"
#include "topology/snapshot.h"
#include "webhook/claim_budget.h"
#include "webhook/verdict.h"

namespace webhook {

// How long a reservation outlives its admission: longer than any watch lag between replicas.
inline constexpr int64_t kReservationGraceSeconds = 60;

// One admitted claim's share, as the record keeps it.
struct ClaimReservation {
  topology::QuotaUsage usage;
  int64_t admitted_unix = 0;

  bool operator==(const ClaimReservation&) const = default;
};

// The record's data: one entry per claim, keyed "<namespace>.<name>" (both are DNS names, so
// the key is a valid ConfigMap key and unique), the value "t=<unix> gpus=1 mig/3g.40gb=2
// slices=6 memMi=81920".
using RecordData = std::map<std::string, std::string>;
std::string ClaimKey(absl::string_view namespace_name, absl::string_view name);
std::string EncodeReservation(const ClaimReservation& reservation);
// InvalidArgument naming the bad field; a record edited by hand is repaired by dropping it.
absl::StatusOr<ClaimReservation> DecodeReservation(absl::string_view text);
// The record's name for a tenant: "gpu-tenancy-usage-<tenant>", the tenant name lowercased with
// anything outside [a-z0-9.-] as '-'.
std::string UsageRecordName(absl::string_view tenant);

struct ClaimQuotaInput {
  const topology::TenantQuota* quota = nullptr;  // required
  // What the replica's snapshot sees the tenant hold (ObservedClaimHeld) and the keys of the
  // tenant's claims it sees.
  topology::QuotaUsage observed;
  const absl::flat_hash_set<std::string>* observed_claims = nullptr;
  std::string key;                 // the claim being admitted; empty: none, a budget refill alone
  topology::QuotaUsage requested;  // the claim's, or the shape a refill sizes the budget by
  int64_t now_unix = 0;
  // Admission budgets (webhook/claim_budget.h), when `grant_budget`: this replica's budget entry
  // is replaced by this write, with a new budget when BudgetToGrant allows, and the claims
  // admitted from the old one (`converted`) are written as their own reservations.
  bool grant_budget = false;
  std::string own_budget_key;
  const UnrecordedClaims* converted = nullptr;
  // With `grant_budget`, a refill ahead of need: what is left of the budget being replaced
  // (ClaimBudgets::BeginRefill). The new entry carries it beside the grant, which is sized with
  // it held, so the claims admitted from it while the write is under way stay covered.
  const topology::QuotaUsage* carried = nullptr;
};

struct ClaimQuotaDecision {
  topology::QuotaVerdict verdict;  // !ok: over quota: denied
  bool admit = true;
  // The record to write when admitted: stale and unreadable entries dropped, this claim's
  // reservation added (replacing one under the same key: the API server retried the call).
  std::optional<RecordData> write;
  // Granted with `write` (grant_budget only); the entry also holds `carried`.
  std::optional<topology::QuotaUsage> budget;
};
ClaimQuotaDecision DecideClaimQuota(const ClaimQuotaInput& input, const RecordData& record);

// Atomically updates the record named `record_name`: calls `decide` with its data (empty when
// there is none) and, if it returns data, writes that only if the record did not change since
// it was read; on a conflict reads and decides again (bounded). With `dry_run` nothing is
// written. Errors: the record could not be read or written.
using RecordUpdate = std::function<absl::Status(
    const std::string& record_name,
    const std::function<std::optional<RecordData>(const RecordData&)>& decide, bool dry_run)>;

// topology::CountClaimQuota remembered by the claim's requests. The count depends on nothing
// else than the requests and the device set (devices and classes), and it evaluates every
// request's selectors against every device the cluster publishes: milliseconds at 10,000
// devices, on every claim CREATE and for every pending claim of the tenant. A tenant's claims
// come from a few templates, so a few request shapes answer nearly all of them. Forgotten
// whenever the device set changes. Thread-safe.
class ClaimCountCache {
 public:
  topology::ClaimQuotaCount Count(const topology::DraClaim& claim, const topology::DraState& dra);
  // The count if this shape was counted over these devices, else nullopt (nothing is counted).
  std::optional<topology::ClaimQuotaCount> Cached(const topology::DraClaim& claim,
                                                  const topology::DraState& dra);

 private:
  // Forgets every shape first when `dra` publishes other devices than the cached counts saw.
  std::optional<topology::ClaimQuotaCount> FindLocked(const topology::DraClaim& claim,
                                                      const topology::DraState& dra)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static constexpr size_t kShapes = 64;  // past that, the oldest shape is forgotten
  struct Entry {
    std::vector<topology::DraRequest> requests;
    topology::ClaimQuotaCount count;
  };
  common::Mutex mu_;
  // Held, so that a new set is never mistaken for a freed one at the same address.
  std::shared_ptr<const topology::DraDeviceSet> device_set_ ABSL_GUARDED_BY(mu_);
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

// On an event loop (ClaimQuotaContext::stopped_for_io set) a claim of a tenant whose namespaces
// hold more claims than this for ObservedClaimHeld to visit goes to a worker (an allocated one
// takes about 6 ns with warm caches, a pending one several times that), and a loop must not be
// held much longer than a review takes.
inline constexpr size_t kMostClaimsCountedOnALoop = 5000;

// How many claims the snapshot holds in the tenant's namespaces; `pending_only`: only those not
// allocated, all that ObservedClaimHeld visits without memory and without the claims' keys.
size_t ClaimsInTenantNamespaces(const topology::ClusterSnapshot& snapshot,
                                const topology::Policy& policy, absl::string_view tenant,
                                bool pending_only = false);

struct ClaimQuotaContext;

// How a review counts a claim's shape (CountClaimQuota): through the context's cache when it
// has one. On an event loop (stopped_for_io set) only from that cache: counting a shape evaluates
// every published device, milliseconds in a large cluster, so nullopt when it was never counted.
std::optional<topology::ClaimQuotaCount> CountShape(const ClaimQuotaContext& context,
                                                    const topology::DraClaim& claim,
                                                    const topology::DraState& dra);

// What the snapshot says a tenant holds, as claim admission counts it: TenantUsage (pods and
// allocated claims), the GPU memory of allocated claims (unless `without_memory`: a quota that
// does not limit memory need not look up every allocated claim's devices, nor, without
// `observed_claims`, visit them), and each pending claim at its CountShape bound; nullopt when
// CountShape has none for one. `observed_claims` gets the keys of the tenant's claims.
std::optional<topology::QuotaUsage> ObservedClaimHeld(
    const topology::ClusterSnapshot& snapshot, const topology::Policy& policy,
    absl::string_view tenant, absl::flat_hash_set<std::string>* observed_claims,
    const ClaimQuotaContext& context, bool without_memory = false);

// Whether the snapshot holds the claim of ClaimKey `key`.
bool SnapshotHoldsClaim(const topology::ClusterSnapshot& snapshot, absl::string_view key);

// How Review reaches the record: unset `update` counts against the snapshot alone (serve
// --demo / --cluster-file).
struct ClaimQuotaContext {
  RecordUpdate update;
  int64_t now_unix = 0;
  ClaimCountCache* counts = nullptr;  // unset: every claim counted afresh
  // With `update`: admission budgets for tenants without fair sharing; unset: every claim is
  // written into the record.
  ClaimBudgets* budgets = nullptr;
  // Set: the review must not wait on I/O (it runs on a connection's event loop). A claim that
  // can only be decided on the record, or whose shape `counts` has not counted yet, then sets
  // *stopped_for_io, reserves nothing and adds no finding; the caller discards the outcome and
  // reviews again with I/O allowed.
  bool* stopped_for_io = nullptr;
  // With `budgets`: called (on the review's thread, so it must only hand the work on) when a
  // claim admitted from a budget leaves it due for a refill ahead of need; the callee runs
  // RefillClaimBudget off the review's path. Unset: a budget is refilled by the claim that
  // finds it spent.
  std::function<void(const std::string& tenant, const topology::QuotaUsage& shape)> refill_ahead;
};

// Replaces the tenant's budget (ClaimBudgets::TakeRefillAhead asked for it) through its usage
// record, as a claim's write would, sized by `shape` and admitting no claim; nothing when the
// tenant no longer has budgets or another write replaced the budget first. Errors: the record
// could not be read or written (the budget then stays closed).
absl::Status RefillClaimBudget(const topology::ClusterSnapshot& snapshot,
                               const topology::Policy& policy, const std::string& tenant,
                               const topology::QuotaUsage& shape, const ClaimQuotaContext& context);

// Whether a claim of this tenant is counted against a usage record: the tenant has a quota, or
// a fair share whose borrowing the record keeps. CheckClaimQuota does nothing for any other.
bool ClaimCountsAgainstRecord(const topology::TenantRef& tenant);

// The quota check of a ResourceClaim CREATE in namespace `namespace_name` (`object` is the
// claim, kube-scheduler's own for a pod's extended resource included). Adds nothing for a
// tenant without a quota or a claim within the quota; else the tenant-quota violation. A dry
// run reads the record but never writes it. When the record cannot be updated the claim is
// denied: the quota cannot be vouched for.
void CheckClaimQuota(const common::JsonValue& object, absl::string_view namespace_name,
                     const topology::Policy& policy, const topology::TenantRef& tenant,
                     const topology::ClusterSnapshot& snapshot, const ClaimQuotaContext& context,
                     bool dry_run, std::vector<Violation>& violations,
                     std::vector<std::string>& warnings);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_CLAIM_QUOTA_H_
