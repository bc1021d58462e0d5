#include "webhook/claim_quota.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "topology/dra/claim_quota.h"
#include "topology/fair_share.h"
#include "webhook/claim_rule_checks.h"
#include "webhook/quota_rules.h"
#include "wire/dra_codec.h"

namespace webhook {
namespace {

constexpr absl::string_view kMigPrefix = "mig/";

bool SetField(absl::string_view name, int64_t value, ClaimReservation& r) {
  if (name == "t") {
    r.admitted_unix = value;
  } else if (name == "gpus") {
    r.usage.gpus = value;
  } else if (name == "slices") {
    r.usage.mig_compute_slices = value;
  } else if (name == "replicas") {
    r.usage.shared_replicas = value;
  } else if (name == "memMi") {
    r.usage.gpu_memory_mib = value;
  } else if (absl::StartsWith(name, kMigPrefix) && name.size() > kMigPrefix.size()) {
    r.usage.mig_instances[std::string(name.substr(kMigPrefix.size()))] = value;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string ClaimKey(absl::string_view namespace_name, absl::string_view name) {
  return absl::StrCat(namespace_name, ".", name);
}

std::string EncodeReservation(const ClaimReservation& r) {
  std::vector<std::string> fields = {absl::StrCat("t=", r.admitted_unix)};
  const topology::QuotaUsage& u = r.usage;
  if (u.gpus) fields.push_back(absl::StrCat("gpus=", u.gpus));
  for (const auto& [profile, n] : u.mig_instances) {
    fields.push_back(absl::StrCat(kMigPrefix, profile, "=", n));
  }
  if (u.mig_compute_slices) fields.push_back(absl::StrCat("slices=", u.mig_compute_slices));
  if (u.shared_replicas) fields.push_back(absl::StrCat("replicas=", u.shared_replicas));
  if (u.gpu_memory_mib) fields.push_back(absl::StrCat("memMi=", u.gpu_memory_mib));
  return absl::StrJoin(fields, " ");
}

absl::StatusOr<ClaimReservation> DecodeReservation(absl::string_view text) {
  ClaimReservation r;
  bool stamped = false;
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    int64_t value = 0;
    if (!absl::SimpleAtoi(kv.second, &value) || value < 0 || !SetField(kv.first, value, r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("usage record entry: bad field \"", field, "\""));
    }
    stamped = stamped || kv.first == "t";
  }
  if (!stamped) return absl::InvalidArgumentError("usage record entry: no t=<admitted>");
  return r;
}

std::string UsageRecordName(absl::string_view tenant) {
  std::string name = absl::AsciiStrToLower(tenant);
  for (char& c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.') c = '-';
  }
  return absl::StrCat("gpu-tenancy-usage-", name);
}

ClaimQuotaDecision DecideClaimQuota(const ClaimQuotaInput& in, const RecordData& record) {
  ClaimQuotaDecision out;
  RecordData kept;
  topology::QuotaUsage held = in.observed;
  auto observed = [&](const std::string& key) {
    return in.observed_claims && in.observed_claims->contains(key);
  };
  const bool own_budget = in.grant_budget && !in.own_budget_key.empty();
  for (const auto& [key, text] : record) {
    if (key == in.key) continue;  // replaced below: the same claim admitted again
    if (own_budget && key == in.own_budget_key) continue;  // replaced by `converted` below
    absl::StatusOr<ClaimReservation> r = DecodeReservation(text);
    if (!r.ok() || in.now_unix - r->admitted_unix > kReservationGraceSeconds) continue;
    kept.emplace(key, text);
    // Counted from the snapshot once this replica sees the claim; until then from the record.
    if (!observed(key)) held.Add(r->usage);
  }
  if (own_budget && in.converted) {
    for (const auto& [key, admitted] : *in.converted) {
      if (key == in.key) continue;
      const auto& [usage, admitted_unix] = admitted;
      if (in.now_unix - admitted_unix > kReservationGraceSeconds) continue;
      if (kept.emplace(key, EncodeReservation({usage, admitted_unix})).second && !observed(key)) {
        held.Add(usage);
      }
    }
  }
  topology::QuotaUsage after = held;
  if (!in.key.empty()) {
    out.verdict = topology::CheckQuota(*in.quota, held, in.requested);
    out.admit = out.verdict.ok;
    if (!out.admit) return out;
    kept[in.key] = EncodeReservation({in.requested, in.now_unix});
    after.Add(in.requested);
  }
  if (own_budget) {
    topology::QuotaUsage entry = in.carried ? *in.carried : topology::QuotaUsage{};
    after.Add(entry);
    out.budget = BudgetToGrant(*in.quota, after, in.requested);
    if (out.budget) entry.Add(*out.budget);
    if (!entry.empty()) kept[in.own_budget_key] = EncodeReservation({entry, in.now_unix});
  }
  out.write = std::move(kept);
  return out;
}

std::optional<topology::ClaimQuotaCount> ClaimCountCache::FindLocked(
    const topology::DraClaim& claim, const topology::DraState& dra) {
  if (device_set_ != dra.device_set) {
    device_set_ = dra.device_set;
    entries_.clear();
    next_ = 0;
    return std::nullopt;
  }
  for (const Entry& e : entries_) {
    if (e.requests == claim.requests) return e.count;
  }
  return std::nullopt;
}

std::optional<topology::ClaimQuotaCount> ClaimCountCache::Cached(const topology::DraClaim& claim,
                                                                 const topology::DraState& dra) {
  common::MutexLock lock(&mu_);
  return FindLocked(claim, dra);
}

topology::ClaimQuotaCount ClaimCountCache::Count(const topology::DraClaim& claim,
                                                 const topology::DraState& dra) {
  {
    common::MutexLock lock(&mu_);
    if (std::optional<topology::ClaimQuotaCount> hit = FindLocked(claim, dra)) return *hit;
  }
  // Counted outside the lock: concurrent reviews of different shapes do not wait on each other.
  topology::ClaimQuotaCount count = topology::CountClaimQuota(claim, dra);
  common::MutexLock lock(&mu_);
  if (device_set_ != dra.device_set) return count;  // the devices changed meanwhile
  for (const Entry& e : entries_) {
    if (e.requests == claim.requests) return count;  // another review counted it meanwhile
  }
  if (entries_.size() < kShapes) {
    entries_.push_back({claim.requests, count});
  } else {
    entries_[next_] = {claim.requests, count};
    next_ = (next_ + 1) % kShapes;
  }
  return count;
}

namespace {

// Calls f(namespace) for each namespace with claims that resolves to `tenant`: per namespace,
// not per claim, as a tenant's admission reads its own claims only.
template <typename F>
void ForEachTenantClaimNamespace(const topology::ClusterSnapshot& snapshot,
                                 const topology::Policy& policy, absl::string_view tenant, F f) {
  snapshot.dra().claims.ForEachNamespace([&](const std::string& ns) {
    if (topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns)).name == tenant) f(ns);
  });
}

}  // namespace

std::optional<topology::ClaimQuotaCount> CountShape(const ClaimQuotaContext& context,
                                                    const topology::DraClaim& claim,
                                                    const topology::DraState& dra) {
  if (!context.counts) return topology::CountClaimQuota(claim, dra);
  if (context.stopped_for_io) return context.counts->Cached(claim, dra);
  return context.counts->Count(claim, dra);
}

std::optional<topology::QuotaUsage> ObservedClaimHeld(
    const topology::ClusterSnapshot& snapshot, const topology::Policy& policy,
    absl::string_view tenant, absl::flat_hash_set<std::string>* observed_claims,
    const ClaimQuotaContext& context, bool without_memory) {
  std::optional<topology::QuotaUsage> held = topology::TenantUsage(snapshot, policy, tenant);
  const topology::DraState& dra = snapshot.dra();
  ForEachTenantClaimNamespace(snapshot, policy, tenant, [&](const std::string& ns) {
    auto count = [&](const topology::DraClaim& claim) {
      if (!held) return;
      if (observed_claims) observed_claims->insert(ClaimKey(claim.namespace_name, claim.name));
      if (claim.allocated) {
        if (without_memory) return;
        topology::QuotaUsage memory;
        memory.gpu_memory_mib = topology::AllocatedClaimMemoryMib(claim, dra);
        held->Add(memory);
      } else if (std::optional<topology::ClaimQuotaCount> bound = CountShape(context, claim, dra)) {
        // Pending: admitted, so it may be allocated at any moment up to its bound (one
        // kube-scheduler made is allocated moments after it is created).
        held->Add(bound->usage);
      } else {
        held.reset();
      }
    };
    // Allocated claims add only their memory: without it, only the pending ones are read.
    if (without_memory && !observed_claims) {
      dra.claims.ForEachPendingIn(ns, count);
    } else {
      dra.claims.ForEachIn(ns, count);
    }
  });
  return held;
}

size_t ClaimsInTenantNamespaces(const topology::ClusterSnapshot& snapshot,
                                const topology::Policy& policy, absl::string_view tenant,
                                bool pending_only) {
  const topology::DraClaimSet& claims = snapshot.dra().claims;
  size_t count = 0;
  ForEachTenantClaimNamespace(snapshot, policy, tenant, [&](const std::string& ns) {
    count += pending_only ? claims.CountPendingIn(ns) : claims.CountIn(ns);
  });
  return count;
}

bool SnapshotHoldsClaim(const topology::ClusterSnapshot& snapshot, absl::string_view key) {
  // Namespaces are DNS labels, without dots; a claim's name may have some.
  const size_t dot = key.find('.');
  return dot != absl::string_view::npos &&
         snapshot.dra().claims.Find(key.substr(0, dot), key.substr(dot + 1)) != nullptr;
}

bool ClaimCountsAgainstRecord(const topology::TenantRef& tenant) {
  return tenant.tenant && (!tenant.tenant->quota.empty() || tenant.tenant->fair_share);
}

namespace {

// Writes what `in` decides into the tenant's usage record. With `budgets` (the caller holds the
// tenant's refill turn) the write also replaces this replica's budget: the claims admitted from
// it are converted into their own reservations, and the budget the decision grants is installed
// once the write succeeded. A claim's write closes the budget first; a refill `ahead` of need
// keeps it open and carries what is left of it (ClaimBudgets::BeginRefill).
absl::Status WriteRecord(ClaimQuotaInput in, const std::string& tenant, ClaimBudgets* budgets,
                         const ClaimQuotaContext& context, bool dry_run,
                         ClaimQuotaDecision& decision, bool ahead = false) {
  ClaimBudgets::Refill refill;  // a claim's write converts, and carries nothing
  if (budgets) {
    in.grant_budget = true;
    in.own_budget_key = budgets->record_key();
    if (ahead) {
      refill = budgets->BeginRefill(tenant, *in.quota, in.now_unix);
      in.carried = &refill.carried;
    } else {
      refill.converted = budgets->Close(tenant);
    }
    in.converted = &refill.converted;
  }
  absl::Status written = context.update(
      UsageRecordName(tenant),
      [&](const RecordData& record) {
        decision = DecideClaimQuota(in, record);
        return decision.write;
      },
      dry_run);
  // After a failed write the budget stays closed: the next claim goes through the record, and
  // its write converts what the old budget admitted.
  if (budgets && ahead) {
    if (written.ok() && decision.write) {
      budgets->RefillWritten(tenant, refill, decision.budget, in.now_unix);
    } else {
      budgets->RefillFailed(tenant);
    }
  } else if (written.ok() && budgets && decision.write) {
    budgets->Written(tenant, refill.converted, decision.budget, in.now_unix);
  }
  return written;
}

}  // namespace

void CheckClaimQuota(const common::JsonValue& object, absl::string_view namespace_name,
                     const topology::Policy& policy, const topology::TenantRef& tenant,
                     const topology::ClusterSnapshot& snapshot, const ClaimQuotaContext& context,
                     bool dry_run, std::vector<Violation>& violations,
                     std::vector<std::string>& warnings) {
  if (!ClaimCountsAgainstRecord(tenant)) return;
  absl::StatusOr<topology::DraClaim> claim = wire::ParseResourceClaim(object, "request.object");
  // An unreadable claim is left to the API server's validation; nothing to count. A claim
  // kube-scheduler made for a pod's extended resource counts like any other: the pod's own
  // demand is not counted until the claim is allocated, and then through the claim.
  if (!claim.ok()) return;
  const std::optional<topology::ClaimQuotaCount> counted =
      CountShape(context, *claim, snapshot.dra());
  if (!counted) {
    *context.stopped_for_io = true;  // a shape never counted, on a loop: a worker counts it
    return;
  }
  const topology::ClaimQuotaCount& count = *counted;
  if (count.usage.empty()) return;
  // Always enforced, whatever quotaEnforcement says for pods: the DRA allocator never checks a
  // quota, so admission is the only gate a claim passes.
  ClaimQuotaInput in;
  in.quota = &tenant.tenant->quota;
  in.key = ClaimKey(namespace_name, claim->name);
  in.requested = count.usage;
  in.now_unix = context.now_unix;
  auto admitted = [&] {
    if (!count.worst_case.empty()) {
      warnings.push_back(absl::StrCat("tenant ", tenant.name,
                                      " quota: the claim is counted at its worst case: ",
                                      absl::StrJoin(count.worst_case, "; ")));
    }
  };
  // Fair-sharing tenants borrow by what the cluster holds now: no budget for them.
  ClaimBudgets* budgets =
      context.update && !dry_run && !tenant.tenant->fair_share ? context.budgets : nullptr;
  // What the snapshot shows the tenant hold, for the budget's own check: without the keys of
  // its claims (a budget's few unrecorded claims are looked up one by one) and, when the quota
  // does not limit memory, without the allocated claims' memory.
  const bool without_memory = !in.quota->gpu_memory_mib;
  std::optional<topology::QuotaUsage> observed_for_budget;
  auto from_budget = [&] {
    // Near the quota no budget is open: that claim goes to the record without counting twice.
    if (!budgets || !budgets->HasOpenBudget(tenant.name, in.now_unix)) return false;
    // On a loop, a tenant with very many claims to visit is counted on a worker instead.
    if (context.stopped_for_io &&
        ClaimsInTenantNamespaces(snapshot, policy, tenant.name, without_memory) >
            kMostClaimsCountedOnALoop) {
      return false;
    }
    if (!observed_for_budget) {
      observed_for_budget =
          ObservedClaimHeld(snapshot, policy, tenant.name, nullptr, context, without_memory);
      // On a loop, a pending claim of a shape never counted: a worker counts it.
      if (!observed_for_budget) return false;
    }
    return budgets->TryAdmit(
        tenant.name, *in.quota, in.key, in.requested, *observed_for_budget,
        [&](const std::string& key) { return SnapshotHoldsClaim(snapshot, key); }, in.now_unix);
  };
  if (from_budget()) {
    if (context.refill_ahead && budgets->TakeRefillAhead(tenant.name, *in.quota, in.now_unix)) {
      context.refill_ahead(tenant.name, in.requested);
    }
    return admitted();
  }
  if (context.update && context.stopped_for_io) {
    *context.stopped_for_io = true;  // the record is next, or a worker's count of the claims
    return;
  }

  absl::flat_hash_set<std::string> seen;
  std::optional<topology::QuotaUsage> observed =
      ObservedClaimHeld(snapshot, policy, tenant.name, &seen, context);
  if (!observed) {
    *context.stopped_for_io = true;  // only a loop leaves a shape uncounted
    return;
  }
  in.observed = *std::move(observed);
  in.observed_claims = &seen;
  // Fair sharing: above its guarantee a claim borrows only what no other tenant is owed.
  if (topology::ShareVerdict share =
          topology::ClassifyClaim(snapshot, policy, tenant, in.observed, in.requested);
      !share.ok()) {
    violations.push_back(MakeViolation(kTenantQuotaRule, share.Reason(tenant.name)));
    return;
  }

  ClaimQuotaDecision decision;
  if (context.update) {
    std::optional<common::MutexLock> refill;
    if (budgets) {
      refill.emplace(&budgets->RefillTurn(tenant.name));
      if (from_budget()) return admitted();  // refilled while this review waited its turn
    }
    if (absl::Status written = WriteRecord(in, tenant.name, budgets, context, dry_run, decision);
        !written.ok()) {
      violations.push_back(MakeViolation(
          kTenantQuotaRule,
          absl::StrCat("tenant ", tenant.name, " quota: the usage record could not be updated (",
                       written.message(), ")")));
      return;
    }
  } else {
    decision = DecideClaimQuota(in, {});  // the snapshot alone: serve --demo / --cluster-file
  }
  if (decision.verdict.ok) return admitted();
  std::string reason = topology::QuotaReason(tenant.name, decision.verdict);
  if (!count.worst_case.empty()) {
    absl::StrAppend(&reason, " (counted at its worst case: ", absl::StrJoin(count.worst_case, "; "),
                    ")");
  }
  violations.push_back(MakeViolation(kTenantQuotaRule, reason));
}

absl::Status RefillClaimBudget(const topology::ClusterSnapshot& snapshot,
                               const topology::Policy& policy, const std::string& tenant_name,
                               const topology::QuotaUsage& shape,
                               const ClaimQuotaContext& context) {
  const topology::Tenant* tenant = policy.FindTenant(tenant_name);
  ClaimBudgets* budgets = context.budgets;
  // A policy reload may have taken the quota away, or turned on fair sharing (no budgets).
  if (!tenant || tenant->quota.empty() || tenant->fair_share || !context.update || !budgets) {
    return absl::OkStatus();
  }
  common::MutexLock turn(&budgets->RefillTurn(tenant_name));
  if (!budgets->RefillAheadDue(tenant_name)) return absl::OkStatus();  // a claim's write did it
  ClaimQuotaInput in;
  in.quota = &tenant->quota;
  in.requested = shape;  // sizes the new budget; no claim is admitted
  in.now_unix = context.now_unix;
  absl::flat_hash_set<std::string> seen;
  std::optional<topology::QuotaUsage> observed =
      ObservedClaimHeld(snapshot, policy, tenant_name, &seen, context);
  if (!observed) return absl::FailedPreconditionError("a budget refill cannot run on a loop");
  in.observed = *std::move(observed);
  in.observed_claims = &seen;
  ClaimQuotaDecision decision;
  return WriteRecord(std::move(in), tenant_name, budgets, context, /*dry_run=*/false, decision,
                     /*ahead=*/true);
}

namespace claim_rules_internal {

void CheckQuota(const ClaimRuleContext& ctx, Findings& out) {
  if (ctx.claim.kind != "ResourceClaim" || !ctx.snapshot) return;  // a template holds nothing
  CheckClaimQuota(ctx.object, ctx.namespace_name, ctx.policy, ctx.tenant, *ctx.snapshot,
                  ctx.claim_quota ? *ctx.claim_quota : ClaimQuotaContext{}, ctx.dry_run,
                  out.violations, out.warnings);
}

}  // namespace claim_rules_internal
}  // namespace webhook
