#include "guard/ledger.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace guard {
namespace {

std::string PodKey(const topology::PodFacts& pod) {
  return ObjectKey(ObjectKind::kPod, pod.namespace_name, pod.name);
}

std::string ClaimKey(const topology::DraClaim& claim) {
  return ObjectKey(ObjectKind::kResourceClaim, claim.namespace_name, claim.name);
}

// One violation is the same as another when the rule is, and the words too; a quota's words
// carry counts that move while it stays broken.
bool SameViolation(const ContractViolation& a, const ContractViolation& b) {
  return a.rule == b.rule && (a.rule == kQuotaRule || a.message == b.message) &&
         a.ObjectKey() == b.ObjectKey();
}

std::string TenantOf(const topology::ClusterSnapshot& snapshot, const topology::Policy& policy,
                     absl::string_view namespace_name) {
  return topology::ResolveTenant(policy, namespace_name, snapshot.NamespaceLabels(namespace_name))
      .name;
}

}  // namespace

void ContractLedger::File(absl::flat_hash_map<std::string, std::vector<Tracked>>& table,
                          const std::string& key, std::vector<ContractViolation> now,
                          int64_t now_unix, Changes& changes) {
  auto it = table.find(key);
  std::vector<Tracked> before = it == table.end() ? std::vector<Tracked>{} : std::move(it->second);
  std::vector<bool> kept(before.size(), false);
  std::vector<Tracked> next;
  for (ContractViolation& v : now) {
    size_t i = 0;
    while (i < before.size() && (kept[i] || !SameViolation(before[i].violation, v))) ++i;
    if (i < before.size()) {
      kept[i] = true;
      next.push_back({std::move(v), before[i].since_unix});
    } else {
      Tracked started{std::move(v), now_unix};
      changes.started.push_back(started);
      next.push_back(std::move(started));
    }
  }
  for (size_t i = 0; i < before.size(); ++i) {
    if (!kept[i]) changes.ended.push_back(std::move(before[i].violation));
  }
  if (next.empty()) {
    if (it != table.end()) table.erase(it);
    return;
  }
  table[key] = std::move(next);
}

ContractLedger::Changes ContractLedger::Update(
    std::shared_ptr<const topology::ClusterSnapshot> snapshot,
    std::shared_ptr<const topology::Policy> policy, int64_t now_unix, bool full) {
  Changes changes;
  const topology::ClusterSnapshot& s = *snapshot;
  const topology::Policy& p = *policy;
  full = full || !last_ || policy != last_policy_ || s.namespaces() != last_->namespaces();
  changes.full = full;
  absl::flat_hash_set<std::string> tenants;  // whose quota to judge again
  auto judge_pod = [&](const std::string& uid, const topology::PodFacts& pod) {
    File(objects_, PodKey(pod), CheckPod(pod, s, p), now_unix, changes);
    pods_on_node_[pod.node_name].insert(uid);
    tenants.insert(TenantOf(s, p, pod.namespace_name));
    ++changes.judged;
  };
  auto judge_claim = [&](const topology::DraClaim& claim) {
    File(objects_, ClaimKey(claim), CheckClaim(claim, s, p), now_unix, changes);
    tenants.insert(TenantOf(s, p, claim.namespace_name));
    ++changes.judged;
  };

  if (full) {
    absl::flat_hash_set<std::string> before;
    for (const auto& [key, tracked] : objects_) before.insert(key);
    pods_on_node_.clear();
    s.contract_pods().ForEach([&](const std::string& uid, const auto& pod) {
      before.erase(PodKey(*pod));
      judge_pod(uid, *pod);
    });
    s.dra().claims.ForEach([&](const topology::DraClaim& claim) {
      before.erase(ClaimKey(claim));
      judge_claim(claim);
    });
    s.ForEachNode([&](const topology::NodeState& node) {
      const std::string key = ObjectKey(ObjectKind::kNode, "", node.facts.name);
      before.erase(key);
      File(objects_, key, CheckNode(node), now_unix, changes);
    });
    for (const std::string& key : before) File(objects_, key, {}, now_unix, changes);
    for (const topology::Tenant& t : p.tenants) tenants.insert(t.name);
    for (const auto& [tenant, tracked] : quotas_) tenants.insert(tenant);
  } else {
    const topology::ClusterSnapshot& was = *last_;
    s.contract_pods().ForEachDifference(
        was.contract_pods(), [&](const std::string& uid, const auto* before, const auto* now) {
          if (before) {
            const topology::PodFacts& old = **before;
            auto on = pods_on_node_.find(old.node_name);
            if (on != pods_on_node_.end()) on->second.erase(uid);
            tenants.insert(TenantOf(s, p, old.namespace_name));
            if (!now || PodKey(**now) != PodKey(old)) {
              File(objects_, PodKey(old), {}, now_unix, changes);
            }
          }
          if (now) judge_pod(uid, **now);
        });
    // A node whose facts changed (its pool label, its allocatable) judges its pods again; a
    // node rebuilt only for its pods (occupancy) has nothing new to say.
    s.ForEachNodeDifference(was, [&](const topology::NodeState* old,
                                     const topology::NodeState* node) {
      if (!node) {
        File(objects_, ObjectKey(ObjectKind::kNode, "", old->facts.name), {}, now_unix, changes);
        return;
      }
      if (old && old->facts == node->facts) return;
      File(objects_, ObjectKey(ObjectKind::kNode, "", node->facts.name), CheckNode(*node), now_unix,
           changes);
      ++changes.judged;
      auto on = pods_on_node_.find(node->facts.name);
      if (on == pods_on_node_.end()) return;
      const std::vector<std::string> uids(on->second.begin(), on->second.end());
      for (const std::string& uid : uids) {
        if (const auto* pod = s.contract_pods().Find(uid)) judge_pod(uid, **pod);
      }
    });
    // New devices change what an allocated claim holds: all of them, then.
    if (s.dra().device_set != was.dra().device_set) {
      s.dra().claims.ForEach(judge_claim);
    } else {
      s.dra().claims.ForEachDifference(
          was.dra().claims, [&](const topology::DraClaim* before, const topology::DraClaim* now) {
            if (before && !now) {
              File(objects_, ClaimKey(*before), {}, now_unix, changes);
              tenants.insert(TenantOf(s, p, before->namespace_name));
            }
            if (now) judge_claim(*now);
          });
    }
  }
  for (const std::string& tenant : tenants) {
    File(quotas_, tenant, CheckQuota(tenant, s, p), now_unix, changes);
  }
  changes.judged += tenants.size();
  last_ = std::move(snapshot);
  last_policy_ = std::move(policy);
  return changes;
}

std::vector<Tracked> ContractLedger::Current() const {
  std::vector<Tracked> out;
  for (const auto* table : {&objects_, &quotas_}) {
    for (const auto& [key, tracked] : *table) out.insert(out.end(), tracked.begin(), tracked.end());
  }
  std::sort(out.begin(), out.end(), [](const Tracked& a, const Tracked& b) {
    return std::make_tuple(a.violation.ObjectKey(), a.violation.rule, a.violation.message) <
           std::make_tuple(b.violation.ObjectKey(), b.violation.rule, b.violation.message);
  });
  return out;
}

std::vector<Tracked> ContractLedger::Of(absl::string_view object_key) const {
  std::vector<Tracked> out;
  for (const Tracked& t : Current()) {
    if (t.violation.ObjectKey() == object_key) out.push_back(t);
  }
  return out;
}

size_t ContractLedger::size() const {
  size_t n = 0;
  for (const auto* table : {&objects_, &quotas_}) {
    for (const auto& [key, tracked] : *table) n += tracked.size();
  }
  return n;
}

}  // namespace guard
