#include "topology/snapshot.h"

#include <algorithm>
#include <tuple>

#include "absl/hash/hash.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "topology/device_report.h"
#include "topology/dra/extended_resources.h"
#include "topology/fair_share.h"

namespace topology {

ClusterSnapshot::ClusterSnapshot()
    : namespaces_(std::make_shared<const NamespaceMap>()),
      usage_(std::make_shared<const UsageByNamespace>()),
      pending_usage_(std::make_shared<const UsageByNamespace>()),
      dra_(std::make_shared<const DraState>()),
      budgets_(std::make_shared<const std::vector<DisruptionBudget>>()) {
  static const std::shared_ptr<const ShardTable> kEmpty = [] {
    auto table = std::make_shared<ShardTable>();
    table->fill(std::make_shared<const Shard>());
    return table;
  }();
  shards_ = kEmpty;
}

// The shard comes from the top bits of the same hash the shard's table uses. Not the low bits:
// the table tags each slot with the low 7 bits (its SIMD match byte), so sharding on them gave
// every key of a shard the same tag and each lookup compared strings with every slot probed.
size_t ClusterSnapshot::ShardOfHash(size_t hash) {
  static_assert(kShards == 256, "the shard index is the top 8 bits of the hash");
  return (hash >> (sizeof(size_t) * 8 - 8)) & (kShards - 1);
}

size_t ClusterSnapshot::ShardOf(absl::string_view name) {
  return ShardOfHash(Shard::hasher{}(name));
}

const NodeState* ClusterSnapshot::FindNode(absl::string_view name) const {
  const size_t hash = Shard::hasher{}(name);
  const Shard& shard = *(*shards_)[ShardOfHash(hash)];
  auto it = shard.find(name, hash);
  return it == shard.end() ? nullptr : it->second.get();
}

void ClusterSnapshot::FindNodes(absl::Span<const absl::string_view> names,
                                absl::Span<const NodeState*> out) const {
  // One hash per name, for the shard and the table alike. The lookups are independent, so the
  // CPU overlaps their cache misses (prefetching the tables ahead measured slower: the
  // table's prefetch() hashes the key again).
  const size_t n = std::min(names.size(), out.size());
  for (size_t i = 0; i < n; ++i) {
    const size_t hash = Shard::hasher{}(names[i]);
    const Shard& shard = *(*shards_)[ShardOfHash(hash)];
    auto it = shard.find(names[i], hash);
    out[i] = it == shard.end() ? nullptr : it->second.get();
  }
}

std::shared_ptr<const NodeState> ClusterSnapshot::FindNodeShared(absl::string_view name) const {
  const size_t hash = Shard::hasher{}(name);
  const Shard& shard = *(*shards_)[ShardOfHash(hash)];
  auto it = shard.find(name, hash);
  return it == shard.end() ? nullptr : it->second;
}

std::vector<std::string> ClusterSnapshot::SortedNodeNames() const {
  std::vector<std::string> names;
  names.reserve(node_count_);
  ForEachNode([&](const NodeState& n) { names.push_back(n.facts.name); });
  std::sort(names.begin(), names.end());
  return names;
}

const Labels& ClusterSnapshot::NamespaceLabels(absl::string_view ns) const {
  static const Labels kEmpty;
  auto it = namespaces_->find(ns);
  return it == namespaces_->end() ? kEmpty : it->second;
}

const BoundPodRef* ClusterSnapshot::FindBoundPod(absl::string_view uid) const {
  const std::shared_ptr<const BoundPodRef>* ref = bound_pods_.Find(uid);
  return ref ? ref->get() : nullptr;
}

ClusterSnapshot::Shard& SnapshotBuilder::Mutable(size_t index) {
  if (!table_copied_) {
    next_.shards_ = std::make_shared<ClusterSnapshot::ShardTable>(*next_.shards_);
    table_copied_ = true;
  }
  // Only this builder holds the fresh copies until Build() hands them out as const.
  auto& table = const_cast<ClusterSnapshot::ShardTable&>(*next_.shards_);
  if (!copied_[index]) {
    table[index] = std::make_shared<ClusterSnapshot::Shard>(*table[index]);
    copied_[index] = true;
  }
  return const_cast<ClusterSnapshot::Shard&>(*table[index]);
}

void SnapshotBuilder::Account(const NodeState& node, int sign) {
  if (node.usage.empty()) return;
  if (!usage_copied_) {
    next_.usage_ = std::make_shared<UsageByNamespace>(*next_.usage_);
    usage_copied_ = true;
  }
  // Only this builder holds the fresh copy until Build() hands it out as const.
  auto& sums = const_cast<UsageByNamespace&>(*next_.usage_);
  for (const auto& [ns, usage] : node.usage) {
    QuotaUsage& sum = sums[ns];
    sum.Add(usage, sign);
    if (sum.empty()) sums.erase(ns);
  }
}

namespace {

// Whether two supplies offer the same quota capacity (OfferedCapacity reads only these), so
// a node rebuilt for a pod event costs no recount.
bool SameOffer(const NodeSupply& a, const NodeSupply& b) {
  if (a.resources.size() != b.resources.size() || a.gpu_memory_mib != b.gpu_memory_mib ||
      a.replicas_per_gpu != b.replicas_per_gpu) {
    return false;
  }
  for (size_t i = 0; i < a.resources.size(); ++i) {
    const OfferedResource& x = a.resources[i];
    const OfferedResource& y = b.resources[i];
    if (x.name != y.name || x.kind != y.kind || x.allocatable != y.allocatable ||
        x.mig_profile != y.mig_profile || x.memory_mib != y.memory_mib) {
      return false;
    }
  }
  return true;
}

}  // namespace

void SnapshotBuilder::Put(std::shared_ptr<const NodeState> node) {
  ClusterSnapshot::Shard& shard = Mutable(ClusterSnapshot::ShardOf(node->facts.name));
  const std::string& name = node->facts.name;  // lives in *node, which the entry keeps alive
  auto old = shard.find(name);
  if (old == shard.end()) {
    Account(*node, +1);
    next_.offered_capacity_.Add(OfferedCapacity(node->supply));
    shard.emplace(name, std::move(node));
    ++next_.node_count_;
    return;
  }
  if (old->second->usage != node->usage) {
    Account(*old->second, -1);
    Account(*node, +1);
  }
  if (!SameOffer(old->second->supply, node->supply)) {
    next_.offered_capacity_.Add(OfferedCapacity(old->second->supply), -1);
    next_.offered_capacity_.Add(OfferedCapacity(node->supply));
  }
  old->second = std::move(node);
}

void SnapshotBuilder::Remove(absl::string_view name) {
  size_t index = ClusterSnapshot::ShardOf(name);
  const ClusterSnapshot::Shard& shard = *(*next_.shards_)[index];
  auto it = shard.find(name);
  if (it == shard.end()) return;
  Account(*it->second, -1);
  next_.offered_capacity_.Add(OfferedCapacity(it->second->supply), -1);
  if (Mutable(index).erase(std::string(name))) --next_.node_count_;
}

void AddHold(NodeState& state, std::shared_ptr<const PodHold> hold, const Policy& policy) {
  ApplyPod(state.occupancy, hold->demand, state.supply, HeldSharedGpu(*hold, state.facts), +1);
  QuotaUsage usage = HoldUsage(hold->demand, state.supply, state.facts.labels, policy);
  if (!usage.empty()) state.usage[hold->namespace_name].Add(usage);
  state.holds.push_back(std::move(hold));
}

QuotaUsage PendingUsage(const GpuDemand& demand, const Policy& policy) {
  static const Labels kNoLabels;
  return UsageOf(demand, kNoLabels, policy);
}

QuotaUsage TenantUsage(const ClusterSnapshot& snapshot, const Policy& policy,
                       absl::string_view tenant) {
  QuotaUsage total;
  auto add = [&](const std::string& ns, const QuotaUsage& usage) {
    if (ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns)).name == tenant) total.Add(usage);
  };
  for (const auto& [ns, usage] : snapshot.usage()) add(ns, usage);
  snapshot.dra().usage.ForEach(add);
  return total;
}

std::shared_ptr<const NodeState> MakeNodeState(NodeFacts facts, const Catalog& catalog,
                                               const Policy& policy) {
  auto state = std::make_shared<NodeState>();
  state->supply = BuildNodeSupply(facts, catalog, policy);
  state->facts = std::move(facts);
  return state;
}

void SortHolds(std::vector<std::shared_ptr<const PodHold>>& holds) {
  std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) {
    return std::tie(a->namespace_name, a->name, a->uid) <
           std::tie(b->namespace_name, b->name, b->uid);
  });
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
  auto dra = std::make_shared<const DraState>(
      MakeDraState(data.dra_slices, data.dra_claims, data.dra_classes, data.dra_claim_templates));
  for (const PodFacts& pod : data.pods) {
    if (!pod.HoldsResources()) continue;
    auto it = states.find(pod.node_name);
    if (it == states.end()) continue;
    absl::StatusOr<GpuDemand> demand = ComputeDemandWithDra(pod, policy, *dra);
    if (!demand.ok()) {
      if (skipped) skipped->push_back(std::string(demand.status().message()));
      continue;
    }
    if (demand->empty()) continue;
    AddHold(it->second,
            std::make_shared<PodHold>(PodHold{
                pod.uid, pod.namespace_name, pod.name, *std::move(demand), RecordedGpuIndex(pod),
                /*assumed=*/false, pod.priority, pod.labels, pod.device_report, pod.created}),
            policy);
  }
  // Pods no node holds yet: what fair sharing counts as owed to their tenants.
  auto pending = std::make_shared<UsageByNamespace>();
  for (const PodFacts& pod : data.pods) {
    if (!pod.node_name.empty() || pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    absl::StatusOr<GpuDemand> demand = ComputeDemandWithDra(pod, policy, *dra);
    if (!demand.ok() || demand->empty()) continue;
    (*pending)[pod.namespace_name].Add(PendingUsage(*demand, policy));
  }
  BoundPods bound_pods;
  ContractPods contract_pods;
  for (const PodFacts& pod : data.pods) {
    const std::string uid = pod.uid.empty() ? pod.Key() : pod.uid;
    RecordBoundPod(bound_pods, uid, pod);
    if (!pod.HoldsResources()) continue;
    absl::StatusOr<GpuDemand> demand = ComputeDemandWithDra(pod, policy, *dra);
    RecordContractPod(contract_pods, uid, pod, !demand.ok() || !demand->empty());
  }
  ClusterSnapshot empty;
  SnapshotBuilder builder(empty);
  builder.SetBoundPods(bound_pods);
  builder.SetContractPods(contract_pods);
  for (auto& [name, state] : states) {
    SortHolds(state.holds);
    builder.Put(std::make_shared<const NodeState>(std::move(state)));
  }
  builder.SetNamespaces(std::make_shared<const ClusterSnapshot::NamespaceMap>(
      data.namespace_labels.begin(), data.namespace_labels.end()));
  builder.SetDra(std::move(dra));
  builder.SetPendingUsage(std::move(pending));
  builder.SetDisruptionBudgets(
      std::make_shared<const std::vector<DisruptionBudget>>(data.disruption_budgets));
  return std::move(builder).Build();
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
