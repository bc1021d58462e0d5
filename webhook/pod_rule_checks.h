// The pieces the pod rows of the rule table (rule_table.cc) are assembled from, by rule family;
// internal to webhook/ (callers use rule_table.h):
//
//   resource_use.cc         how the webhook sees a resource name, what a container asks for
//   pod_view.cc             reading a Pod into a PodView
//   tier_rules.cc           unknown-tenant, tier-shared, fail-requests-greater-than-one, warnings
//   device_access_rules.cc  device-access: the escape hatches past the device plugin
//   tenant_limit_rules.cc   tenant-limits, invalid-gpu-request, priority-class
//   device_annotation_rules.cc  device-annotation
//   quota_rules.cc          tenant-quota
//   pod_demand_rules.cc     dra-extended-resource, unknown-demand
//   preset_node_rules.cc    preset-node, scheduler-name
#ifndef GPU_TENANCY_WEBHOOK_POD_RULE_CHECKS_H_
#define GPU_TENANCY_WEBHOOK_POD_RULE_CHECKS_H_

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "topology/quantity.h"
#include "topology/wellknown.h"
#include "webhook/pod_rules.h"
#include "webhook/rule_table.h"
#include "webhook/verdict.h"

namespace webhook::pod_rules_internal {

// The environment variables device-access looks at (the facts keep only these).
inline constexpr absl::Span<const absl::string_view> kDeviceEnv = topology::kDeviceEnvNames;

// The added capabilities device-access refuses (compared upper-cased): SYS_ADMIN opens the
// device files the device plugin did not give the container.
inline constexpr std::array<absl::string_view, 3> kDeviceCapabilities = {"SYS_ADMIN",
                                                                         "CAP_SYS_ADMIN", "ALL"};

// Host paths that reach GPU devices or the MPS pipe (as prefixes of the cleaned path; /dev/dri
// only as the directory and below), and the marker of an MPS pipe directory anywhere in a path.
inline constexpr std::array<absl::string_view, 5> kDeviceHostPaths = {
    "/dev/nvidia", "/dev/dri", "/run/nvidia", "/var/run/nvidia", "/tmp/nvidia-mps"};
inline constexpr absl::string_view kMpsPipeDirectory = "/tmp/nvidia-mps";
inline constexpr absl::string_view kMpsPipeMarker = "nvidia-mps";

// Resource names a container asks for (requests or limits), with the larger of the two.
std::vector<std::pair<std::string, topology::Quantity>> ContainerResources(const ContainerView& c);

// Device access findings, shared by device-access and unknown-tenant.
struct Finding {
  std::string what;    // `container "x" is privileged`
  std::string remedy;  // `remove securityContext.privileged`
};
std::vector<Finding> DeviceAccessFindings(const PodView& pod);

// The rules, one PodRuleFn each (see the list in pod_rules.h).
void CheckUnknownTenant(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckTierShared(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckFailRequestsGreaterThanOne(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckDeviceAccess(const PodRuleContext& ctx, std::vector<Violation>& out);
// Limits on what cannot change after creation: MIG profiles and shared replicas.
void CheckTenantLimits(const PodRuleContext& ctx, std::vector<Violation>& out);
// GPU memory per pod: the annotation may change on UPDATE, so this runs then too.
void CheckTenantMemory(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckInvalidGpuRequest(const PodRuleContext& ctx, std::vector<Violation>& out);
// priority-class: every pod of a tenant (GPU or not) uses a PriorityClass the tenant lists; a
// tenant that lists none may use only priorities that cannot preempt (0, or above 0 with
// preemptionPolicy Never).
void CheckPriorityClass(const PodRuleContext& ctx, std::vector<Violation>& out);

// device-annotation (device_annotation_rules.cc) and tenant-quota with its warning
// (quota_rules.cc).
void CheckDevicesAnnotation(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckTenantQuota(const PodRuleContext& ctx, std::vector<Violation>& out);
void AddTenantQuotaWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings);

// preset_node_rules.cc: preset-node, the extender's fit for a pod that names its node.
inline constexpr absl::string_view kPresetNodeRule = "preset-node";
void CheckPresetNode(const PodRuleContext& ctx, std::vector<Violation>& out);
// And scheduler-name, with its warning for tiers that do not deny unknown demand.
inline constexpr absl::string_view kSchedulerNameRule = "scheduler-name";
void CheckSchedulerName(const PodRuleContext& ctx, std::vector<Violation>& out);
void AddSchedulerNameWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings);

// pod_demand_rules.cc: dra-extended-resource and unknown-demand.
void CheckDraExtendedResources(const PodRuleContext& ctx, std::vector<Violation>& out);
void CheckUnknownDemand(const PodRuleContext& ctx, std::vector<Violation>& out);

// Warnings: advice that does not block the pod (CREATE only).
void AddWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings);
void AddUnknownDemandWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings);

}  // namespace webhook::pod_rules_internal

#endif  // GPU_TENANCY_WEBHOOK_POD_RULE_CHECKS_H_
