#include "guard/contract.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/dra/class_offer.h"
#include "topology/fit.h"
#include "topology/occupancy.h"
#include "topology/quota.h"
#include "webhook/pod_rules.h"
#include "webhook/rule_table.h"
#include "webhook/verdict.h"

namespace guard {
namespace {

using topology::SharingMode;

ContractViolation About(const topology::PodFacts& pod, const topology::TenantRef& tenant) {
  ContractViolation v;
  v.kind = ObjectKind::kPod;
  v.namespace_name = pod.namespace_name;
  v.name = pod.name;
  v.uid = pod.uid;
  v.node = pod.node_name;
  v.tenant = tenant.name;
  v.created = pod.created;
  return v;
}

ContractViolation With(ContractViolation v, absl::string_view rule, std::string message) {
  v.rule = std::string(rule);
  v.message = std::move(message);
  return v;
}

// The rules only a pod's node can break: a pool or device mode the tier may not use there.
bool IsPlacementRule(topology::Rule rule) {
  return rule == topology::Rule::kPoolUndefined || rule == topology::Rule::kTierPool ||
         rule == topology::Rule::kTierResource;
}

// The class of the claim request a result answers ("gpu" or "gpu/big" for a subrequest).
const topology::DraRequest* RequestOf(const topology::DraClaim& claim,
                                      const topology::DraAllocationResult& result) {
  for (const topology::DraRequest& r : claim.requests) {
    if (r.name == result.request) return &r;
  }
  return nullptr;
}

// True when `usage` holds some of the item `verdict` found exceeded.
bool Frees(const topology::QuotaUsage& usage, const topology::QuotaVerdict& verdict) {
  switch (verdict.item) {
    case topology::QuotaItem::kGpus:
      return usage.gpus > 0;
    case topology::QuotaItem::kMigInstances: {
      auto it = usage.mig_instances.find(verdict.mig_profile);
      return it != usage.mig_instances.end() && it->second > 0;
    }
    case topology::QuotaItem::kMigComputeSlices:
      return usage.mig_compute_slices > 0;
    case topology::QuotaItem::kSharedReplicas:
      return usage.shared_replicas > 0;
    case topology::QuotaItem::kGpuMemory:
      return usage.gpu_memory_mib > 0;
    case topology::QuotaItem::kGpuPods:
      return usage.gpu_pods > 0;
  }
  return false;
}

}  // namespace

absl::string_view KindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kPod:
      return "Pod";
    case ObjectKind::kResourceClaim:
      return "ResourceClaim";
    case ObjectKind::kNode:
      return "Node";
  }
  return "";
}

std::string ObjectKey(ObjectKind kind, absl::string_view namespace_name, absl::string_view name) {
  if (namespace_name.empty()) return absl::StrCat(KindName(kind), " ", name);
  return absl::StrCat(KindName(kind), " ", namespace_name, "/", name);
}

std::vector<ContractViolation> CheckNode(const topology::NodeState& node) {
  if (node.supply.mig_drift.empty()) return {};
  ContractViolation v;
  v.kind = ObjectKind::kNode;
  v.name = node.facts.name;
  v.node = node.facts.name;
  v.rule = std::string(kMigDriftRule);
  v.message = webhook::MakeViolation(
                  kMigDriftRule,
                  absl::StrCat("node \"", node.facts.name, "\": ", node.supply.mig_drift,
                               "; drain it and apply the config again (gpu-tenancy reconfigure), "
                               "or set nvidia.com/mig.config to what it shows"))
                  .message;
  return {v};
}

std::vector<std::string> GuardRuleIds() {
  std::vector<std::string> ids;
  auto add = [&ids](absl::string_view id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.emplace_back(id);
  };
  for (const webhook::PodRule& row : webhook::PodRules()) {
    if (row.phases & webhook::kAfterAdmission) add(row.id);
  }
  for (absl::string_view own : {kTierPoolRule, kClaimDeviceRule, kQuotaRule, kMigDriftRule}) {
    add(own);
  }
  return ids;
}

absl::Status CheckGuardActions(const topology::GuardPolicy& guard) {
  const std::vector<std::string> ids = GuardRuleIds();
  for (const auto& [rule, action] : guard.actions) {
    if (std::find(ids.begin(), ids.end(), rule) != ids.end()) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("guard.actions.", rule, ": not a rule the contract guard reports (one of ",
                     absl::StrJoin(ids, ", "), ")"));
  }
  return absl::OkStatus();
}

std::string ContractViolation::ObjectKey() const {
  return guard::ObjectKey(kind, namespace_name, name);
}

std::vector<ContractViolation> CheckPod(const topology::PodFacts& pod,
                                        const topology::ClusterSnapshot& snapshot,
                                        const topology::Policy& policy) {
  std::vector<ContractViolation> out;
  const topology::Labels& labels = snapshot.NamespaceLabels(pod.namespace_name);
  const topology::TenantRef tenant = topology::ResolveTenant(policy, pod.namespace_name, labels);
  const topology::DraState& dra = snapshot.dra();
  webhook::PodView view = webhook::PodViewOf(pod, policy);
  view.gpu_claims = webhook::GpuClaimUses(pod, dra, policy.admission);
  view.dra_extended = webhook::DraExtendedAsks(view, &dra, policy.admission);
  webhook::PodRuleContext ctx{view, nullptr, policy, tenant, pod.namespace_name, &dra, &snapshot};
  const ContractViolation about = About(pod, tenant);
  for (webhook::Violation& v : webhook::RunPodRules(ctx, webhook::kAfterAdmission).violations) {
    out.push_back(With(about, v.rule, std::move(v.message)));
  }
  // Where it runs: the node's pool and device modes, as the filter would judge them now.
  const topology::NodeState* node = snapshot.FindNode(pod.node_name);
  if (!tenant.tier || !node || !view.demand.ok() || view.demand->empty()) return out;
  absl::StatusOr<topology::PodContext> pod_context = topology::MakePodContext(pod, policy, labels);
  if (!pod_context.ok()) return out;
  const topology::FitResult fit =
      topology::Fit(*view.demand, *pod_context, node->supply, topology::NodeOccupancy{});
  if (!IsPlacementRule(fit.rule)) return out;
  out.push_back(
      With(about, kTierPoolRule,
           webhook::MakeViolation(
               kTierPoolRule,
               absl::StrCat("pod runs on node \"", pod.node_name, "\", where ", fit.Reason(),
                            "; delete it so the scheduler places it where the tier may run"))
               .message));
  return out;
}

std::vector<ContractViolation> CheckClaim(const topology::DraClaim& claim,
                                          const topology::ClusterSnapshot& snapshot,
                                          const topology::Policy& policy) {
  std::vector<ContractViolation> out;
  if (!claim.allocated) return out;
  const topology::TenantRef tenant = topology::ResolveTenant(
      policy, claim.namespace_name, snapshot.NamespaceLabels(claim.namespace_name));
  ContractViolation about;
  about.kind = ObjectKind::kResourceClaim;
  about.namespace_name = claim.namespace_name;
  about.name = claim.name;
  about.uid = claim.uid;
  about.node = claim.allocated_node;
  about.tenant = tenant.name;
  const std::string subject =
      absl::StrCat("ResourceClaim \"", claim.namespace_name, "/", claim.name, "\"");
  for (const topology::DraAllocationResult& result : claim.results) {
    const topology::DraRequest* request = RequestOf(claim, result);
    if (!request || policy.admission.ClassifyDeviceClass(request->device_class) !=
                        topology::DeviceClassKind::kGpu) {
      continue;  // another driver's device, or one admission reads as unknown demand
    }
    const topology::DraDevice* device = snapshot.dra().Find(result);
    const std::string id = result.Id().ToString();
    if (!tenant.tier) {
      out.push_back(With(
          about, "unknown-tenant",
          webhook::MakeViolation("unknown-tenant",
                                 absl::StrCat("namespace \"", claim.namespace_name,
                                              "\" belongs to no tenant and the policy denies GPUs "
                                              "to unknown tenants, but ",
                                              subject, " holds ", id,
                                              "; delete the claim, or ask the GPU platform team "
                                              "to add the namespace to a tenant"))
              .message));
      break;
    }
    if (!device) continue;  // not published now: nothing to read
    const SharingMode mode = topology::DraDeviceMode(*device);
    if (!tenant.tier->modes.Has(mode)) {
      out.push_back(
          With(about, kClaimDeviceRule,
               webhook::MakeViolation(
                   kClaimDeviceRule,
                   absl::StrCat(subject, " holds ", id, ", ", topology::DraModeWords(mode), " (",
                                topology::ModeName(mode), "), but ",
                                webhook::TenantPhrase(tenant, claim.namespace_name),
                                " may use only ", tenant.tier->modes.ToString(),
                                "; delete the claim: made again, it gets the tenant's selectors"))
                   .message));
      continue;
    }
    const std::vector<std::string>* profiles =
        tenant.tenant && !tenant.tenant->limits.mig_profiles.empty()
            ? &tenant.tenant->limits.mig_profiles
            : nullptr;
    if (profiles && device->type == "mig" &&
        std::find(profiles->begin(), profiles->end(), device->profile) == profiles->end()) {
      out.push_back(With(
          about, kClaimDeviceRule,
          webhook::MakeViolation(
              kClaimDeviceRule,
              absl::StrCat(subject, " holds ", id, ", a MIG device of profile ", device->profile,
                           ", but ", webhook::TenantPhrase(tenant, claim.namespace_name),
                           " may use only ", absl::StrJoin(*profiles, ", "),
                           "; delete the claim: made again, it gets the tenant's selectors"))
              .message));
      continue;
    }
    // The gpu-memory selector's cap, also where admission left it to the devices published
    // then (webhook/claim_selectors.h) and one with more memory came later.
    const int64_t* cap = tenant.tenant && tenant.tenant->limits.gpu_memory_mib_per_pod
                             ? &*tenant.tenant->limits.gpu_memory_mib_per_pod
                             : nullptr;
    auto memory = device->capacity.find(topology::kNvidiaMemoryCapacity);
    if (cap && device->driver == topology::kNvidiaDraDriver && memory != device->capacity.end() &&
        memory->second.ValueMiB() > *cap) {
      out.push_back(
          With(about, kClaimDeviceRule,
               webhook::MakeViolation(
                   kClaimDeviceRule,
                   absl::StrCat(subject, " holds ", id, ", a device with ",
                                memory->second.ValueMiB(), "Mi of memory, but ",
                                webhook::TenantPhrase(tenant, claim.namespace_name),
                                " may use at most ", *cap, "Mi of GPU memory per pod",
                                "; delete the claim: made again, it gets the tenant's selectors"))
                   .message));
    }
  }
  return out;
}

std::vector<ContractViolation> CheckQuota(absl::string_view tenant_name,
                                          const topology::ClusterSnapshot& snapshot,
                                          const topology::Policy& policy) {
  std::vector<ContractViolation> out;
  const topology::Tenant* tenant = policy.FindTenant(tenant_name);
  if (!tenant || tenant->quota.empty()) return out;
  topology::QuotaUsage held = topology::TenantUsage(snapshot, policy, tenant_name);
  const topology::QuotaUsage none;
  if (topology::CheckQuota(tenant->quota, none, held).ok) return out;
  std::vector<std::string> over;
  for (const topology::QuotaLine& line : topology::QuotaLines(tenant->quota, held)) {
    if (line.used > line.quota) {
      over.push_back(absl::StrCat(line.resource, " ", line.used, " held, quota ", line.quota));
    }
  }
  // The tenant's GPU pods, newest first, with what each holds where it runs.
  struct Holder {
    const topology::PodFacts* pod;
    topology::QuotaUsage usage;
  };
  std::vector<Holder> holders;
  absl::flat_hash_map<std::string, bool> ours;  // namespace -> belongs to the tenant
  snapshot.contract_pods().ForEach([&](const std::string&, const auto& facts) {
    auto [it, added] = ours.try_emplace(facts->namespace_name, false);
    if (added) {
      it->second = topology::ResolveTenant(policy, facts->namespace_name,
                                           snapshot.NamespaceLabels(facts->namespace_name))
                       .name == tenant_name;
    }
    if (!it->second) return;
    const topology::NodeState* node = snapshot.FindNode(facts->node_name);
    if (!node) return;
    for (const auto& hold : node->holds) {
      if (hold->uid != facts->uid) continue;
      holders.push_back({facts.get(), topology::HoldUsage(hold->demand, node->supply,
                                                          node->facts.labels, policy)});
      break;
    }
  });
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
    return std::tie(a.pod->created, a.pod->namespace_name, a.pod->name) >
           std::tie(b.pod->created, b.pod->namespace_name, b.pod->name);
  });
  const topology::TenantRef ref{tenant->name, tenant, policy.FindTier(tenant->tier)};
  for (const Holder& h : holders) {
    const topology::QuotaVerdict verdict = topology::CheckQuota(tenant->quota, none, held);
    if (verdict.ok) break;
    if (!Frees(h.usage, verdict)) continue;  // deleting it would not bring the item down
    held.Add(h.usage, -1);
    out.push_back(With(
        About(*h.pod, ref), kQuotaRule,
        webhook::MakeViolation(
            kQuotaRule, absl::StrCat("tenant ", tenant_name, " holds more than its quota (",
                                     absl::StrJoin(over, "; "),
                                     ") and this pod is among its newest beyond it; delete it, "
                                     "or raise the quota"))
            .message));
  }
  return out;
}

std::vector<ContractViolation> CheckAll(const topology::ClusterSnapshot& snapshot,
                                        const topology::Policy& policy) {
  std::vector<ContractViolation> out;
  auto add = [&](std::vector<ContractViolation> found) {
    for (ContractViolation& v : found) out.push_back(std::move(v));
  };
  snapshot.contract_pods().ForEach(
      [&](const std::string&, const auto& pod) { add(CheckPod(*pod, snapshot, policy)); });
  snapshot.dra().claims.ForEach(
      [&](const topology::DraClaim& claim) { add(CheckClaim(claim, snapshot, policy)); });
  for (const topology::Tenant& t : policy.tenants) add(CheckQuota(t.name, snapshot, policy));
  snapshot.ForEachNode([&](const topology::NodeState& node) { add(CheckNode(node)); });
  std::sort(out.begin(), out.end(), [](const ContractViolation& a, const ContractViolation& b) {
    return std::make_tuple(a.ObjectKey(), a.rule, a.message) <
           std::make_tuple(b.ObjectKey(), b.rule, b.message);
  });
  return out;
}

}  // namespace guard
