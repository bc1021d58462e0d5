#include "kube/cluster_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "topology/dra/extended_resources.h"
#include "topology/fit.h"

namespace kube {

namespace {

std::string PodKey(const topology::PodFacts& pod) { return pod.uid.empty() ? pod.Key() : pod.uid; }

std::shared_ptr<const topology::PodHold> MakeHold(const topology::PodFacts& pod,
                                                  topology::GpuDemand demand,
                                                  std::optional<int> gpu_index, bool assumed) {
  return std::make_shared<const topology::PodHold>(
      topology::PodHold{PodKey(pod), pod.namespace_name, pod.name, std::move(demand), gpu_index,
                        assumed, pod.priority, pod.labels, pod.device_report, pod.created});
}

bool SameOccupancy(const topology::NodeOccupancy& a, const topology::NodeOccupancy& b) {
  return a.used == b.used && a.shared_memory_by_gpu == b.shared_memory_by_gpu &&
         a.shared_memory_unassigned_mib == b.shared_memory_unassigned_mib && a.pods == b.pods;
}

bool SameHolders(const std::vector<std::shared_ptr<const topology::PodHold>>& a,
                 const std::vector<std::shared_ptr<const topology::PodHold>>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x->uid == y->uid; });
}

}  // namespace

void ClusterState::IndexOnNode(const std::string& uid, const std::string& node) {
  uids_by_node_[node].insert(uid);
}

void ClusterState::UnindexFromNode(const std::string& uid, const std::string& node) {
  auto it = uids_by_node_.find(node);
  if (it == uids_by_node_.end()) return;
  it->second.erase(uid);
  if (it->second.empty()) uids_by_node_.erase(it);
}

std::shared_ptr<const topology::NodeState> ClusterState::RecountLocked(
    const topology::NodeFacts& facts, bool from_scratch) const {
  auto state = std::make_shared<topology::NodeState>();
  state->facts = facts;
  const topology::Policy& policy = *policy_;
  state->supply = topology::BuildNodeSupply(facts, catalog_, policy);
  auto apply = [&](const std::shared_ptr<const topology::PodHold>& hold) {
    topology::AddHold(*state, hold, policy);
  };
  if (from_scratch) {
    for (const auto& [uid, r] : bound_) {
      if (r.node == facts.name) apply(r.hold);
    }
    // ForEach calls the lambda synchronously, still under mu_, which the analysis cannot see
    // through the template: the lambda reads bound_ through a pointer taken here.
    const auto* bound = &bound_;
    assumed_.ForEach([&](const std::string& uid, const AssumeCache::Assumption& a) {
      if (a.node == facts.name && !bound->contains(uid)) apply(a.hold);
    });
    topology::SortHolds(state->holds);
    return state;
  }
  auto it = uids_by_node_.find(facts.name);
  if (it != uids_by_node_.end()) {
    for (const std::string& uid : it->second) {
      if (auto b = bound_.find(uid); b != bound_.end() && b->second.node == facts.name) {
        apply(b->second.hold);
      } else if (const AssumeCache::Assumption* a = assumed_.Find(uid)) {
        apply(a->hold);
      }
    }
  }
  topology::SortHolds(state->holds);
  return state;
}

std::shared_ptr<const topology::NodeState> ClusterState::BuildNodeLocked(
    const topology::NodeFacts& facts) const {
  return RecountLocked(facts, /*from_scratch=*/false);
}

void ClusterState::PutPendingLocked(const std::string& uid, PendingRecord record) {
  ErasePendingLocked(uid);
  if (!record.usage.empty()) {
    pending_sums_[record.facts.namespace_name].Add(record.usage);
    pending_changed_ = true;
  }
  pending_.insert_or_assign(uid, std::move(record));
}

void ClusterState::ErasePendingLocked(const std::string& uid) {
  auto it = pending_.find(uid);
  if (it == pending_.end()) return;
  if (!it->second.usage.empty()) {
    auto sum = pending_sums_.find(it->second.facts.namespace_name);
    if (sum != pending_sums_.end()) {
      sum->second.Add(it->second.usage, -1);
      if (sum->second.empty()) pending_sums_.erase(sum);
    }
    pending_changed_ = true;
  }
  pending_.erase(it);
}

std::shared_ptr<const topology::UsageByNamespace> ClusterState::PendingUsageLocked() {
  if (!pending_published_ || pending_changed_) {
    pending_published_ = std::make_shared<const topology::UsageByNamespace>(pending_sums_);
  }
  return pending_published_;
}

void ClusterState::PublishLocked(topology::ClusterSnapshot snapshot) {
  snapshot_ = std::make_shared<const topology::ClusterSnapshot>(std::move(snapshot));
  bound_pods_changed_ = false;
  pending_changed_ = false;
  ++counters_.publications;
  if (!policy_ || !nodes_synced_ || !pods_synced_ ||
      (namespaces_required_ && !namespaces_synced_) || (dra_required_ && !dra_synced_)) {
    return;
  }
  auto state = std::make_shared<topology::ModelState>();
  state->policy = policy_;
  state->snapshot = snapshot_;
  state->catalog = &catalog_;
  current_.store(std::move(state));
}

void ClusterState::PublishNodesLocked(const absl::flat_hash_set<std::string>& touched) {
  if (!policy_) return;
  topology::SnapshotBuilder builder(*snapshot_);
  for (const std::string& name : touched) {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      builder.Remove(name);
    } else {
      builder.Put(BuildNodeLocked(it->second));
    }
  }
  builder.SetNamespaces(namespaces_);
  builder.SetDra(dra_);
  builder.SetDisruptionBudgets(budget_list_);
  builder.SetBoundPods(bound_pods_);
  builder.SetContractPods(contract_pods_);
  builder.SetPendingUsage(PendingUsageLocked());
  PublishLocked(std::move(builder).Build());
}

void ClusterState::RebuildAllLocked() {
  if (!policy_) return;
  topology::ClusterSnapshot empty;
  topology::SnapshotBuilder builder(empty);
  for (const auto& [name, facts] : nodes_) builder.Put(BuildNodeLocked(facts));
  builder.SetNamespaces(namespaces_);
  builder.SetDra(dra_);
  builder.SetDisruptionBudgets(budget_list_);
  builder.SetBoundPods(bound_pods_);
  builder.SetContractPods(contract_pods_);
  builder.SetPendingUsage(PendingUsageLocked());
  PublishLocked(std::move(builder).Build());
}

void ClusterState::RemovePodLocked(const std::string& uid,
                                   absl::flat_hash_set<std::string>& touched) {
  if (auto it = bound_.find(uid); it != bound_.end()) {
    touched.insert(it->second.node);
    UnindexFromNode(uid, it->second.node);
    bound_.erase(it);
  }
  DropAssumptionLocked(uid, touched);
  ErasePendingLocked(uid);
  bound_pods_changed_ |= bound_pods_.Erase(uid);
  bound_pods_changed_ |= contract_pods_.Erase(uid);
}

void ClusterState::AddPodLocked(topology::PodFacts pod, absl::flat_hash_set<std::string>& touched) {
  std::string uid = PodKey(pod);
  bound_pods_changed_ |= topology::RecordBoundPod(bound_pods_, uid, pod);
  if (auto it = bound_.find(uid); it != bound_.end()) {
    touched.insert(it->second.node);
    UnindexFromNode(uid, it->second.node);
    bound_.erase(it);
  }
  ErasePendingLocked(uid);
  const bool terminal = pod.phase == "Succeeded" || pod.phase == "Failed";
  absl::StatusOr<topology::GpuDemand> demand = topology::ComputeDemandWithDra(pod, *policy_, *dra_);
  if (!demand.ok()) {
    common::Log(common::LogLevel::kWarn, "pod ignored in accounting",
                {{"pod", pod.Key()}, {"reason", demand.status().message()}});
  }
  const bool gpu = demand.ok() && !demand->empty();
  // An unreadable demand is still a GPU request to the contract.
  bound_pods_changed_ |= topology::RecordContractPod(contract_pods_, uid, pod, gpu || !demand.ok());
  if (pod.HoldsResources() || terminal || !gpu) {
    // Bound (the watch confirms bind), finished, or nothing to account: no assumption left.
    if (DropAssumptionLocked(uid, touched) && pod.HoldsResources()) {
      ++counters_.assumptions_confirmed;
    }
  }
  if (!gpu || terminal) return;
  if (pod.HoldsResources()) {
    PodRecord record{
        pod.node_name,
        MakeHold(pod, *std::move(demand), topology::RecordedGpuIndex(pod), /*assumed=*/false),
        list_generation_};
    touched.insert(record.node);
    IndexOnNode(uid, record.node);
    bound_.insert_or_assign(uid, std::move(record));
  } else {
    topology::QuotaUsage usage = topology::PendingUsage(*demand, *policy_);
    PutPendingLocked(uid, PendingRecord{std::move(pod), list_generation_, std::move(usage)});
  }
}

// Relists usually find what the watch already delivered. Only objects that differ are replaced
// and only their nodes rebuilt, so a quiet relist allocates nothing that outlives it: rebuilding
// everything every resync period re-allocated the whole model each time and left the heap more
// fragmented after every relist.
void ClusterState::ReplaceNodes(std::vector<topology::NodeFacts> nodes) {
  common::MutexLock lock(&mu_);
  absl::flat_hash_set<std::string> listed;
  absl::flat_hash_set<std::string> touched;
  listed.reserve(nodes.size());
  for (topology::NodeFacts& n : nodes) {
    listed.insert(n.name);
    auto it = nodes_.find(n.name);
    if (it != nodes_.end() && it->second == n) continue;
    touched.insert(n.name);
    std::string name = n.name;
    nodes_.insert_or_assign(std::move(name), std::move(n));
  }
  std::vector<std::string> gone;
  for (const auto& [name, facts] : nodes_) {
    if (!listed.contains(name)) gone.push_back(name);
  }
  for (const std::string& name : gone) {
    nodes_.erase(name);
    touched.insert(name);
  }
  const bool first = !nodes_synced_;
  nodes_synced_ = true;
  if (first) {
    RebuildAllLocked();
    return;
  }
  counters_.resync_corrections += touched.size();
  if (!touched.empty()) PublishNodesLocked(touched);
}

bool ClusterState::MarkIfUnchangedLocked(const std::string& uid, const topology::PodFacts& pod) {
  if (auto p = pending_.find(uid); p != pending_.end()) {
    if (!(p->second.facts == pod)) return false;
    p->second.listed = list_generation_;
    return true;
  }
  auto b = bound_.find(uid);
  if (b == bound_.end() || assumed_.Contains(uid)) return false;
  const topology::PodHold& hold = *b->second.hold;
  if (!pod.HoldsResources() || b->second.node != pod.node_name || hold.name != pod.name ||
      hold.namespace_name != pod.namespace_name ||
      hold.gpu_index != topology::RecordedGpuIndex(pod) || hold.priority != pod.priority ||
      hold.labels != pod.labels || hold.device_report != pod.device_report) {
    return false;
  }
  absl::StatusOr<topology::GpuDemand> demand = topology::ComputeDemandWithDra(pod, *policy_, *dra_);
  if (!demand.ok() || !(*demand == hold.demand)) return false;
  b->second.listed = list_generation_;
  return true;
}

void ClusterState::ReplacePods(std::vector<topology::PodFacts> pods) {
  ReplacePods([&](PodSink offer) {
    for (topology::PodFacts& p : pods) offer(std::move(p));
  });
}

// Holds the lock while `list` produces the facts (parsing a page's pods takes a few
// microseconds each): readers never wait for it, and each pod's facts are freed as soon as they
// are applied, which is what keeps a relist's memory from fragmenting the heap.
void ClusterState::ReplacePods(absl::FunctionRef<void(PodSink)> list, uint64_t began) {
  common::MutexLock lock(&mu_);
  if (!policy_) {
    common::Log(common::LogLevel::kError, "pods received before the policy; ignored");
    return;
  }
  ++list_generation_;
  absl::flat_hash_set<std::string> touched;
  absl::flat_hash_set<std::string> listed;  // the bound pods' directory heals deletes with it
  // `list` calls the sink synchronously, under mu_.
  list([&](topology::PodFacts pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::string uid = PodKey(pod);
    if (pod.HoldsResources()) listed.insert(uid);
    if (MarkIfUnchangedLocked(uid, pod)) return;
    const bool was_bound = bound_.contains(uid);
    AddPodLocked(std::move(pod), touched);  // records it with this list's generation
    if (pods_synced_ && (was_bound || bound_.contains(uid))) ++counters_.resync_corrections;
  });
  // Whatever the list did not name was deleted meanwhile.
  std::vector<std::string> gone;
  for (const auto& [uid, r] : bound_) {
    if (r.listed != list_generation_) gone.push_back(uid);
  }
  for (const auto& [uid, p] : pending_) {
    if (p.listed != list_generation_) gone.push_back(uid);
  }
  for (const std::string& uid : gone) {
    if (pods_synced_ && bound_.contains(uid)) ++counters_.resync_corrections;
    RemovePodLocked(uid, touched);
  }
  std::vector<std::string> unbound;
  bound_pods_.ForEach([&](const std::string& uid, const auto&) {
    if (!listed.contains(uid)) unbound.push_back(uid);
  });
  for (const std::string& uid : unbound) {
    bound_pods_changed_ |= bound_pods_.Erase(uid);
    bound_pods_changed_ |= contract_pods_.Erase(uid);
  }
  // Bound before the list began and not in it: deleted before the watch said anything (or
  // while it was down). Waiting for the expiry would hold its GPU for nothing.
  std::vector<std::string> deleted;
  assumed_.ForEach([&](const std::string& uid, const AssumeCache::Assumption& a) {
    if (a.committed != 0 && a.committed <= began && !listed.contains(uid)) deleted.push_back(uid);
  });
  for (const std::string& uid : deleted) {
    DropAssumptionLocked(uid, touched);
    ++counters_.assumptions_gone;
  }
  const bool first = !pods_synced_;
  pods_synced_ = true;
  if (first || demand_stale_) {
    demand_stale_ = false;
    RebuildAllLocked();
  } else if (!touched.empty() || bound_pods_changed_ || PendingToPublishLocked()) {
    PublishNodesLocked(touched);
  }
}

void ClusterState::ReplaceNamespaces(
    absl::flat_hash_map<std::string, topology::Labels> namespaces) {
  common::MutexLock lock(&mu_);
  if (namespaces_synced_ && namespaces == *namespaces_) return;
  if (namespaces_synced_) ++counters_.resync_corrections;
  namespaces_ = std::make_shared<const topology::ClusterSnapshot::NamespaceMap>(
      std::make_move_iterator(namespaces.begin()), std::make_move_iterator(namespaces.end()));
  namespaces_synced_ = true;
  PublishNodesLocked({});
}

void ClusterState::RequireNamespaces() {
  common::MutexLock lock(&mu_);
  namespaces_required_ = true;
}

void ClusterState::RequireDra() {
  common::MutexLock lock(&mu_);
  dra_required_ = true;
}

void ClusterState::ReplaceDra(topology::DraState dra) {
  ReplaceDra(std::make_shared<const topology::DraState>(std::move(dra)));
}

void ClusterState::ReplaceDra(std::shared_ptr<const topology::DraState> dra) {
  common::MutexLock lock(&mu_);
  if (!dra) dra = std::make_shared<const topology::DraState>();
  auto names = [](const topology::DraState& d) {
    std::vector<std::string> out;
    for (const auto& [name, index] : d.extended_resources()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
  };
  if (dra->device_set != dra_->device_set && names(*dra) != names(*dra_)) {
    // Pod demands count the names DRA classes back; the next pod relist recomputes them.
    demand_stale_ = true;
  }
  dra_ = std::move(dra);
  dra_synced_ = true;
  PublishNodesLocked({});
}

void ClusterState::ReplaceDisruptionBudgets(std::vector<topology::DisruptionBudget> budgets) {
  common::MutexLock lock(&mu_);
  budgets_.clear();
  for (topology::DisruptionBudget& b : budgets) {
    std::string key = absl::StrCat(b.namespace_name, "/", b.name);
    budgets_.insert_or_assign(std::move(key), std::move(b));
  }
  PublishBudgetsLocked();
}

void ClusterState::UpsertDisruptionBudget(topology::DisruptionBudget budget) {
  common::MutexLock lock(&mu_);
  std::string key = absl::StrCat(budget.namespace_name, "/", budget.name);
  budgets_.insert_or_assign(std::move(key), std::move(budget));
  PublishBudgetsLocked();
}

void ClusterState::DeleteDisruptionBudget(absl::string_view namespace_name,
                                          absl::string_view name) {
  common::MutexLock lock(&mu_);
  budgets_.erase(absl::StrCat(namespace_name, "/", name));
  PublishBudgetsLocked();
}

void ClusterState::PublishBudgetsLocked() {
  auto list = std::make_shared<std::vector<topology::DisruptionBudget>>();
  list->reserve(budgets_.size());
  for (const auto& [key, budget] : budgets_) list->push_back(budget);
  std::sort(list->begin(), list->end(), [](const auto& a, const auto& b) {
    return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
  });
  budget_list_ = std::move(list);
  PublishNodesLocked({});
}

void ClusterState::ReplaceAll(topology::ClusterData data) {
  ReplaceDisruptionBudgets(std::move(data.disruption_budgets));
  ReplaceDra(topology::MakeDraState(data.dra_slices, std::move(data.dra_claims),
                                    std::move(data.dra_classes),
                                    std::move(data.dra_claim_templates)));
  ReplaceNamespaces(std::move(data.namespace_labels));
  ReplaceNodes(std::move(data.nodes));
  ReplacePods(std::move(data.pods));
}

void ClusterState::UpsertNode(topology::NodeFacts node) {
  common::MutexLock lock(&mu_);
  std::string name = node.name;
  nodes_.insert_or_assign(name, std::move(node));
  PublishNodesLocked({name});
}

void ClusterState::DeleteNode(const std::string& name) {
  common::MutexLock lock(&mu_);
  nodes_.erase(name);
  PublishNodesLocked({name});
}

void ClusterState::UpsertPod(topology::PodFacts pod) {
  common::MutexLock lock(&mu_);
  if (!policy_) return;
  absl::flat_hash_set<std::string> touched;
  AddPodLocked(std::move(pod), touched);
  PublishNodesLocked(touched);
}

void ClusterState::DeletePod(const std::string& uid) {
  common::MutexLock lock(&mu_);
  absl::flat_hash_set<std::string> touched;
  RemovePodLocked(uid, touched);
  if (!touched.empty() || bound_pods_changed_ || PendingToPublishLocked()) {
    PublishNodesLocked(touched);
  }
}

void ClusterState::UpsertNamespace(const std::string& name, topology::Labels labels) {
  common::MutexLock lock(&mu_);
  auto next = std::make_shared<topology::ClusterSnapshot::NamespaceMap>(*namespaces_);
  next->insert_or_assign(name, std::move(labels));
  namespaces_ = std::move(next);
  PublishNodesLocked({});
}

void ClusterState::DeleteNamespace(const std::string& name) {
  common::MutexLock lock(&mu_);
  auto next = std::make_shared<topology::ClusterSnapshot::NamespaceMap>(*namespaces_);
  next->erase(name);
  namespaces_ = std::move(next);
  PublishNodesLocked({});
}

void ClusterState::SetPolicy(std::shared_ptr<const topology::Policy> policy) {
  common::MutexLock lock(&mu_);
  if (policy_ && (policy_->memory_resources != policy->memory_resources ||
                  policy_->memory_annotation != policy->memory_annotation ||
                  policy_->shared_resources != policy->shared_resources)) {
    // Pod demands were computed with the old resource names; the next full relist (or file
    // reload) recomputes them.
    demand_stale_ = true;
  }
  policy_ = std::move(policy);
  RebuildAllLocked();
}

absl::StatusOr<topology::PlaceOutcome> ClusterState::Assume(const topology::PodFacts& pod,
                                                            const std::string& node,
                                                            Clock::TimePoint expiry) {
  common::MutexLock lock(&mu_);
  if (!current_.load()) return absl::UnavailableError("cache not synced");
  absl::StatusOr<topology::GpuDemand> demand = topology::ComputeDemandWithDra(pod, *policy_, *dra_);
  if (!demand.ok()) return demand.status();
  std::string uid = PodKey(pod);
  const topology::NodeState* state = snapshot_->FindNode(node);
  if (!state)
    return absl::NotFoundError(absl::StrCat("node ", node, " is not known to gpu-tenancy"));
  absl::StatusOr<topology::PodContext> ctx =
      topology::MakePodContext(pod, *policy_, snapshot_->NamespaceLabels(pod.namespace_name));
  if (!ctx.ok()) return ctx.status();
  if (demand->empty())
    return topology::Place(*demand, *ctx, *state, {}, *dra_);  // nothing to account
  if (auto b = bound_.find(uid); b != bound_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("pod is already bound to ", b->second.node));
  }
  if (absl::flat_hash_set<std::string> earlier; DropAssumptionLocked(uid, earlier)) {
    // A retried bind: the earlier assumption is released before re-checking.
    PublishNodesLocked(earlier);
    state = snapshot_->FindNode(node);
  }
  // The tenant's holdings include every earlier assumption: binds serialise on mu_ and each
  // publishes before releasing it, so concurrent binds cannot overshoot the quota together.
  topology::QuotaUsage held;
  const bool fair_share = ctx->tenant.tenant && ctx->tenant.tenant->fair_share;
  if (ctx->tenant.tenant && (!ctx->tenant.tenant->quota.empty() || fair_share)) {
    held = topology::TenantUsage(*snapshot_, *policy_, ctx->tenant.name);
  }
  // Fair sharing: whether the pod borrows, and from capacity no other tenant is owed, against
  // the same snapshot (earlier assumptions included).
  std::optional<topology::FairShareLedger> ledger;
  std::optional<topology::PodShareCheck> share;
  if (fair_share) {
    ledger.emplace(topology::MakeLedger(*snapshot_, *policy_));
    share.emplace(*ledger, *policy_, *ctx->tenant.tenant, *demand, held);
  }
  topology::PlaceOutcome placed =
      topology::Place(*demand, *ctx, *state, held, *dra_, share ? &*share : nullptr);
  if (!placed.placed()) return placed;
  IndexOnNode(uid, node);
  assumed_.Add(uid, {node,
                     MakeHold(pod, *std::move(demand), placed.placement.gpu_index,
                              /*assumed=*/true),
                     expiry});
  ++counters_.assumptions;
  PublishNodesLocked({node});
  return placed;
}

void ClusterState::Forget(const std::string& uid) {
  common::MutexLock lock(&mu_);
  if (const AssumeCache::Assumption* a = assumed_.Find(uid); a && a->unresolved) return;
  absl::flat_hash_set<std::string> touched;
  if (DropAssumptionLocked(uid, touched)) PublishNodesLocked(touched);
}

void ClusterState::Posting(const std::string& uid) {
  common::MutexLock lock(&mu_);
  if (AssumeCache::Assumption* a = assumed_.Find(uid)) a->posting = true;
}

void ClusterState::Posted(const std::string& uid, BindingPost outcome, Clock::TimePoint expiry) {
  common::MutexLock lock(&mu_);
  AssumeCache::Assumption* a = assumed_.Find(uid);
  if (!a) return;
  a->posting = false;
  switch (outcome) {
    case BindingPost::kLanded:
      a->committed = ++commit_mark_;
      break;
    case BindingPost::kRefused:
      break;
    case BindingPost::kUnknown:
      a->unresolved = true;
      a->expiry = expiry;
      break;
  }
}

uint64_t ClusterState::CommitMark() const {
  common::MutexLock lock(&mu_);
  return commit_mark_;
}

int ClusterState::ExpireAssumptions(Clock::TimePoint now) {
  common::MutexLock lock(&mu_);
  absl::flat_hash_set<std::string> touched;
  std::vector<std::pair<std::string, AssumeCache::Assumption>> expired = assumed_.TakeExpired(now);
  for (const auto& [uid, a] : expired) {
    touched.insert(a.node);
    UnindexFromNode(uid, a.node);
  }
  counters_.assumptions_expired += expired.size();
  if (!touched.empty()) PublishNodesLocked(touched);
  return static_cast<int>(expired.size());
}

bool ClusterState::DropAssumptionLocked(const std::string& uid,
                                        absl::flat_hash_set<std::string>& touched) {
  std::optional<AssumeCache::Assumption> dropped = assumed_.Take(uid);
  if (!dropped) return false;
  touched.insert(dropped->node);
  UnindexFromNode(uid, dropped->node);
  return true;
}

std::optional<topology::PodFacts> ClusterState::PendingPod(const std::string& uid) const {
  common::MutexLock lock(&mu_);
  auto it = pending_.find(uid);
  if (it == pending_.end()) return std::nullopt;
  return it->second.facts;
}

StateCounters ClusterState::counters() const {
  common::MutexLock lock(&mu_);
  return counters_;
}

size_t ClusterState::assumption_count() const {
  common::MutexLock lock(&mu_);
  return assumed_.size();
}

bool ClusterState::OccupancyConsistent() const {
  common::MutexLock lock(&mu_);
  if (!policy_) return true;
  bool ok = true;
  for (const auto& [name, facts] : nodes_) {
    const topology::NodeState* published = snapshot_->FindNode(name);
    std::shared_ptr<const topology::NodeState> fresh = RecountLocked(facts, /*from_scratch=*/true);
    if (!published || !SameOccupancy(published->occupancy, fresh->occupancy) ||
        !SameHolders(published->holds, fresh->holds)) {
      common::Log(common::LogLevel::kError, "occupancy drift", {{"node", name}});
      ok = false;
    }
  }
  return ok;
}

}  // namespace kube
