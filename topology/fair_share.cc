#include "topology/fair_share.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "topology/snapshot.h"
#include "topology/wellknown.h"

namespace topology {
namespace {

constexpr absl::string_view kSlicesItem = "mig-compute-slices";
constexpr absl::string_view kReplicasItem = "shared-replicas";
constexpr absl::string_view kMemoryItem = "gpu-memory-mib";
constexpr absl::string_view kPodsItem = "gpu-pods";

int64_t Get(const ItemAmounts& amounts, absl::string_view item) {
  auto it = amounts.find(item);
  return it == amounts.end() ? 0 : it->second;
}

void AddTo(ItemAmounts& to, const ItemAmounts& from) {
  for (const auto& [item, n] : from) to[item] += n;
}

}  // namespace

ItemAmounts QuotaItems(const TenantQuota& quota) {
  ItemAmounts out;
  for (const QuotaLine& line : QuotaLines(quota, {})) out[line.resource] = line.quota;
  return out;
}

ItemAmounts UsageItems(const QuotaUsage& usage) {
  ItemAmounts out;
  auto put = [&](absl::string_view item, int64_t n) {
    if (n != 0) out[std::string(item)] = n;
  };
  put(kGpuResource, usage.gpus);
  for (const auto& [profile, n] : usage.mig_instances) {
    put(absl::StrCat(kMigResourcePrefix, profile), n);
  }
  put(kSlicesItem, usage.mig_compute_slices);
  put(kReplicasItem, usage.shared_replicas);
  put(kMemoryItem, usage.gpu_memory_mib);
  put(kPodsItem, usage.gpu_pods);
  return out;
}

QuotaUsage OfferedCapacity(const NodeSupply& supply) {
  QuotaUsage out;
  for (const OfferedResource& r : supply.resources) {
    const int64_t memory = r.memory_mib.value_or(0);
    switch (r.kind) {
      case ResourceKind::kWholeGpu:
        out.gpus += r.allocatable;
        out.gpu_memory_mib += r.allocatable * memory;
        break;
      case ResourceKind::kMigInstance:
        if (r.allocatable > 0) out.mig_instances[r.mig_profile] += r.allocatable;
        out.mig_compute_slices += r.allocatable * MigComputeSlices(r.mig_profile);
        out.gpu_memory_mib += r.allocatable * memory;
        break;
      case ResourceKind::kSharedReplica:
        out.shared_replicas += r.allocatable;
        // Replicas share the memory of the GPUs behind them.
        if (r.allocatable > 0) out.gpu_memory_mib += supply.SharedGpuCount(r) * memory;
        break;
    }
  }
  return out;
}

std::string ItemAmountText(absl::string_view item, double amount) {
  if (item == kMemoryItem) {
    const double gib = amount / 1024;
    if (gib == static_cast<int64_t>(gib)) return absl::StrCat(static_cast<int64_t>(gib), "Gi");
    if (amount == static_cast<int64_t>(amount)) {
      return absl::StrCat(static_cast<int64_t>(amount), "Mi");
    }
    return absl::StrFormat("%.1fMi", amount);
  }
  if (amount == static_cast<int64_t>(amount)) return absl::StrCat(static_cast<int64_t>(amount));
  return absl::StrFormat("%.2f", amount);
}

std::set<std::string, std::less<>> GovernedItems(const Policy& policy) {
  std::set<std::string, std::less<>> items;
  auto add = [&](const TenantQuota& q) {
    for (const auto& [item, n] : QuotaItems(q)) items.insert(item);
  };
  for (const Tenant& t : policy.tenants) {
    if (!t.fair_share) continue;
    add(t.fair_share->guaranteed);
    add(t.fair_share->limit);
  }
  for (const TenantGroup& g : policy.groups) {
    add(g.guaranteed);
    add(g.limit);
  }
  return items;
}

std::vector<double> DivideFairly(double amount, const std::vector<Claimant>& claimants) {
  std::vector<double> out(claimants.size(), 0);
  double bases = 0;
  for (size_t i = 0; i < claimants.size(); ++i) {
    out[i] = std::max(0.0, std::min(claimants[i].base, claimants[i].cap));
    bases += out[i];
  }
  if (bases >= amount) {
    // Guarantees past the amount (the capacity shrank below what the policy promised): pro rata.
    if (bases > 0) {
      for (double& x : out) x *= std::max(0.0, amount) / bases;
    }
    return out;
  }
  // Water-filling: raise a level so that each claimant below its cap gets weight * level above
  // its base, until the rest is gone or every claimant is at its cap.
  struct Slack {
    size_t index;
    double room;  // cap - base
    double weight;
  };
  std::vector<Slack> slack;
  double total_weight = 0;
  for (size_t i = 0; i < claimants.size(); ++i) {
    const double room = claimants[i].cap - out[i];
    if (room <= 0) continue;
    const double weight = std::max(claimants[i].weight, 1e-9);
    slack.push_back({i, room, weight});
    total_weight += weight;
  }
  std::sort(slack.begin(), slack.end(),
            [](const Slack& a, const Slack& b) { return a.room / a.weight < b.room / b.weight; });
  double rest = amount - bases;
  double level = 0;
  double filled = 0;  // what claimants at their cap took
  bool found = false;
  for (const Slack& s : slack) {
    const double at_cap = s.room / s.weight;
    if (filled + at_cap * total_weight >= rest) {
      level = (rest - filled) / total_weight;
      found = true;
      break;
    }
    filled += s.room;
    total_weight -= s.weight;
  }
  for (const Slack& s : slack) {
    out[s.index] += found ? std::min(s.room, s.weight * level) : s.room;
  }
  return out;
}

int64_t TenantShare::Guaranteed(absl::string_view item) const { return Get(guaranteed, item); }
int64_t TenantShare::Held(absl::string_view item) const { return Get(held, item); }

int64_t TenantShare::Owed(absl::string_view item) const {
  const int64_t unused = std::max<int64_t>(0, Guaranteed(item) - Held(item));
  return std::min(unused, Get(pending, item));
}

const TenantShare* FairShareLedger::Find(absl::string_view tenant) const {
  for (const TenantShare& t : tenants) {
    if (t.name == tenant) return &t;
  }
  return nullptr;
}

int64_t FairShareLedger::OwedToOthers(absl::string_view item, absl::string_view except) const {
  int64_t owed = 0;
  for (const TenantShare& t : tenants) {
    if (t.name != except) owed += t.Owed(item);
  }
  return owed;
}

std::optional<int64_t> FairShareLedger::Free(absl::string_view item) const {
  auto it = capacity.find(item);
  if (it == capacity.end()) return std::nullopt;
  return std::max<int64_t>(0, it->second - Get(used, item));
}

namespace {

// Whether a member of `group` (the tenant's own group, "" for none) is in `ancestor`.
bool InGroup(const Policy& policy, absl::string_view group, absl::string_view ancestor) {
  // Bounded by the number of groups: validation refuses cycles, this never loops anyway.
  for (size_t depth = 0; !group.empty() && depth <= policy.groups.size(); ++depth) {
    if (group == ancestor) return true;
    const TenantGroup* g = policy.FindGroup(group);
    if (!g) return false;
    group = g->parent;
  }
  return false;
}

}  // namespace

int64_t FairShareLedger::GroupHeld(const Policy& policy, absl::string_view group,
                                   absl::string_view item) const {
  int64_t held = 0;
  for (const TenantShare& t : tenants) {
    if (InGroup(policy, t.group, group)) held += t.Held(item);
  }
  return held;
}

namespace {

// The fair-share tree: groups and tenants, each member's claim at its level.
class FairShareTree {
 public:
  FairShareTree(const Policy& policy, std::vector<TenantShare>& tenants)
      : policy_(policy), tenants_(tenants) {}

  // Divides `capacity` of `item` down the tree into each tenant's fair_share.
  void Divide(const std::string& item, double capacity) { DivideAmong("", item, capacity, 0); }

 private:
  struct Member {
    const TenantGroup* group = nullptr;
    TenantShare* tenant = nullptr;
  };
  std::vector<Member> MembersOf(absl::string_view group) const {
    std::vector<Member> out;
    for (const TenantGroup& g : policy_.groups) {
      if (g.parent == group) out.push_back({&g, nullptr});
    }
    for (TenantShare& t : tenants_) {
      if (t.group == group) out.push_back({nullptr, &t});
    }
    return out;
  }
  // A member's claim: its guarantee, the most it takes (limit, and demand: held + pending),
  // and its weight.
  Claimant ClaimOf(const Member& m, const std::string& item, size_t depth) const {
    if (m.tenant) {
      const double demand = m.tenant->Held(item) + Get(m.tenant->pending, item);
      auto limit = m.tenant->limit.find(item);
      return {static_cast<double>(m.tenant->Guaranteed(item)),
              limit == m.tenant->limit.end() ? demand
                                             : std::min(demand, static_cast<double>(limit->second)),
              static_cast<double>(m.tenant->weight)};
    }
    Claimant c{0, 0, static_cast<double>(m.group->weight)};
    if (depth > policy_.groups.size()) return c;  // a cycle validation would have refused
    for (const Member& child : MembersOf(m.group->name)) {
      Claimant cc = ClaimOf(child, item, depth + 1);
      c.base += cc.base;
      c.cap += cc.cap;
    }
    ItemAmounts own = QuotaItems(m.group->guaranteed);
    if (auto it = own.find(item); it != own.end()) c.base = static_cast<double>(it->second);
    ItemAmounts limit = QuotaItems(m.group->limit);
    if (auto it = limit.find(item); it != limit.end()) {
      c.cap = std::min(c.cap, static_cast<double>(it->second));
    }
    return c;
  }
  void DivideAmong(absl::string_view group, const std::string& item, double amount, size_t depth) {
    if (depth > policy_.groups.size()) return;
    std::vector<Member> members = MembersOf(group);
    std::vector<Claimant> claims;
    for (const Member& m : members) claims.push_back(ClaimOf(m, item, depth));
    std::vector<double> shares = DivideFairly(amount, claims);
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].tenant) {
        members[i].tenant->fair_share[item] = shares[i];
      } else {
        DivideAmong(members[i].group->name, item, shares[i], depth + 1);
      }
    }
  }

  const Policy& policy_;
  std::vector<TenantShare>& tenants_;
};

// What the published DRA devices offer in quota items. A partitionable GPU publishes itself and
// its partitions, which exclude each other: only the whole device counts. Shared
// (multi-allocatable) devices have no replica bound and count nothing.
QuotaUsage DraOffered(const DraState& dra) {
  QuotaUsage out;
  for (const DraDevice& d : dra.devices()) {
    if (d.allow_multiple_allocations) continue;
    if (d.type == "gpu") {
      ++out.gpus;
      out.gpu_memory_mib += d.memory_mib.value_or(0);
    } else if (d.type == "mig" && d.consumes_counters.empty() && !d.profile.empty()) {
      ++out.mig_instances[d.profile];
      out.mig_compute_slices += MigComputeSlices(d.profile);
      out.gpu_memory_mib += d.memory_mib.value_or(0);
    }
  }
  return out;
}

ItemAmounts Governed(const ItemAmounts& all, const std::set<std::string, std::less<>>& items) {
  ItemAmounts out;
  for (const auto& [item, n] : all) {
    if (items.contains(item) && n != 0) out.emplace(item, n);
  }
  return out;
}

}  // namespace

FairShareLedger MakeLedger(const ClusterSnapshot& snapshot, const Policy& policy) {
  FairShareLedger ledger;
  if (!policy.FairSharing()) return ledger;
  ledger.items = GovernedItems(policy);
  absl::flat_hash_map<std::string, size_t> index;
  for (const Tenant& t : policy.tenants) {
    if (!t.fair_share) continue;
    index[t.name] = ledger.tenants.size();
    TenantShare share;
    share.tenant = &t;
    share.name = t.name;
    share.group = t.fair_share->group;
    share.weight = t.fair_share->weight;
    share.guaranteed = Governed(QuotaItems(t.fair_share->guaranteed), ledger.items);
    share.limit = QuotaItems(t.fair_share->limit);
    ledger.tenants.push_back(std::move(share));
  }
  // Namespaces resolve once each; usage, claims and pending pods are all per namespace.
  absl::flat_hash_map<std::string, TenantShare*> by_namespace;
  auto tenant_of = [&](const std::string& ns) -> TenantShare* {
    auto [it, added] = by_namespace.try_emplace(ns, nullptr);
    if (added) {
      TenantRef ref = ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns));
      if (auto i = index.find(ref.name); ref.tenant && i != index.end()) {
        it->second = &ledger.tenants[i->second];
      }
    }
    return it->second;
  };
  QuotaUsage used;
  auto hold = [&](const std::string& ns, const QuotaUsage& usage) {
    used.Add(usage);
    if (TenantShare* t = tenant_of(ns)) AddTo(t->held, Governed(UsageItems(usage), ledger.items));
  };
  for (const auto& [ns, usage] : snapshot.usage()) hold(ns, usage);
  snapshot.dra().usage.ForEach(hold);
  for (const auto& [ns, usage] : snapshot.pending_usage()) {
    if (TenantShare* t = tenant_of(ns)) {
      AddTo(t->pending, Governed(UsageItems(usage), ledger.items));
    }
  }
  ledger.used = Governed(UsageItems(used), ledger.items);
  QuotaUsage capacity = snapshot.offered_capacity();
  capacity.Add(DraOffered(snapshot.dra()));
  for (const auto& [item, n] : UsageItems(capacity)) {
    if (ledger.items.contains(item)) ledger.capacity[item] = n;
  }
  // Items the fleet offers none of still have a capacity: zero.
  for (const std::string& item : ledger.items) {
    if (item != kPodsItem) ledger.capacity.try_emplace(item, 0);
  }

  FairShareTree tree(policy, ledger.tenants);
  for (const auto& [item, cap] : ledger.capacity) tree.Divide(item, static_cast<double>(cap));
  for (TenantShare& t : ledger.tenants) {
    t.above_fair_share = -std::numeric_limits<double>::infinity();
    for (const std::string& item : ledger.items) {
      const int64_t over = t.Held(item) - t.Guaranteed(item);
      if (over > 0) t.borrowed[item] = over;
    }
    for (const auto& [item, cap] : ledger.capacity) {
      if (cap <= 0) continue;
      const double fair = t.fair_share.count(item) ? t.fair_share.at(item) : 0;
      t.above_fair_share = std::max(t.above_fair_share, (t.Held(item) - fair) / cap);
    }
    if (t.above_fair_share == -std::numeric_limits<double>::infinity()) t.above_fair_share = 0;
  }
  // Lent: whatever holdings beyond guarantees the unguaranteed capacity does not cover sit in
  // some tenant's unused guarantee; each lender is counted its part, pro rata.
  for (const auto& [item, cap] : ledger.capacity) {
    int64_t guaranteed = 0, covered = 0, unused = 0;
    for (const TenantShare& t : ledger.tenants) {
      guaranteed += t.Guaranteed(item);
      covered += std::min(t.Held(item), t.Guaranteed(item));
      unused += std::max<int64_t>(0, t.Guaranteed(item) - t.Held(item));
    }
    const int64_t beyond = Get(ledger.used, item) - covered;
    const int64_t spare = std::max<int64_t>(0, cap - guaranteed);
    const int64_t lent = std::clamp<int64_t>(beyond - spare, 0, unused);
    if (lent == 0) continue;
    for (TenantShare& t : ledger.tenants) {
      const int64_t mine = std::max<int64_t>(0, t.Guaranteed(item) - t.Held(item));
      if (mine > 0) t.lent[item] = static_cast<double>(lent) * mine / unused;
    }
  }
  return ledger;
}

absl::string_view ShareKindName(ShareKind kind) {
  switch (kind) {
    case ShareKind::kGuaranteed:
      return "guaranteed";
    case ShareKind::kBorrowed:
      return "borrowed";
    case ShareKind::kOwed:
      return "owed";
    case ShareKind::kGroupLimit:
      return "group-limit";
  }
  return "unknown";
}

std::string ShareVerdict::Reason(absl::string_view tenant) const {
  auto n = [&](int64_t amount) { return ItemAmountText(item, static_cast<double>(amount)); };
  const std::string free_text = free < 0 ? "capacity not known" : absl::StrCat(n(free), " free");
  switch (kind) {
    case ShareKind::kGuaranteed:
      return absl::StrCat("guaranteed: within tenant ", tenant, "'s guarantee");
    case ShareKind::kBorrowed:
      return absl::StrCat("borrowed: ", item, " ", n(above_guarantee), " above tenant ", tenant,
                          "'s guarantee of ", n(guaranteed), ", from ", free_text, " (", n(owed),
                          " owed to other tenants)");
    case ShareKind::kOwed:
      return absl::StrCat("tenant ", tenant, " would borrow ", item, " (", n(requested),
                          " requested, ", n(above_guarantee), " above its guarantee of ",
                          n(guaranteed), "), but of the ", free_text, " in the cluster ", n(owed),
                          " are owed to other tenants' pending pods");
    case ShareKind::kGroupLimit:
      return absl::StrCat("group ", group, " limit: ", item, " ", n(group_held), " of ",
                          n(group_limit), " held by its tenants, ", n(requested), " requested");
  }
  return "";
}

ShareVerdict ClassifyRequest(const FairShareLedger& ledger, const Policy& policy,
                             absl::string_view tenant, const QuotaUsage& held,
                             const QuotaUsage& requested) {
  ShareVerdict v;
  const TenantShare* share = ledger.Find(tenant);
  if (!share) return v;
  const ItemAmounts asks = UsageItems(requested);
  const ItemAmounts holds = UsageItems(held);
  // The tenant's groups, innermost first: each limit counts every member.
  absl::string_view group = share->group;
  for (size_t depth = 0; !group.empty() && depth <= policy.groups.size(); ++depth) {
    const TenantGroup* g = policy.FindGroup(group);
    if (!g) break;
    for (const auto& [item, limit] : QuotaItems(g->limit)) {
      const int64_t r = Get(asks, item);
      if (r <= 0) continue;
      // The ledger's count of the group, with this tenant's part as the caller counts it.
      const int64_t group_held =
          ledger.GroupHeld(policy, g->name, item) - share->Held(item) + Get(holds, item);
      if (group_held + r > limit) {
        v.kind = ShareKind::kGroupLimit;
        v.item = item;
        v.requested = r;
        v.group = g->name;
        v.group_held = group_held;
        v.group_limit = limit;
        return v;
      }
    }
    group = g->parent;
  }
  for (const std::string& item : ledger.items) {
    const int64_t r = Get(asks, item);
    if (r <= 0) continue;
    const int64_t after = Get(holds, item) + r;
    const int64_t guaranteed = share->Guaranteed(item);
    if (after <= guaranteed) continue;
    const std::optional<int64_t> free = ledger.Free(item);
    const int64_t owed = ledger.OwedToOthers(item, tenant);
    const bool lendable = !free || r <= *free - owed;
    if (v.kind == ShareKind::kBorrowed && lendable) continue;  // the first borrowed item says it
    v.kind = lendable ? ShareKind::kBorrowed : ShareKind::kOwed;
    v.item = item;
    v.requested = r;
    v.guaranteed = guaranteed;
    v.above_guarantee = after - guaranteed;
    v.free = free.value_or(-1);
    v.owed = owed;
    if (!lendable) return v;
  }
  return v;
}

ShareVerdict ClassifyClaim(const ClusterSnapshot& snapshot, const Policy& policy,
                           const TenantRef& tenant, const QuotaUsage& held,
                           const QuotaUsage& requested) {
  if (!tenant.tenant || !tenant.tenant->fair_share) return ShareVerdict{};
  return ClassifyRequest(MakeLedger(snapshot, policy), policy, tenant.name, held, requested);
}

BorrowedPods FindBorrowedPods(const ClusterSnapshot& snapshot, const Policy& policy,
                              const FairShareLedger& ledger) {
  BorrowedPods out;
  absl::flat_hash_map<std::string, const TenantShare*> lenders;  // tenants above a guarantee
  for (const TenantShare& t : ledger.tenants) {
    if (!t.borrowed.empty()) lenders[t.name] = &t;
  }
  if (lenders.empty()) return out;
  struct Holder {
    const TenantShare* tenant;
    const PodHold* hold;
    ItemAmounts usage;
  };
  std::vector<Holder> holders;
  absl::flat_hash_map<std::string, const TenantShare*> by_namespace;
  snapshot.ForEachNode([&](const NodeState& node) {
    for (const auto& hold : node.holds) {
      auto [it, added] = by_namespace.try_emplace(hold->namespace_name, nullptr);
      if (added) {
        TenantRef ref = ResolveTenant(policy, hold->namespace_name,
                                      snapshot.NamespaceLabels(hold->namespace_name));
        if (auto l = lenders.find(ref.name); ref.tenant && l != lenders.end()) {
          it->second = l->second;
        }
      }
      if (!it->second) continue;
      holders.push_back(
          {it->second, hold.get(),
           UsageItems(HoldUsage(hold->demand, node.supply, node.facts.labels, policy))});
    }
  });
  // Newest first; ties (no creation time) by namespace and name, the last first.
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
    return std::tie(a.hold->created, a.hold->namespace_name, a.hold->name) >
           std::tie(b.hold->created, b.hold->namespace_name, b.hold->name);
  });
  absl::flat_hash_map<const TenantShare*, ItemAmounts> over;
  for (const auto& [name, t] : lenders) over[t] = t->borrowed;
  for (const Holder& h : holders) {
    ItemAmounts& left = over[h.tenant];
    bool beyond = false;
    for (const auto& [item, n] : h.usage) beyond |= n > 0 && Get(left, item) > 0;
    if (!beyond) continue;
    for (const auto& [item, n] : h.usage) {
      if (auto it = left.find(item); it != left.end()) it->second -= n;
    }
    out[h.hold->uid] = {h.tenant->name, h.hold->created, h.tenant->above_fair_share};
  }
  return out;
}

}  // namespace topology
