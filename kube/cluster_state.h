// ClusterState: turns list/watch events (or a cluster file) and the policy into immutable
// ModelState snapshots and publishes them with one atomic store. Readers take one atomic load
// and never block writers. Writers serialise on one mutex (mu_, which guards all the bookkeeping
// behind the published snapshot: facts, pods, assumptions, namespaces, DRA state, budgets and
// counters) held only for the microseconds of an update; no lock is ever held across an API call.
//
// Pods are keyed by UID. A pod counts on a node while it is bound there and not terminal, or
// while bind has assumed it there and the watch has not confirmed it yet. Every bound pod, GPU
// or not, is also listed by UID in the snapshot's BoundPods (who, where, priority). Publishing
// after one event rebuilds only the nodes it touched (see topology::SnapshotBuilder).
#ifndef GPU_TENANCY_KUBE_CLUSTER_STATE_H_
#define GPU_TENANCY_KUBE_CLUSTER_STATE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "kube/assume_cache.h"
#include "kube/clock.h"
#include "topology/catalog.h"
#include "topology/place.h"
#include "topology/snapshot.h"

namespace kube {

struct StateCounters {
  uint64_t publications = 0;
  uint64_t assumptions = 0;
  uint64_t assumptions_confirmed = 0;
  uint64_t assumptions_expired = 0;
  // Assumptions whose pod a list after their Binding did not name: deleted before any watch
  // event showed it bound.
  uint64_t assumptions_gone = 0;
  // Nodes and bound GPU pods a full relist added, changed or removed, and namespace relists
  // that changed any labels: what the watch had missed (or what changed since it stopped).
  uint64_t resync_corrections = 0;
};

class ClusterState {
 public:
  explicit ClusterState(const topology::Catalog& catalog) : catalog_(catalog) {}

  // Whole-set replacement (start-up, a cluster file, or a periodic relist): objects missing
  // from `nodes`/`pods`/`namespaces` are removed, which heals deletes the watch missed.
  void ReplaceNodes(std::vector<topology::NodeFacts> nodes);
  void ReplacePods(std::vector<topology::PodFacts> pods);
  // The same, fed one pod at a time by `list`, so the facts of every listed pod never have to
  // exist at once (a live relist parses each item as it is offered). `began` is CommitMark()
  // taken before the list's first request: an assumption committed by then whose pod the list
  // does not name belongs to a pod deleted meanwhile, and is dropped (0: none is).
  using PodSink = absl::FunctionRef<void(topology::PodFacts)>;
  void ReplacePods(absl::FunctionRef<void(PodSink)> list, uint64_t began = 0);
  void ReplaceNamespaces(absl::flat_hash_map<std::string, topology::Labels> namespaces);
  // DRA devices, claims, templates and classes: a cluster file's, or what a live source has
  // listed and watched so far (kube/dra_source.h), shared with the snapshots as it is.
  void ReplaceDra(topology::DraState dra);
  void ReplaceDra(std::shared_ptr<const topology::DraState> dra);
  // PodDisruptionBudgets, for preemption to count as kube-scheduler does. Decisions do not
  // wait for them: without them, victims are chosen as if no budget applied.
  void ReplaceDisruptionBudgets(std::vector<topology::DisruptionBudget> budgets);
  void UpsertDisruptionBudget(topology::DisruptionBudget budget);
  void DeleteDisruptionBudget(absl::string_view namespace_name, absl::string_view name);
  void ReplaceAll(topology::ClusterData data);  // all of the above at once

  void UpsertNode(topology::NodeFacts node);
  void DeleteNode(const std::string& name);
  void UpsertPod(topology::PodFacts pod);
  void DeletePod(const std::string& uid);
  void UpsertNamespace(const std::string& name, topology::Labels labels);
  void DeleteNamespace(const std::string& name);

  // Live sources list namespaces separately: with this set, nothing is published until they
  // have been listed too, since tenants resolve through namespace labels and a decision made
  // without them can put a pod in the wrong tenant. (ReplaceAll brings all three at once.)
  void RequireNamespaces();
  // The same for the resource.k8s.io objects: with this set, nothing is published until
  // ReplaceDra has been called once (an empty state when the API server has no DRA), since
  // quotas count the devices claims hold and the webhook resolves pods' claims.
  void RequireDra();

  // Swaps the policy (start-up or reload) and rebuilds every node with it.
  void SetPolicy(std::shared_ptr<const topology::Policy> policy);

  // Bind's critical section: places `pod` on `node` (topology::Place) against the latest state
  // plus pending assumptions and, when it is placed, records the assumption and publishes, so
  // the next filter sees it before the watch does. A pod that no longer fits is a verdict in
  // the outcome, and nothing is recorded. Errors are what keeps bind from deciding at all:
  // Unavailable before the first sync, NotFound for an unknown node, AlreadyExists for a pod
  // already bound, InvalidArgument for a malformed pod.
  [[nodiscard]] absl::StatusOr<topology::PlaceOutcome> Assume(const topology::PodFacts& pod,
                                                              const std::string& node,
                                                              Clock::TimePoint expiry);
  // Drops an assumption (the Binding POST failed). No-op if the watch already confirmed it, and
  // for one whose POST's outcome is unknown (BindingPost::kUnknown), which keeps its expiry.
  void Forget(const std::string& uid);
  // The Binding POST for `uid` is under way: its assumption does not expire until Posted().
  void Posting(const std::string& uid);
  enum class BindingPost {
    kLanded,   // the API server has the pod bound from now on, so a pod list that begins later
               // names it unless it was deleted
    kRefused,  // answered with a refusal: Forget() drops the assumption
    kUnknown,  // no answer (or already bound to this node): it may have landed or land yet, so
               // the assumption stays until `expiry`, whatever Forget() says
  };
  void Posted(const std::string& uid, BindingPost outcome, Clock::TimePoint expiry = {});
  // Counts kLanded posts; read before a pod list begins, for ReplacePods.
  uint64_t CommitMark() const;
  // Drops assumptions whose expiry passed without confirmation; returns how many.
  int ExpireAssumptions(Clock::TimePoint now);

  // A pending pod seen by the watch, for bind to read without an API call.
  std::optional<topology::PodFacts> PendingPod(const std::string& uid) const;

  // The latest published state; null until the policy and the first cluster sync (nodes, pods
  // and, with RequireNamespaces(), namespaces) are known.
  std::shared_ptr<const topology::ModelState> Current() const { return current_.load(); }
  StateCounters counters() const;
  size_t assumption_count() const;

  // Recomputes occupancy from scratch and compares with the incremental one (tests, invariants).
  bool OccupancyConsistent() const;

 private:
  struct PodRecord {
    std::string node;
    std::shared_ptr<const topology::PodHold> hold;  // shared with the published node states
    uint64_t listed = 0;  // the list generation when it was last recorded or relisted
  };
  struct PendingRecord {
    topology::PodFacts facts;
    uint64_t listed = 0;
    topology::QuotaUsage usage;  // what it asks, as fair sharing counts it (PendingUsage)
  };

  void RebuildAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds these nodes' states from facts + pods + assumptions and publishes.
  void PublishNodesLocked(const absl::flat_hash_set<std::string>& touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishLocked(topology::ClusterSnapshot snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishBudgetsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const topology::NodeState> RecountLocked(const topology::NodeFacts& facts,
                                                           bool from_scratch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const topology::NodeState> BuildNodeLocked(const topology::NodeFacts& facts) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True (and marks it listed) when a relisted pod is already recorded exactly so: pending with
  // the same facts, or bound to the same node with the same demand and GPU.
  bool MarkIfUnchangedLocked(const std::string& uid, const topology::PodFacts& pod)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddPodLocked(topology::PodFacts pod, absl::flat_hash_set<std::string>& touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemovePodLocked(const std::string& uid, absl::flat_hash_set<std::string>& touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // uids_by_node_, the index that says which nodes an event touches; occupancy itself is
  // recounted from the holds when a node is rebuilt.
  void IndexOnNode(const std::string& uid, const std::string& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnindexFromNode(const std::string& uid, const std::string& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops uid's assumption, if any, and marks its node touched.
  bool DropAssumptionLocked(const std::string& uid, absl::flat_hash_set<std::string>& touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // pending_ with its per-namespace sums kept in step.
  void PutPendingLocked(const std::string& uid, PendingRecord record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ErasePendingLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sums as the next snapshot publishes them (a copy only after they changed).
  std::shared_ptr<const topology::UsageByNamespace> PendingUsageLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool PendingToPublishLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_changed_ && policy_ && policy_->FairSharing();
  }

  const topology::Catalog& catalog_;
  // mu_ serialises writers and guards everything below it except current_, which readers load
  // without it (writers store it under mu_, in PublishLocked).
  mutable common::Mutex mu_;
  std::shared_ptr<const topology::Policy> policy_ ABSL_GUARDED_BY(mu_);
  bool nodes_synced_ ABSL_GUARDED_BY(mu_) = false;
  bool pods_synced_ ABSL_GUARDED_BY(mu_) = false;
  bool namespaces_required_ ABSL_GUARDED_BY(mu_) = false;
  bool namespaces_synced_ ABSL_GUARDED_BY(mu_) = false;
  bool dra_required_ ABSL_GUARDED_BY(mu_) = false;
  bool dra_synced_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, topology::NodeFacts> nodes_ ABSL_GUARDED_BY(mu_);
  // uid -> bound GPU pod
  absl::flat_hash_map<std::string, PodRecord> bound_ ABSL_GUARDED_BY(mu_);
  // uid -> unbound GPU pod
  absl::flat_hash_map<std::string, PendingRecord> pending_ ABSL_GUARDED_BY(mu_);
  // uid -> placement bind assumed, until the watch confirms it
  AssumeCache assumed_ ABSL_GUARDED_BY(mu_);
  // uid -> every bound pod, GPU or not, for the preempt verb's victims given by UID only;
  // published with each snapshot (copying it copies a pointer).
  topology::BoundPods bound_pods_ ABSL_GUARDED_BY(mu_);
  topology::ContractPods contract_pods_ ABSL_GUARDED_BY(mu_);
  // Either directory changed since the last publication.
  bool bound_pods_changed_ ABSL_GUARDED_BY(mu_) = false;
  // What pending pods ask per namespace (fair sharing's "owed"). Under a policy with fair
  // sharing a change publishes a snapshot; without it the sums wait for the next publication.
  topology::UsageByNamespace pending_sums_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const topology::UsageByNamespace> pending_published_ ABSL_GUARDED_BY(mu_);
  bool pending_changed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> uids_by_node_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const topology::ClusterSnapshot::NamespaceMap> namespaces_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const topology::ClusterSnapshot::NamespaceMap>();
  std::shared_ptr<const topology::DraState> dra_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const topology::DraState>();
  // "namespace/name"
  absl::flat_hash_map<std::string, topology::DisruptionBudget> budgets_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::vector<topology::DisruptionBudget>> budget_list_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const std::vector<topology::DisruptionBudget>>();
  std::shared_ptr<const topology::ClusterSnapshot> snapshot_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const topology::ClusterSnapshot>();
  bool demand_stale_ ABSL_GUARDED_BY(mu_) = false;
  // counts pod relists, for their `listed` marks
  uint64_t list_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t commit_mark_ ABSL_GUARDED_BY(mu_) = 0;  // counts landed Binding POSTs
  StateCounters counters_ ABSL_GUARDED_BY(mu_);
  std::atomic<std::shared_ptr<const topology::ModelState>> current_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_CLUSTER_STATE_H_
