// The tier and sharing rules: unknown-tenant (GPUs from a namespace no tenant owns),
// tier-shared (sharing modes and pools the tier does not allow), fail-requests-greater-than-one,
// and the time-slicing warning.
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

using topology::ModeSet;
using topology::Quantity;
using topology::SharingMode;

ModeSet Modes(std::initializer_list<SharingMode> modes) {
  ModeSet set;
  for (SharingMode m : modes) set.Add(m);
  return set;
}

// The modes under which a resource may be used; the tier needs at least one of them.
// Names the webhook does not classify are left to the extender.
std::optional<ModeSet> AcceptableModes(ResourceUse use) {
  switch (use) {
    case ResourceUse::kWholeGpu:
      return Modes(
          {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMps, SharingMode::kTimeslice});
    case ResourceUse::kMig:
      return Modes({SharingMode::kMig});
    case ResourceUse::kMigShared:
      return Modes({SharingMode::kMigShared});
    case ResourceUse::kShared:
      return Modes({SharingMode::kTimeslice, SharingMode::kMps});
    case ResourceUse::kMps:
      return Modes({SharingMode::kMps});
    case ResourceUse::kMemory:
      return Modes({SharingMode::kTimeslice, SharingMode::kMps, SharingMode::kMigShared});
    case ResourceUse::kNotGpu:
    case ResourceUse::kOtherGpu:
      break;
  }
  return std::nullopt;
}

bool TierAllowsAny(const topology::Tier& tier, const ModeSet& modes) {
  for (SharingMode m : {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMigShared,
                        SharingMode::kMps, SharingMode::kTimeslice}) {
    if (modes.Has(m) && tier.modes.Has(m)) return true;
  }
  return false;
}

std::string FirstMigProfile(const topology::TenantRef& tenant) {
  if (tenant.tenant && !tenant.tenant->limits.mig_profiles.empty()) {
    return tenant.tenant->limits.mig_profiles.front();
  }
  return "1g.10gb";
}

// What a tenant of this tier can ask for instead.
std::string UseInstead(const topology::TenantRef& tenant) {
  const topology::Tier& tier = *tenant.tier;
  if (tier.modes.Has(SharingMode::kMig)) {
    return absl::StrCat("request a MIG slice such as nvidia.com/mig-", FirstMigProfile(tenant));
  }
  if (tier.modes.Has(SharingMode::kExclusive)) return "request a whole GPU (nvidia.com/gpu)";
  if (tier.modes.Has(SharingMode::kTimeslice) || tier.modes.Has(SharingMode::kMps)) {
    return "request nvidia.com/gpu.shared";
  }
  if (tier.modes.Has(SharingMode::kMigShared)) {
    return absl::StrCat("request a shared MIG slice such as nvidia.com/mig-",
                        FirstMigProfile(tenant), ".shared");
  }
  return "ask the GPU platform team for a tier that allows it";
}

std::string MayUseOnly(const PodRuleContext& ctx) {
  return absl::StrCat(TenantPhrase(ctx.tenant, ctx.namespace_name), " may use only ",
                      ctx.tenant.tier->modes.ToString());
}

}  // namespace

void CheckUnknownTenant(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (ctx.tenant.tier) return;
  std::string trigger;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (ClassifyPodResource(name, ctx.policy) != ResourceUse::kNotGpu) {
        trigger = absl::StrCat(c.Label(), " requests ", name);
        break;
      }
    }
    if (!trigger.empty()) break;
  }
  if (trigger.empty()) {
    std::vector<Finding> findings = DeviceAccessFindings(ctx.pod);
    if (!findings.empty()) trigger = findings.front().what;
  }
  for (const DraExtendedAsk& ask : ctx.pod.dra_extended) {
    if (!trigger.empty() || ask.class_kind == topology::DeviceClassKind::kOther) continue;
    trigger = absl::StrCat(ask.container, " requests ", ask.resource, " (device class ",
                           ask.device_class, " through DRA)");
  }
  if (trigger.empty() && !ctx.pod.gpu_claims.empty()) {
    trigger = absl::StrCat("the pod uses ", ctx.pod.gpu_claims.front());
  }
  if (trigger.empty() && ctx.pod.facts.annotations.count(ctx.policy.memory_annotation)) {
    trigger = absl::StrCat("the pod sets ", ctx.policy.memory_annotation);
  }
  if (trigger.empty()) return;  // a CPU-only pod of an unknown tenant is fine
  out.push_back(MakeViolation(
      "unknown-tenant",
      absl::StrCat("namespace \"", ctx.namespace_name,
                   "\" belongs to no tenant and the policy denies GPUs to unknown tenants, but ",
                   trigger, "; ask the GPU platform team to add the namespace to a tenant")));
}

void CheckTierShared(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier) return;
  const topology::Tier& tier = *ctx.tenant.tier;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      ResourceUse use = ClassifyPodResource(name, ctx.policy);
      std::optional<ModeSet> acceptable = AcceptableModes(use);
      if (!acceptable || TierAllowsAny(tier, *acceptable)) continue;
      out.push_back(MakeViolation(
          "tier-shared",
          absl::StrCat(c.Label(), " requests ", name,
                       use == ResourceUse::kMemory
                           ? " (GPU memory without a whole device shares a GPU with other pods)"
                           : "",
                       ", but ", MayUseOnly(ctx), "; ", UseInstead(ctx.tenant))));
    }
  }
  std::vector<std::string> allowed_pools;
  for (const topology::Pool& p : ctx.policy.pools) {
    if (tier.modes.Has(p.mode)) allowed_pools.push_back(p.name);
  }
  for (const PoolSelection& s : ctx.pod.pool_selections) {
    const topology::Pool* pool = ctx.policy.FindPool(s.pool);
    if (!pool || tier.modes.Has(pool->mode)) continue;  // unknown names are the extender's call
    std::string instead = allowed_pools.empty()
                              ? "drop the selector"
                              : absl::StrCat("select ", absl::StrJoin(allowed_pools, " or "),
                                             ", or drop the selector");
    out.push_back(MakeViolation(
        "tier-shared",
        absl::StrCat("pod selects pool \"", s.pool, "\" (", topology::ModeName(pool->mode),
                     ") through ", s.how, " on ", ctx.policy.pool_label, ", but ", MayUseOnly(ctx),
                     "; ", instead)));
  }
}

void CheckFailRequestsGreaterThanOne(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.policy.fail_requests_greater_than_one) return;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (!IsSharedReplica(ClassifyPodResource(name, ctx.policy))) continue;
      if (q <= Quantity::FromUnits(1)) continue;
      out.push_back(MakeViolation(
          "fail-requests-greater-than-one",
          absl::StrCat(c.Label(), " requests ", q.ToString(), " ", name,
                       ", but a shared GPU resource allows at most 1 per container (the device "
                       "plugin would only fail the pod later at kubelet with "
                       "UnexpectedAdmissionError); request 1, or split the work across "
                       "containers")));
    }
  }
}

void AddWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings) {
  if (!ctx.tenant.tier || !ctx.pod.demand.ok() || ctx.pod.demand->memory_mib > 0) return;
  const topology::Tier& tier = *ctx.tenant.tier;
  for (const topology::ResourceCount& device : ctx.pod.demand->devices) {
    ResourceUse use = ClassifyPodResource(device.name, ctx.policy);
    const bool timesliced =
        (use == ResourceUse::kShared && tier.modes.Has(SharingMode::kTimeslice)) ||
        (use == ResourceUse::kMigShared && tier.modes.Has(SharingMode::kMigShared));
    if (timesliced) {
      warnings.push_back(absl::StrCat("no memory isolation on time-sliced GPUs; set ",
                                      ctx.policy.memory_annotation,
                                      " so the scheduler keeps headroom"));
      return;
    }
  }
}

}  // namespace webhook::pod_rules_internal
