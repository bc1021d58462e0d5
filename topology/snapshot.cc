#include "topology/snapshot.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace topology {

const NodeState* ClusterSnapshot::FindNode(absl::string_view name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.get();
}

std::vector<std::string> ClusterSnapshot::SortedNodeNames() const {
  std::vector<std::string> names;
  names.reserve(nodes_.size());
  for (const auto& [name, state] : nodes_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

const Labels& ClusterSnapshot::NamespaceLabels(absl::string_view ns) const {
  static const Labels kEmpty;
  auto it = namespace_labels_.find(ns);
  return it == namespace_labels_.end() ? kEmpty : it->second;
}

std::optional<int> RecordedGpuIndex(const PodFacts& pod) {
  auto it = pod.annotations.find(kGpuIndexAnnotation);
  int index = 0;
  if (it == pod.annotations.end() || !absl::SimpleAtoi(it->second, &index) || index < 0) {
    return std::nullopt;
  }
  return index;
}

ClusterSnapshot BuildSnapshot(const ClusterData& data, const Catalog& catalog, const Policy& policy,
                              std::vector<std::string>* skipped) {
  absl::flat_hash_map<std::string, NodeState> states;
  for (const NodeFacts& node : data.nodes) {
    NodeState state;
    state.facts = node;
    state.supply = BuildNodeSupply(node, catalog, policy);
    states.insert_or_assign(node.name, std::move(state));
  }
  for (const PodFacts& pod : data.pods) {
    if (!pod.HoldsResources()) continue;
    auto it = states.find(pod.node_name);
    if (it == states.end()) continue;
    absl::StatusOr<GpuDemand> demand = ComputeDemand(pod, policy);
    if (!demand.ok()) {
      if (skipped) skipped->push_back(std::string(demand.status().message()));
      continue;
    }
    if (demand->empty()) continue;
    ApplyPod(it->second.occupancy, *demand, it->second.supply, RecordedGpuIndex(pod), +1);
  }
  ClusterSnapshot::NodeMap nodes;
  for (auto& [name, state] : states) {
    nodes.emplace(name, std::make_shared<const NodeState>(std::move(state)));
  }
  return ClusterSnapshot(std::move(nodes), data.namespace_labels);
}

absl::StatusOr<PodContext> MakePodContext(const PodFacts& pod, const Policy& policy,
                                          const Labels& namespace_labels) {
  PodContext ctx;
  ctx.policy = &policy;
  ctx.tenant = ResolveTenant(policy, pod.namespace_name, namespace_labels);
  if (policy.canary) {
    auto it = pod.labels.find(policy.canary->pod_label);
    ctx.canary = it != pod.labels.end() && it->second == "true";
  }
  auto it = pod.annotations.find(kSchedulingPolicyAnnotation);
  if (it != pod.annotations.end()) {
    if (it->second == "binpack") {
      ctx.scoring = ScoringStrategy::kBinpack;
    } else if (it->second == "spread") {
      ctx.scoring = ScoringStrategy::kSpread;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("annotation ", kSchedulingPolicyAnnotation,
                                                     " must be binpack or spread, got \"",
                                                     it->second, "\""));
    }
  }
  return ctx;
}

}  // namespace topology
