#include "webhook/claim_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace webhook {
namespace {

// Calls `visit(quota_item, held_item, requested_item, budget_item)` for every item the quota
// sets that a claim can hold (every item but gpu_pods), with `budget` the usage that holds the
// budget's amounts.
template <typename Visit>
void ForEachClaimItem(const topology::TenantQuota& quota, const topology::QuotaUsage& held,
                      const topology::QuotaUsage& requested, topology::QuotaUsage& budget,
                      Visit visit) {
  auto at = [](const auto& map, const std::string& key) {
    auto it = map.find(key);
    return it == map.end() ? int64_t{0} : it->second;
  };
  if (quota.gpus) visit(*quota.gpus, held.gpus, requested.gpus, budget.gpus);
  for (const auto& [profile, limit] : quota.mig_instances) {
    visit(limit, at(held.mig_instances, profile), at(requested.mig_instances, profile),
          budget.mig_instances[profile]);
  }
  if (quota.mig_compute_slices) {
    visit(*quota.mig_compute_slices, held.mig_compute_slices, requested.mig_compute_slices,
          budget.mig_compute_slices);
  }
  if (quota.shared_replicas) {
    visit(*quota.shared_replicas, held.shared_replicas, requested.shared_replicas,
          budget.shared_replicas);
  }
  if (quota.gpu_memory_mib) {
    visit(*quota.gpu_memory_mib, held.gpu_memory_mib, requested.gpu_memory_mib,
          budget.gpu_memory_mib);
  }
}

// The budget as a quota of its own: the items the tenant's quota sets, at the budget's amounts.
topology::TenantQuota BudgetLimits(const topology::TenantQuota& quota,
                                   const topology::QuotaUsage& budget) {
  topology::TenantQuota limits;
  if (quota.gpus) limits.gpus = budget.gpus;
  for (const auto& [profile, limit] : quota.mig_instances) {
    auto it = budget.mig_instances.find(profile);
    limits.mig_instances[profile] = it == budget.mig_instances.end() ? 0 : it->second;
  }
  if (quota.mig_compute_slices) limits.mig_compute_slices = budget.mig_compute_slices;
  if (quota.shared_replicas) limits.shared_replicas = budget.shared_replicas;
  if (quota.gpu_memory_mib) limits.gpu_memory_mib = budget.gpu_memory_mib;
  return limits;
}

// What is left of `budget` once `spent` is admitted from it, on the items the quota sets.
topology::QuotaUsage LeftOf(const topology::TenantQuota& quota, const topology::QuotaUsage& budget,
                            const topology::QuotaUsage& spent) {
  topology::QuotaUsage left;
  ForEachClaimItem(quota, spent, budget, left,
                   [](int64_t, int64_t spent_item, int64_t budget_item, int64_t& amount) {
                     amount = std::max<int64_t>(0, budget_item - spent_item);
                   });
  std::erase_if(left.mig_instances, [](const auto& entry) { return entry.second == 0; });
  return left;
}

}  // namespace

std::optional<topology::QuotaUsage> BudgetToGrant(const topology::TenantQuota& quota,
                                                  const topology::QuotaUsage& held_after,
                                                  const topology::QuotaUsage& requested) {
  topology::QuotaUsage budget;
  bool covers_one_more = true;
  ForEachClaimItem(quota, held_after, requested, budget,
                   [&](int64_t limit, int64_t held, int64_t asked, int64_t& amount) {
                     const int64_t headroom = std::max<int64_t>(0, limit - held);
                     amount = std::min(headroom / kBudgetShare, asked * kBudgetClaims);
                     if (amount < asked) covers_one_more = false;
                   });
  if (!covers_one_more) return std::nullopt;
  // Profiles the claim does not ask for get nothing: drop their zero entries, so that the
  // budget reads as the record would write it.
  std::erase_if(budget.mig_instances, [](const auto& entry) { return entry.second == 0; });
  return budget;
}

ClaimBudgets::ClaimBudgets(std::string process_token)
    : record_key_(absl::StrCat("budget.", process_token)) {}

ClaimBudgets::Tenant& ClaimBudgets::Of(absl::string_view tenant) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) it = tenants_.try_emplace(std::string(tenant)).first;
  return it->second;
}

bool ClaimBudgets::TryAdmit(absl::string_view tenant, const topology::TenantQuota& quota,
                            const std::string& key, const topology::QuotaUsage& requested,
                            const topology::QuotaUsage& observed,
                            const std::function<bool(const std::string&)>& in_snapshot,
                            int64_t now_unix) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  if (t.unrecorded.count(key)) return true;  // admitted before; the API server asks again
  if (!t.budget || now_unix - t.granted_unix >= kBudgetSeconds) return false;
  if (!topology::CheckQuota(BudgetLimits(quota, *t.budget), t.spent, requested).ok) return false;
  // Adding every unrecorded claim to what the snapshot shows counts twice those it shows
  // already: when even that fits, the exact sum does, and no claim is looked up (far from the
  // quota, the common case; a budget may have a hundred claims to look up).
  topology::QuotaUsage held = observed;
  held.Add(t.unrecorded_total);
  if (!topology::CheckQuota(quota, held, requested).ok) {
    held = observed;
    for (const auto& [claim, admitted] : t.unrecorded) {
      if (!in_snapshot(claim)) held.Add(admitted.first);
    }
    if (!topology::CheckQuota(quota, held, requested).ok) return false;
  }
  t.spent.Add(requested);
  t.unrecorded.emplace(key, std::pair{requested, now_unix});
  t.unrecorded_total.Add(requested);
  return true;
}

bool ClaimBudgets::HasOpenBudget(absl::string_view tenant, int64_t now_unix) {
  common::MutexLock lock(&mu_);
  const Tenant& t = Of(tenant);
  return t.budget && now_unix - t.granted_unix < kBudgetSeconds;
}

bool ClaimBudgets::TakeRefillAhead(absl::string_view tenant, const topology::TenantQuota& quota,
                                   int64_t now_unix) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  if (!t.budget || t.refill_ahead) return false;
  // Spent twice over exceeds the budget on some item: more than half of it is gone.
  const bool half_spent =
      !topology::CheckQuota(BudgetLimits(quota, *t.budget), t.spent, t.spent).ok;
  t.refill_ahead = half_spent || 2 * (now_unix - t.granted_unix) >= kBudgetSeconds;
  return t.refill_ahead;
}

bool ClaimBudgets::RefillAheadDue(absl::string_view tenant) {
  common::MutexLock lock(&mu_);
  return Of(tenant).refill_ahead;
}

UnrecordedClaims ClaimBudgets::Close(absl::string_view tenant) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  t.budget.reset();
  t.refill_ahead = false;
  return t.unrecorded;
}

void ClaimBudgets::Written(absl::string_view tenant, const UnrecordedClaims& converted,
                           const std::optional<topology::QuotaUsage>& granted, int64_t now_unix) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  ForgetConverted(t, converted);
  t.budget = granted;
  t.granted_unix = now_unix;
  t.spent = {};
}

ClaimBudgets::Refill ClaimBudgets::BeginRefill(absl::string_view tenant,
                                               const topology::TenantQuota& quota,
                                               int64_t now_unix) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  Refill refill{t.unrecorded, {}};
  t.spent_at_refill = t.spent;
  // What TryAdmit may still admit: the budget's amounts on the items the quota sets, less what
  // it admitted. Nothing of an expired budget: TryAdmit admits from it no more.
  if (t.budget && now_unix - t.granted_unix < kBudgetSeconds) {
    refill.carried = LeftOf(quota, *t.budget, t.spent);
  }
  return refill;
}

void ClaimBudgets::RefillWritten(absl::string_view tenant, const Refill& refill,
                                 const std::optional<topology::QuotaUsage>& granted,
                                 int64_t now_unix) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  ForgetConverted(t, refill.converted);
  topology::QuotaUsage since = t.spent;  // admitted while the write was under way
  since.Add(t.spent_at_refill, -1);
  if (granted) {
    t.budget = refill.carried;
    t.budget->Add(*granted);
    t.granted_unix = now_unix;
    t.spent = since;
  } else {
    t.budget.reset();
    t.spent = {};
  }
  t.spent_at_refill = {};
  t.refill_ahead = false;
}

void ClaimBudgets::RefillFailed(absl::string_view tenant) {
  common::MutexLock lock(&mu_);
  Tenant& t = Of(tenant);
  t.budget.reset();
  t.spent_at_refill = {};
  t.refill_ahead = false;
}

void ClaimBudgets::ForgetConverted(Tenant& t, const UnrecordedClaims& converted) {
  for (const auto& [key, admitted] : converted) {
    if (t.unrecorded.erase(key)) t.unrecorded_total.Add(admitted.first, -1);
  }
}

common::Mutex& ClaimBudgets::RefillTurn(absl::string_view tenant) {
  common::MutexLock lock(&mu_);
  return *Of(tenant).refill_turn;
}

}  // namespace webhook
