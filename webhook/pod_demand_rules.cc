// The pod rules that keep the contract an allow-list: dra-extended-resource (a DRA extended
// resource's class must select only devices the tenant may use) and unknown-demand (a GPU
// vendor's resource name or a device class the service does not read), with the unknown-demand
// warnings of tiers that do not deny it.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "topology/wellknown.h"
#include "webhook/device_class_rules.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"

namespace webhook::pod_rules_internal {
namespace {

// What a tenant can ask instead of a class's extended resource: the device plugin's own name
// for a MIG class pinned to one allowed profile reads best; else a claim.
std::string Instead(const DraExtendedAsk& ask, const topology::TenantRef& tenant) {
  if (ask.device_class == "mig.nvidia.com" && tenant.tenant &&
      !tenant.tenant->limits.mig_profiles.empty()) {
    return absl::StrCat("request nvidia.com/mig-", tenant.tenant->limits.mig_profiles.front(),
                        ", or a ResourceClaim of class mig.nvidia.com (the tenant's profiles are "
                        "written into it)");
  }
  return "";
}

bool IsDraServed(const PodView& pod, absl::string_view container, absl::string_view resource) {
  for (const DraExtendedAsk& ask : pod.dra_extended) {
    if (ask.container == container && ask.resource == resource) return true;
  }
  return false;
}

// Each unknown demand of the pod as (what, why), in container order.
std::vector<std::pair<std::string, std::string>> UnknownDemands(const PodRuleContext& ctx) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const DraExtendedAsk& ask : ctx.pod.dra_extended) {
    if (ask.class_kind != topology::DeviceClassKind::kUnknown) continue;
    out.emplace_back(absl::StrCat(ask.container, " requests ", ask.resource),
                     absl::StrCat("the policy maps no device class ", ask.device_class,
                                  " (admission.deviceClasses)"));
  }
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (ClassifyPodResource(name, ctx.policy) != ResourceUse::kOtherGpu) continue;
      if (IsDraServed(ctx.pod, c.Label(), name)) continue;  // its class is judged instead
      out.emplace_back(absl::StrCat(c.Label(), " requests ", name),
                       "gpu-tenancy does not read that GPU resource name (a GPU vendor's; the "
                       "policy's admission.otherResources lists names that are not GPUs)");
    }
  }
  return out;
}

}  // namespace

void CheckDraExtendedResources(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier) return;
  for (const DraExtendedAsk& ask : ctx.pod.dra_extended) {
    if (ask.class_kind != topology::DeviceClassKind::kGpu) continue;
    CheckClassOffer({absl::StrCat(ask.container, " requests ", ask.resource, " (devices of class ",
                                  ask.device_class, " through DRA)"),
                     ask.device_class, Instead(ask, ctx.tenant)},
                    ctx.dra, ctx.tenant, ctx.namespace_name, out);
  }
}

void CheckUnknownDemand(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!DeniesUnknownDemand(ctx.tenant)) return;
  for (const auto& [what, why] : UnknownDemands(ctx)) {
    out.push_back(UnknownDemandViolation(what, why, ctx.tenant, ctx.namespace_name));
  }
}

void AddUnknownDemandWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings) {
  if (!ctx.tenant.tier || DeniesUnknownDemand(ctx.tenant)) return;
  for (const auto& [what, why] : UnknownDemands(ctx)) {
    warnings.push_back(UnknownDemandWarning(what, why));
  }
}

}  // namespace webhook::pod_rules_internal
