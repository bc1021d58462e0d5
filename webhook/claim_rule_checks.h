// The pieces the claim and node rows of the rule table (rule_table.cc) are assembled from;
// internal to webhook/ (callers use rule_table.h):
//
//   claim_rules.cc              unknown-tenant, claim-device-class (and claim-mig-profile),
//                               unknown-demand, dra-extended-resource, claim-shared-capacity,
//                               claim-sharing (and claim-mps-limits) for claims
//   device_access_rules.cc      device-access for claims (admin access)
//   claim_quota.cc              tenant-quota for ResourceClaims
//   device_annotation_rules.cc  device-annotation for Nodes
#ifndef GPU_TENANCY_WEBHOOK_CLAIM_RULE_CHECKS_H_
#define GPU_TENANCY_WEBHOOK_CLAIM_RULE_CHECKS_H_

#include "webhook/rule_table.h"

namespace webhook::claim_rules_internal {

void CheckUnknownTenant(const ClaimRuleContext& ctx, Findings& out);
void CheckLiterals(const ClaimRuleContext& ctx, Findings& out);
void CheckAdminAccess(const ClaimRuleContext& ctx, Findings& out);
void CheckUnknownDemand(const ClaimRuleContext& ctx, Findings& out);
void CheckSchedulersClaim(const ClaimRuleContext& ctx, Findings& out);
void CheckSharedCapacity(const ClaimRuleContext& ctx, Findings& out);
void CheckSharing(const ClaimRuleContext& ctx, Findings& out);
void CheckQuota(const ClaimRuleContext& ctx, Findings& out);

void CheckNodeDevicesAnnotation(const NodeRuleContext& ctx, Findings& out);

}  // namespace webhook::claim_rules_internal

#endif  // GPU_TENANCY_WEBHOOK_CLAIM_RULE_CHECKS_H_
