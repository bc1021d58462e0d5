// An immutable picture of the cluster as the model sees it: per node its facts, supply and
// occupancy; per namespace its labels (tenant selectors read them). Built once per change and
// shared by every request that reads it; nothing in it is mutated after construction.
#ifndef GPU_TENANCY_TOPOLOGY_SNAPSHOT_H_
#define GPU_TENANCY_TOPOLOGY_SNAPSHOT_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "topology/bound_pods.h"
#include "topology/catalog.h"
#include "topology/demand.h"
#include "topology/disruption_budget.h"
#include "topology/dra/model.h"
#include "topology/facts.h"
#include "topology/fit.h"
#include "topology/occupancy.h"
#include "topology/policy.h"
#include "topology/quota.h"
#include "topology/supply.h"

namespace topology {

// Quota units held per namespace. Tenants are resolved from namespaces when asked, so a
// namespace relabel or a policy change of selectors needs no recount.
using UsageByNamespace = absl::flat_hash_map<std::string, QuotaUsage>;

struct NodeState {
  NodeFacts facts;
  NodeSupply supply;
  NodeOccupancy occupancy;
  // The pods `occupancy` adds up, sorted by namespace and name. Shared with the state that
  // recorded them, so keeping them here costs a pointer per pod.
  std::vector<std::shared_ptr<const PodHold>> holds;
  UsageByNamespace usage;  // what `holds` add up to, in quota units
};

// Counts `hold` on the node: occupancy, holds (unsorted: SortHolds when done) and usage.
void AddHold(NodeState& state, std::shared_ptr<const PodHold> hold, const Policy& policy);

// Raw cluster contents, as listed from the API server or read from a cluster file.
struct ClusterData {
  std::vector<NodeFacts> nodes;
  std::vector<PodFacts> pods;
  absl::flat_hash_map<std::string, Labels> namespace_labels;
  // resource.k8s.io objects, when the cluster has DRA.
  std::vector<DraSlice> dra_slices;
  std::vector<DraClaim> dra_claims;
  std::vector<DraClaim> dra_claim_templates;
  std::vector<DraDeviceClass> dra_classes;
  // PodDisruptionBudgets, which preemption counts as kube-scheduler does.
  std::vector<DisruptionBudget> disruption_budgets;
};

// Nodes live in a fixed number of shards, each an immutable map shared between snapshots: a
// change to one node copies one small shard and the shard table, not the cluster, so
// publishing after a watch event stays cheap at thousands of nodes. The table itself is shared
// too, so a snapshot that changes no node (a DRA or namespace event) copies a few pointers.
class ClusterSnapshot {
 public:
  static constexpr size_t kShards = 256;
  using Shard = absl::flat_hash_map<std::string, std::shared_ptr<const NodeState>>;
  using ShardTable = std::array<std::shared_ptr<const Shard>, kShards>;
  using NamespaceMap = absl::flat_hash_map<std::string, Labels>;

  ClusterSnapshot();

  const NodeState* FindNode(absl::string_view name) const;
  // FindNode for each of `names` into `out` (same length; null for unknown names): for the
  // extender's few hundred candidates per call.
  void FindNodes(absl::Span<const absl::string_view> names, absl::Span<const NodeState*> out) const;
  std::shared_ptr<const NodeState> FindNodeShared(absl::string_view name) const;
  size_t node_count() const { return node_count_; }
  // Node names in sorted order, for stable output.
  std::vector<std::string> SortedNodeNames() const;
  template <typename F>
  void ForEachNode(F f) const {
    for (const auto& shard : *shards_) {
      for (const auto& [name, state] : *shard) f(*state);
    }
  }
  // Calls f(before_node, after_node) for every node whose state differs from `before`'s (an
  // earlier snapshot): added (before null), removed (after null) or rebuilt. Shards the two
  // share are skipped, so following the live state costs what changed, not the cluster.
  template <typename F>
  void ForEachNodeDifference(const ClusterSnapshot& before, F f) const {
    for (size_t i = 0; i < kShards; ++i) {
      const Shard* now = (*shards_)[i].get();
      const Shard* was = (*before.shards_)[i].get();
      if (now == was) continue;
      if (now) {
        for (const auto& [name, state] : *now) {
          const NodeState* old = nullptr;
          if (was) {
            auto it = was->find(name);
            if (it != was->end()) old = it->second.get();
          }
          if (old != state.get()) f(old, state.get());
        }
      }
      if (was) {
        for (const auto& [name, state] : *was) {
          if (!now || !now->contains(name)) f(state.get(), static_cast<const NodeState*>(nullptr));
        }
      }
    }
  }
  const Labels& NamespaceLabels(absl::string_view ns) const;
  const std::shared_ptr<const NamespaceMap>& namespaces() const { return namespaces_; }
  // Every node's usage summed per namespace, kept up to date as nodes are put and removed.
  const UsageByNamespace& usage() const { return *usage_; }
  // What pods no node holds yet ask for, per namespace, counted as UsageOf counts a pod on a
  // node without labels (fair sharing's "owed": topology/fair_share.h).
  const UsageByNamespace& pending_usage() const { return *pending_usage_; }
  // What every node offers in quota units (OfferedCapacity), kept up to date like usage().
  const QuotaUsage& offered_capacity() const { return offered_capacity_; }
  // Published DRA devices, claims and device classes (empty without DRA).
  const DraState& dra() const { return *dra_; }
  const std::vector<DisruptionBudget>& disruption_budgets() const { return *budgets_; }
  // Every pod bound to a node and not finished, GPU or not (topology/bound_pods.h); null for an
  // unknown UID.
  const BoundPodRef* FindBoundPod(absl::string_view uid) const;
  const BoundPods& bound_pods() const { return bound_pods_; }
  // The bound pods the contract judges after admission, by UID (topology/bound_pods.h).
  const ContractPods& contract_pods() const { return contract_pods_; }

 private:
  friend class SnapshotBuilder;
  static size_t ShardOf(absl::string_view name);
  static size_t ShardOfHash(size_t hash);
  std::shared_ptr<const ShardTable> shards_;
  size_t node_count_ = 0;
  std::shared_ptr<const NamespaceMap> namespaces_;
  std::shared_ptr<const UsageByNamespace> usage_;
  std::shared_ptr<const UsageByNamespace> pending_usage_;
  QuotaUsage offered_capacity_;
  std::shared_ptr<const DraState> dra_;
  std::shared_ptr<const std::vector<DisruptionBudget>> budgets_;
  BoundPods bound_pods_;  // a copy shares everything with its source
  ContractPods contract_pods_;
};

// Copy-on-write editing: starts from a snapshot and copies a shard on its first change.
class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(const ClusterSnapshot& base) : next_(base) {}
  void Put(std::shared_ptr<const NodeState> node);
  void Remove(absl::string_view name);
  void SetNamespaces(std::shared_ptr<const ClusterSnapshot::NamespaceMap> namespaces) {
    next_.namespaces_ = std::move(namespaces);
  }
  void SetDra(std::shared_ptr<const DraState> dra) { next_.dra_ = std::move(dra); }
  void SetPendingUsage(std::shared_ptr<const UsageByNamespace> pending) {
    next_.pending_usage_ = std::move(pending);
  }
  void SetDisruptionBudgets(std::shared_ptr<const std::vector<DisruptionBudget>> budgets) {
    next_.budgets_ = std::move(budgets);
  }
  void SetBoundPods(const BoundPods& pods) { next_.bound_pods_ = pods; }
  void SetContractPods(const ContractPods& pods) { next_.contract_pods_ = pods; }
  ClusterSnapshot Build() && { return std::move(next_); }

 private:
  ClusterSnapshot::Shard& Mutable(size_t index);
  // Moves `node`'s usage in or out (sign +1 / -1) of the snapshot's sums.
  void Account(const NodeState& node, int sign);
  ClusterSnapshot next_;
  bool table_copied_ = false;
  std::array<bool, ClusterSnapshot::kShards> copied_{};
  bool usage_copied_ = false;
};

// Builds a NodeState: supply from the node's facts, occupancy from `pods` (those bound to it).
std::shared_ptr<const NodeState> MakeNodeState(NodeFacts facts, const Catalog& catalog,
                                               const Policy& policy);

// Orders holds by namespace, name and UID (NodeState::holds is kept in this order).
void SortHolds(std::vector<std::shared_ptr<const PodHold>>& holds);

// Reads the GPU index a bind recorded on the pod, if any.
std::optional<int> RecordedGpuIndex(const PodFacts& pod);

// What a pod no node holds yet asks for, in quota units: UsageOf with no node labels (how a
// node would count nvidia.com/gpu is not known yet). Empty for a pod without GPU demand.
QuotaUsage PendingUsage(const GpuDemand& demand, const Policy& policy);

// Builds supply for every node and occupancy from the pods bound to them. A pod whose demand
// cannot be computed (bad quantity) is skipped and reported in `skipped`, never fatal: one
// broken pod must not take the whole cluster view down.
ClusterSnapshot BuildSnapshot(const ClusterData& data, const Catalog& catalog, const Policy& policy,
                              std::vector<std::string>* skipped = nullptr);

// What `tenant` holds across the snapshot: the usage of every namespace resolving to it, from
// pods on nodes and from allocated DRA claims.
QuotaUsage TenantUsage(const ClusterSnapshot& snapshot, const Policy& policy,
                       absl::string_view tenant);

// The per-pod context every node decision shares: tenant, tier, canary flag, scoring override.
// InvalidArgument for an unknown value of the scheduling-policy annotation.
[[nodiscard]] absl::StatusOr<PodContext> MakePodContext(const PodFacts& pod, const Policy& policy,
                                                        const Labels& namespace_labels);

// What a request reads: the policy and the snapshot built with it, published together so a
// reader never pairs a snapshot with a policy it was not built for.
struct ModelState {
  std::shared_ptr<const Policy> policy;
  std::shared_ptr<const ClusterSnapshot> snapshot;
  const Catalog* catalog = nullptr;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_SNAPSHOT_H_
