// The pod rule table (the rules live by family in the files pod_rule_checks.h lists) and
// ValidatePod, which runs it for CREATE, UPDATE and the ephemeral containers subresource.
#include "webhook/pod_rules.h"

#include "webhook/pod_rule_checks.h"

namespace webhook {
namespace {

constexpr PodRule kPodRules[] = {
    {"unknown-tenant", false, &pod_rules_internal::CheckUnknownTenant},
    {"tier-shared", false, &pod_rules_internal::CheckTierShared},
    {"fail-requests-greater-than-one", false, &pod_rules_internal::CheckFailRequestsGreaterThanOne},
    {"device-access", false, &pod_rules_internal::CheckDeviceAccess},
    {"tenant-limits", false, &pod_rules_internal::CheckTenantLimits},
    {"tenant-limits", true, &pod_rules_internal::CheckTenantMemory},
    {"invalid-gpu-request", true, &pod_rules_internal::CheckInvalidGpuRequest},
    {"priority-class", false, &pod_rules_internal::CheckPriorityClass},
    {"dra-extended-resource", false, &pod_rules_internal::CheckDraExtendedResources},
    {"unknown-demand", false, &pod_rules_internal::CheckUnknownDemand},
    {"preset-node", false, &pod_rules_internal::CheckPresetNode},
    {"scheduler-name", false, &pod_rules_internal::CheckSchedulerName},
};

}  // namespace

absl::Span<const PodRule> PodRules() { return kPodRules; }

PodValidation ValidatePod(const PodView& pod, const PodView* old_pod,
                          const topology::Policy& policy, const topology::TenantRef& tenant,
                          absl::string_view namespace_name, bool ephemeral_only,
                          const topology::ClusterSnapshot* snapshot) {
  const topology::DraState* dra = snapshot ? &snapshot->dra() : nullptr;
  PodValidation result;
  if (ephemeral_only) {
    // Only the ephemeral containers are new; everything else was checked at creation and is
    // immutable. They carry no resources, so only device access can trip.
    PodView ephemeral;
    ephemeral.facts.namespace_name = pod.facts.namespace_name;
    ephemeral.facts.name = pod.facts.name;
    for (const ContainerView& c : pod.containers) {
      if (c.list == ContainerList::kEphemeral) ephemeral.containers.push_back(c);
    }
    PodRuleContext ctx{ephemeral, nullptr, policy, tenant, namespace_name, dra, snapshot};
    for (const PodRule& rule : kPodRules) rule.check(ctx, result.violations);
    return result;
  }
  PodRuleContext ctx{pod, old_pod, policy, tenant, namespace_name, dra, snapshot};
  for (const PodRule& rule : kPodRules) {
    if (old_pod && !rule.mutable_inputs) continue;
    rule.check(ctx, result.violations);
  }
  if (!old_pod) {
    pod_rules_internal::AddWarnings(ctx, result.warnings);
    pod_rules_internal::AddUnknownDemandWarnings(ctx, result.warnings);
    pod_rules_internal::AddSchedulerNameWarnings(ctx, result.warnings);
  }
  return result;
}

}  // namespace webhook
