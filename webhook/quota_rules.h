// Tenant quotas at admission. The scheduler extender enforces a quota (filter and bind); at
// admission the pod is not placed yet, so its demand is counted by its resource names, against
// what the tenant holds when the pod is created. By default a pod that would pass the quota is
// admitted with a warning that it will stay Pending (kubectl prints it as "Warning: ..."); with
// `quotaEnforcement: admission` in the policy it is denied instead, rule "tenant-quota".
#ifndef GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_
#define GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_

#include <string>
#include <vector>

#include "topology/policy.h"
#include "topology/quota.h"
#include "webhook/pod_rules.h"
#include "webhook/verdict.h"

namespace webhook {

inline constexpr absl::string_view kTenantQuotaRule = "tenant-quota";

// `held`: what the tenant holds now (topology::TenantUsage). Adds nothing for a tenant without
// a quota, a pod without GPU demand, or a pod the quota still has room for.
void CheckTenantQuota(const PodView& pod, const topology::Policy& policy,
                      const topology::TenantRef& tenant, const topology::QuotaUsage& held,
                      std::vector<Violation>& violations, std::vector<std::string>& warnings);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_
