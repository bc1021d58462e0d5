// Tenant quotas at admission. The scheduler extender enforces a quota (filter and bind); at
// admission the pod is not placed yet, so its demand is counted by its resource names, against
// what the tenant holds when the pod is created. By default a pod that would pass the quota is
// admitted with a warning that it will stay Pending (kubectl prints it as "Warning: ..."); with
// `quotaEnforcement: admission` in the policy it is denied instead, rule "tenant-quota". The pod
// row is pod_rules_internal::CheckTenantQuota (pod_rule_checks.h); ResourceClaims have their
// own (claim_quota.h).
#ifndef GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_
#define GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_

#include <string>
#include <vector>

#include "topology/policy.h"
#include "topology/quota.h"
#include "webhook/verdict.h"

namespace webhook {

inline constexpr absl::string_view kTenantQuotaRule = "tenant-quota";

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_QUOTA_RULES_H_
