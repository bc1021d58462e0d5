// The rules for pods that skip the extender. preset-node: a GPU pod created with spec.nodeName
// already set. No scheduler places it, so
// neither kube-scheduler nor the extender ever checks it, and the kubelet runs it where it names.
// The rule asks the extender's own question of that node at admission (topology::Fit, or
// FitWithDra for DRA-backed names, with the tenant's quota before capacity), so a pod that
// skips the scheduler meets the same checks as one that does. scheduler-name: a GPU pod naming a
// scheduler gpu-tenancy does not extend (the mutating webhook renames it when the policy says
// so; otherwise it is what the service cannot check, and judged like unknown demand).
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "topology/dra/extended_resources.h"
#include "topology/preemption.h"
#include "topology/quota.h"
#include "webhook/device_class_rules.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"

namespace webhook::pod_rules_internal {

void CheckPresetNode(const PodRuleContext& ctx, std::vector<Violation>& out) {
  const std::string& node_name = ctx.pod.facts.node_name;
  if (node_name.empty() || !ctx.snapshot || !ctx.tenant.tier || !ctx.pod.HasGpuRequests()) {
    return;
  }
  const std::string head =
      absl::StrCat("pod names node \"", node_name,
                   "\" in spec.nodeName, so no scheduler places it and the extender never "
                   "checks it; ");
  constexpr absl::string_view kInstead = "; remove spec.nodeName and let the scheduler place it";
  const topology::ClusterSnapshot& snapshot = *ctx.snapshot;
  const topology::NodeState* node = snapshot.FindNode(node_name);
  if (!node) {
    out.push_back(MakeViolation(
        kPresetNodeRule, absl::StrCat(head, "gpu-tenancy does not know that node", kInstead)));
    return;
  }
  const topology::DraState& dra = snapshot.dra();
  absl::StatusOr<topology::GpuDemand> demand =
      topology::ComputeDemandWithDra(ctx.pod.facts, ctx.policy, dra);
  if (!demand.ok()) return;  // invalid-gpu-request reports it
  absl::StatusOr<topology::PodContext> pod_context = topology::MakePodContext(
      ctx.pod.facts, ctx.policy, snapshot.NamespaceLabels(ctx.namespace_name));
  if (!pod_context.ok()) return;  // the annotation's own error is not this rule's
  topology::FitResult fit =
      topology::DemandUsesDra(*demand, dra)
          ? topology::FitWithDra(*demand, *pod_context, *node, dra)
          : topology::Fit(*demand, *pod_context, node->supply, node->occupancy);
  std::optional<topology::PodQuotaCheck> quota;
  const topology::Tenant* tenant = ctx.tenant.tenant;
  if (tenant && !tenant->quota.empty() && !demand->empty()) {
    quota.emplace(*tenant, ctx.policy, *demand,
                  topology::TenantUsage(snapshot, ctx.policy, ctx.tenant.name));
    fit = topology::QuotaBeforeCapacity(fit, &*quota, *node);
  }
  if (fit.fits()) return;
  std::string reason;
  fit.AppendRuleReason(reason);
  out.push_back(
      MakeViolation(kPresetNodeRule, absl::StrCat(head, "on that node: ", reason, kInstead)));
}

namespace {

// The words of scheduler-name's violation and warning.
std::string ElsewhereScheduled(const PodRuleContext& ctx) {
  return absl::StrCat("pod names scheduler \"", SchedulerOf(ctx.pod.facts),
                      "\", which does not call gpu-tenancy's extender (it extends \"",
                      ctx.policy.admission.scheduler_name, "\")");
}

bool SchedulerSkipsExtender(const PodRuleContext& ctx) {
  return ctx.tenant.tier && ctx.pod.facts.node_name.empty() && ctx.pod.HasGpuRequests() &&
         SchedulerOf(ctx.pod.facts) != ctx.policy.admission.scheduler_name;
}

}  // namespace

void CheckSchedulerName(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!SchedulerSkipsExtender(ctx) || !DeniesUnknownDemand(ctx.tenant)) return;
  out.push_back(MakeViolation(
      kSchedulerNameRule,
      absl::StrCat(ElsewhereScheduled(ctx), ", so its placement would not be checked, and ",
                   TenantPhrase(ctx.tenant, ctx.namespace_name),
                   " gets no device gpu-tenancy cannot check; remove spec.schedulerName or set "
                   "it to \"",
                   ctx.policy.admission.scheduler_name, "\"")));
}

void AddSchedulerNameWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings) {
  if (!SchedulerSkipsExtender(ctx) || DeniesUnknownDemand(ctx.tenant)) return;
  warnings.push_back(
      absl::StrCat(ElsewhereScheduled(ctx), ": its pool, capacity and quota are not checked"));
}

}  // namespace webhook::pod_rules_internal
