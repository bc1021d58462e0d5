// The per-tenant limit rules: tenant-limits (MIG profiles, shared replicas and GPU memory per
// pod) and invalid-gpu-request (a GPU request the demand model cannot read). The memory rules
// read the one field that may change on UPDATE, the GPU memory annotation.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"
#include "webhook/verdict.h"

namespace webhook::pod_rules_internal {
namespace {

std::string TenantName(const PodRuleContext& ctx) {
  return absl::StrCat("tenant \"", ctx.tenant.name, "\"");
}

bool MemoryAnnotationChanged(const PodRuleContext& ctx) {
  if (!ctx.old_pod) return true;
  auto value = [&](const PodView& p) -> std::string {
    auto it = p.facts.annotations.find(ctx.policy.memory_annotation);
    return it == p.facts.annotations.end() ? "" : it->second;
  };
  return value(ctx.pod) != value(*ctx.old_pod);
}

// A pod that kube-scheduler can never make evict another tenant's pod: priority 0 (no class,
// or a class of value 0), or above 0 with preemptionPolicy Never. kube-scheduler evicts only
// lower-priority pods, and every pod of a tenant held to this default is at 0 or above, so
// nothing at 0 finds a victim among them. Below 0 is refused too: such a pod would be a
// victim of every other tenant's pod at 0, which no tenant's policy opened. A pod without
// spec.priority is at 0, as kube-scheduler reads it.
bool CannotPreempt(const topology::PodFacts& pod) {
  return pod.priority == 0 || (pod.priority > 0 && pod.never_preempts);
}

std::string DescribePriority(const topology::PodFacts& pod) {
  return absl::StrCat("priority ", pod.priority,
                      pod.priority_class_name.empty()
                          ? std::string(" (no priorityClassName")
                          : absl::StrCat(" (priorityClassName \"", pod.priority_class_name, "\""),
                      ", preemptionPolicy ", pod.never_preempts ? "Never" : "PreemptLowerPriority",
                      ")");
}

}  // namespace

void CheckTenantLimits(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier || !ctx.tenant.tenant) return;
  const topology::TenantLimits& limits = ctx.tenant.tenant->limits;
  if (!limits.mig_profiles.empty()) {
    for (const ContainerView& c : ctx.pod.containers) {
      for (const auto& [name, q] : ContainerResources(c)) {
        std::string profile = MigProfileOf(name);
        if (profile.empty() || std::find(limits.mig_profiles.begin(), limits.mig_profiles.end(),
                                         profile) != limits.mig_profiles.end()) {
          continue;
        }
        out.push_back(MakeViolation(
            "tenant-limits",
            absl::StrCat(c.Label(), " requests ", name, ", but ", TenantName(ctx),
                         " may use only MIG profiles ", absl::StrJoin(limits.mig_profiles, ", "),
                         "; request one of those instead")));
      }
    }
  }
  if (limits.shared_replicas_per_pod && ctx.pod.demand.ok()) {
    int64_t replicas = 0;
    std::vector<std::string> names;
    for (const topology::ResourceCount& device : ctx.pod.demand->devices) {
      if (!IsSharedReplica(ClassifyPodResource(device.name, ctx.policy))) continue;
      replicas += device.count;
      names.push_back(device.name);
    }
    if (replicas > *limits.shared_replicas_per_pod) {
      out.push_back(MakeViolation(
          "tenant-limits",
          absl::StrCat("pod requests ", replicas, " shared GPU replicas (",
                       absl::StrJoin(names, ", "), "), but ", TenantName(ctx), " allows at most ",
                       *limits.shared_replicas_per_pod,
                       " per pod; request fewer (more replicas of one GPU add no compute)")));
    }
  }
}

void CheckTenantMemory(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier || !ctx.tenant.tenant || !ctx.pod.demand.ok()) return;
  const std::optional<int64_t>& limit = ctx.tenant.tenant->limits.gpu_memory_mib_per_pod;
  if (!limit || ctx.pod.demand->memory_mib <= *limit || !MemoryAnnotationChanged(ctx)) return;
  std::vector<std::string> sources;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (ctx.policy.IsMemoryResource(name) &&
          std::find(sources.begin(), sources.end(), name) == sources.end()) {
        sources.push_back(name);
      }
    }
  }
  if (ctx.pod.facts.annotations.count(ctx.policy.memory_annotation)) {
    sources.push_back(ctx.policy.memory_annotation);
  }
  out.push_back(MakeViolation(
      "tenant-limits",
      absl::StrCat("pod requests ", ctx.pod.demand->memory_mib, "Mi of GPU memory (",
                   absl::StrJoin(sources, ", "), "), but ", TenantName(ctx), " allows at most ",
                   *limit, "Mi per pod; request less, or split the work across pods")));
}

void CheckInvalidGpuRequest(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (ctx.pod.demand.ok() || !MemoryAnnotationChanged(ctx)) return;
  out.push_back(MakeViolation("invalid-gpu-request",
                              absl::StrCat(ctx.pod.demand.status().message(),
                                           "; fix the value so the scheduler can account it")));
}

void CheckPriorityClass(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tenant) return;
  const std::vector<std::string>& allowed = ctx.tenant.tenant->priority_classes;
  const topology::PodFacts& pod = ctx.pod.facts;
  if (!allowed.empty()) {
    // The tenant's list bounds its classes: any other is refused, whatever its value. No class
    // is priority 0 (or the cluster's default class, which kube-apiserver fills in before this
    // webhook sees the pod): nothing above the floor to preempt with.
    const std::string& name = pod.priority_class_name;
    if (name.empty() || std::find(allowed.begin(), allowed.end(), name) != allowed.end()) return;
    out.push_back(MakeViolation(
        "priority-class",
        absl::StrCat("priorityClassName \"", name, "\" is not allowed for ", TenantName(ctx),
                     " (allowed: ", absl::StrJoin(allowed, ", "),
                     "): a pod's priority decides whose pods it may preempt; use one of those")));
    return;
  }
  // No list, the default: only a priority that cannot preempt across tenants. kube-apiserver's
  // Priority admission has filled spec.priority and spec.preemptionPolicy from the class (or
  // the cluster's globalDefault class) before any webhook sees the pod.
  if (CannotPreempt(pod)) return;
  out.push_back(MakeViolation(
      "priority-class",
      absl::StrCat(DescribePriority(pod), ": ",
                   pod.priority < 0
                       ? "below 0, any other tenant's pod may preempt it"
                       : "it may preempt other tenants' lower-priority pods, CPU-only pods "
                         "included, wherever kube-scheduler does not ask gpu-tenancy",
                   "; ", TenantName(ctx),
                   " lists no priorityClasses, so its pods may use only priority 0 or a class "
                   "above 0 with preemptionPolicy: Never, unless the policy lists the class")));
}

}  // namespace webhook::pod_rules_internal
