#include "webhook/quota_rules.h"

#include "absl/strings/str_cat.h"

namespace webhook {

void CheckTenantQuota(const PodView& pod, const topology::Policy& policy,
                      const topology::TenantRef& tenant, const topology::QuotaUsage& held,
                      std::vector<Violation>& violations, std::vector<std::string>& warnings) {
  if (!tenant.tenant || tenant.tenant->quota.empty() || !pod.demand.ok()) return;
  const topology::QuotaUsage requested = topology::UsageOf(*pod.demand, {}, policy);
  const topology::QuotaVerdict verdict =
      topology::CheckQuota(tenant.tenant->quota, held, requested);
  if (verdict.ok) return;
  const std::string reason = topology::QuotaReason(tenant.name, verdict);
  if (policy.quota_enforcement == topology::QuotaEnforcement::kAdmission) {
    violations.push_back(MakeViolation(kTenantQuotaRule, reason));
    return;
  }
  warnings.push_back(absl::StrCat(
      reason, "; the pod will stay Pending until the tenant's other GPU pods release enough"));
}

}  // namespace webhook
