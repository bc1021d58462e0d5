// The rule table's rows and the runners; the rules live by family in the files
// pod_rule_checks.h and claim_rule_checks.h list.
#include "webhook/rule_table.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "webhook/claim_rule_checks.h"
#include "webhook/pod_rule_checks.h"

namespace webhook {
namespace {

namespace pod = pod_rules_internal;
namespace claim = claim_rules_internal;

constexpr unsigned kCreateOrEphemeral = kOnCreate | kOnEphemeral;
constexpr unsigned kAlways = kOnCreate | kOnUpdate | kOnEphemeral;
// Rows that also judge a running pod: who it belongs to, what it uses, how it reaches devices.
// Not those a placed pod cannot break or the guard judges its own way (its node, its quota).
constexpr unsigned kHeld = kCreateOrEphemeral | kAfterAdmission;

constexpr PodRule kPodRules[] = {
    // First: a forged device annotation is the gravest thing a request can do.
    {"device-annotation", kOnCreate | kOnUpdate, &pod::CheckDevicesAnnotation},
    {"unknown-tenant", kHeld, &pod::CheckUnknownTenant},
    {"tier-shared", kHeld, &pod::CheckTierShared, &pod::AddWarnings},
    {"fail-requests-greater-than-one", kCreateOrEphemeral, &pod::CheckFailRequestsGreaterThanOne},
    {"device-access", kHeld, &pod::CheckDeviceAccess},
    {"tenant-limits", kHeld, &pod::CheckTenantLimits},
    {"tenant-limits", kAlways | kAfterAdmission, &pod::CheckTenantMemory},
    {"invalid-gpu-request", kAlways, &pod::CheckInvalidGpuRequest},
    {"priority-class", kHeld, &pod::CheckPriorityClass},
    {"dra-extended-resource", kCreateOrEphemeral, &pod::CheckDraExtendedResources},
    {"unknown-demand", kHeld, &pod::CheckUnknownDemand, &pod::AddUnknownDemandWarnings},
    {"preset-node", kOnCreate, &pod::CheckPresetNode},
    {"scheduler-name", kOnCreate, &pod::CheckSchedulerName, &pod::AddSchedulerNameWarnings},
    {"tenant-quota", kOnCreate, &pod::CheckTenantQuota, &pod::AddTenantQuotaWarnings},
};

constexpr ClaimRule kClaimRules[] = {
    {"unknown-tenant", "", false, &claim::CheckUnknownTenant},
    {"claim-device-class", "claim-mig-profile", false, &claim::CheckLiterals},
    {"device-access", "", false, &claim::CheckAdminAccess},
    {"unknown-demand", "", false, &claim::CheckUnknownDemand},
    {"dra-extended-resource", "", false, &claim::CheckSchedulersClaim},
    {"claim-shared-capacity", "", false, &claim::CheckSharedCapacity},
    {"claim-sharing", "claim-mps-limits", false, &claim::CheckSharing},
    // Last: it reserves the claim's share of the quota, which a denied claim must not keep.
    {"tenant-quota", "", true, &claim::CheckQuota},
};

constexpr NodeRule kNodeRules[] = {
    {"device-annotation", &claim::CheckNodeDevicesAnnotation},
};

void AddId(std::vector<std::string>& ids, absl::string_view id) {
  if (!id.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.emplace_back(id);
}

}  // namespace

absl::Span<const PodRule> PodRules() { return kPodRules; }
absl::Span<const ClaimRule> ClaimRules() { return kClaimRules; }
absl::Span<const NodeRule> NodeRules() { return kNodeRules; }

std::vector<std::string> RuleIds() {
  std::vector<std::string> ids;
  for (const PodRule& r : kPodRules) AddId(ids, r.id);
  for (const ClaimRule& r : kClaimRules) {
    AddId(ids, r.id);
    for (absl::string_view also : absl::StrSplit(r.also, ',', absl::SkipEmpty())) {
      AddId(ids, also);
    }
  }
  for (const NodeRule& r : kNodeRules) AddId(ids, r.id);
  return ids;
}

Findings RunPodRules(const PodRuleContext& ctx, RulePhase phase) {
  Findings out;
  for (const PodRule& rule : kPodRules) {
    if ((rule.phases & phase) == 0) continue;
    rule.check(ctx, out.violations);
    if (rule.warn && phase == kOnCreate) rule.warn(ctx, out.warnings);
  }
  return out;
}

Findings RunClaimRules(const ClaimRuleContext& ctx) {
  Findings out;
  for (const ClaimRule& rule : kClaimRules) {
    if (rule.only_if_allowed && !out.violations.empty()) continue;
    rule.check(ctx, out);
  }
  return out;
}

Findings RunNodeRules(const NodeRuleContext& ctx) {
  Findings out;
  for (const NodeRule& rule : kNodeRules) rule.check(ctx, out);
  return out;
}

}  // namespace webhook
