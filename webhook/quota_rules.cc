#include "webhook/quota_rules.h"

#include "absl/strings/str_cat.h"
#include "webhook/pod_rule_checks.h"

namespace webhook::pod_rules_internal {
namespace {

// The quota's verdict for the pod, or nullopt when there is nothing to check: a tenant without
// a quota, a pod without GPU demand, or holdings not known.
std::optional<topology::QuotaVerdict> PodQuotaVerdict(const PodRuleContext& ctx) {
  const topology::Tenant* tenant = ctx.tenant.tenant;
  if (!ctx.tenant_held || !tenant || tenant->quota.empty() || !ctx.pod.demand.ok()) {
    return std::nullopt;
  }
  const topology::QuotaUsage requested = topology::UsageOf(*ctx.pod.demand, {}, ctx.policy);
  return topology::CheckQuota(tenant->quota, *ctx.tenant_held, requested);
}

}  // namespace

void CheckTenantQuota(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (ctx.policy.quota_enforcement != topology::QuotaEnforcement::kAdmission) return;
  std::optional<topology::QuotaVerdict> verdict = PodQuotaVerdict(ctx);
  if (!verdict || verdict->ok) return;
  out.push_back(MakeViolation(kTenantQuotaRule, topology::QuotaReason(ctx.tenant.name, *verdict)));
}

void AddTenantQuotaWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings) {
  if (ctx.policy.quota_enforcement == topology::QuotaEnforcement::kAdmission) return;
  std::optional<topology::QuotaVerdict> verdict = PodQuotaVerdict(ctx);
  if (!verdict || verdict->ok) return;
  warnings.push_back(
      absl::StrCat(topology::QuotaReason(ctx.tenant.name, *verdict),
                   "; the pod will stay Pending until the tenant's other GPU pods release enough"));
}

}  // namespace webhook::pod_rules_internal
