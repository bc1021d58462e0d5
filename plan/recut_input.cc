#include "plan/recut_input.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "topology/fit.h"
#include "topology/quota.h"
#include "topology/reconfigure_rules.h"
#include "topology/wellknown.h"

namespace plan {
namespace {

using topology::NodeState;

// "3g.40gb" for nvidia.com/mig-3g.40gb; empty for anything else (shared MIG replicas included).
absl::string_view MigSuffix(absl::string_view resource) {
  if (!absl::StartsWith(resource, topology::kMigResourcePrefix) ||
      absl::EndsWith(resource, topology::kSharedSuffix)) {
    return {};
  }
  return resource.substr(topology::kMigResourcePrefix.size());
}

std::string LabelOf(const topology::Labels& labels, absl::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

// The node as a re-cut candidate, or nullopt when it is none.
std::optional<RecutNode> Candidate(const NodeState& node, const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy) {
  const topology::NodeSupply& supply = node.supply;
  const topology::Labels& labels = node.facts.labels;
  int gpus = 0;
  if (supply.model == nullptr || supply.pool_mode != topology::SharingMode::kMig ||
      !supply.mig_unsettled.empty() || LabelOf(labels, topology::kMigStrategyLabel) != "mixed" ||
      !absl::SimpleAtoi(LabelOf(labels, topology::kGpuCountLabel), &gpus) || gpus <= 0 ||
      node.occupancy.Used(topology::kGpuResource) > 0) {
    return std::nullopt;
  }
  RecutNode out;
  out.name = node.facts.name;
  out.model = supply.model;
  out.gpus = gpus;
  std::set<std::string> tenants;
  for (const auto& hold : node.holds) {
    bool holds_gpu = false;
    for (const topology::ResourceCount& device : hold->demand.devices) {
      holds_gpu = holds_gpu || topology::IsGpuResource(device.name);
      const topology::MigProfile* profile = nullptr;
      if (absl::string_view suffix = MigSuffix(device.name); !suffix.empty()) {
        profile = supply.model->FindProfile(suffix);
      }
      for (int64_t i = 0; profile != nullptr && i < device.count; ++i) out.keep.push_back(profile);
    }
    if (!holds_gpu) continue;
    out.drained_pods += 1;
    tenants.insert(topology::ResolveTenant(policy, hold->namespace_name,
                                           snapshot.NamespaceLabels(hold->namespace_name))
                       .name);
  }
  out.drained_tenants.assign(tenants.begin(), tenants.end());
  const topology::MigProfile* canary = nullptr;
  int64_t reserve = 0;
  if (policy.canary) canary = supply.model->FindProfile(policy.canary->mig_profile);
  for (const topology::OfferedResource& r : supply.resources) {
    if (r.kind != topology::ResourceKind::kMigInstance) continue;
    absl::string_view suffix = MigSuffix(r.name);
    const bool is_canary = canary != nullptr && supply.model->FindProfile(suffix) == canary;
    const int64_t held_back = is_canary ? std::min(policy.canary->reserve, r.allocatable) : 0;
    if (is_canary) reserve = held_back;
    out.free_now[std::string(suffix)] =
        std::max<int64_t>(0, r.allocatable - node.occupancy.Used(r.name) - held_back);
  }
  // The canary reserve stays free after the re-cut, as it is today.
  for (int64_t i = 0; i < reserve; ++i) out.keep.push_back(canary);
  return out;
}

// Whether a re-cut could be all the pod lacks on the node: it fits today, or only the node's
// MIG instances stand in its way, and its quota lets it.
bool MayUse(const topology::GpuDemand& demand, const topology::PodContext& context,
            const NodeState& node, topology::PodQuotaCheck* quota) {
  topology::FitResult fit = topology::Fit(demand, context, node.supply, node.occupancy);
  if (!fit.fits() && fit.rule != topology::Rule::kNotOffered &&
      fit.rule != topology::Rule::kExceedsNode && fit.rule != topology::Rule::kExhausted) {
    return false;
  }
  return quota == nullptr || quota->Check(node.supply, node.facts.labels).fits();
}

}  // namespace

RecutInput RecutInputFromCluster(const topology::ClusterSnapshot& snapshot,
                                 const topology::Policy& policy,
                                 absl::Span<const topology::PodFacts> pods) {
  RecutInput out;
  std::vector<const NodeState*> states;
  for (const std::string& name : snapshot.SortedNodeNames()) {
    const NodeState* node = snapshot.FindNode(name);
    std::optional<RecutNode> candidate = Candidate(*node, snapshot, policy);
    if (!candidate) continue;
    out.problem.nodes.push_back(*std::move(candidate));
    out.current_config.push_back(LabelOf(node->facts.labels, topology::kMigConfigLabel));
    states.push_back(node);
  }
  for (const topology::PodFacts& pod : pods) {
    if (!pod.node_name.empty() || pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    absl::StatusOr<topology::GpuDemand> demand = topology::ComputeDemand(pod, policy);
    if (!demand.ok()) {
      out.skipped.push_back(absl::StrCat(pod.Key(), ": ", demand.status().message()));
      continue;
    }
    if (demand->devices.empty()) continue;
    out.pending_pods += 1;
    RecutPod wanted;
    wanted.name = pod.Key();
    for (const topology::ResourceCount& device : demand->devices) {
      absl::string_view suffix = MigSuffix(device.name);
      if (suffix.empty()) {
        wanted.profiles.clear();
        break;
      }
      wanted.profiles.emplace_back(std::string(suffix), device.count);
    }
    if (wanted.profiles.empty()) continue;  // not MIG demand: a re-cut cannot serve it
    absl::StatusOr<topology::PodContext> context =
        topology::MakePodContext(pod, policy, snapshot.NamespaceLabels(pod.namespace_name));
    if (!context.ok()) {
      out.skipped.push_back(absl::StrCat(pod.Key(), ": ", context.status().message()));
      continue;
    }
    wanted.tenant = context->tenant.name;
    std::optional<topology::PodQuotaCheck> quota;
    if (context->tenant.tenant != nullptr && !context->tenant.tenant->quota.empty()) {
      quota.emplace(*context->tenant.tenant, policy, *demand,
                    topology::TenantUsage(snapshot, policy, context->tenant.name));
    }
    for (size_t n = 0; n < states.size(); ++n) {
      if (MayUse(*demand, *context, *states[n], quota ? &*quota : nullptr)) {
        wanted.nodes.push_back(n);
      }
    }
    out.problem.pods.push_back(std::move(wanted));
  }
  return out;
}

}  // namespace plan
