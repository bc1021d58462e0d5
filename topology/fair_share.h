// Fair sharing: a tenant is guaranteed an amount (what it is owed), may hold up to a limit by
// borrowing capacity that no other tenant is owed, and shares idle capacity with its siblings
// by weight; tenants may be grouped, at any depth. All amounts are quota items (QuotaLine's
// names: "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "mig-compute-slices", "shared-replicas",
// "gpu-memory-mib", "gpu-pods").
//
// The model, in the terms docs/fair-sharing.md explains with a worked example:
//   - governed items: those any tenant or group names in `guaranteed` or `limit`; a
//     fair-sharing tenant that does not name one is guaranteed 0 of it;
//   - a request is *guaranteed* while the tenant's holdings plus the request stay within its
//     guarantee on every governed item the request adds to, and *borrowed* otherwise;
//   - what another tenant is *owed*: the part of its unused guarantee its pending pods ask for.
//     A borrowed request is placed only where the cluster's free capacity, less what every
//     other tenant is owed, still holds it;
//   - a tenant's *borrowed pods* are its newest pods beyond its guarantee; a guaranteed pod
//     that does not fit may reclaim them (topology/preemption.h), those of the tenant furthest
//     above its fair share first, newest first;
//   - the *fair share*: the cluster's capacity divided down the tree of groups, each member
//     first getting its guarantee (up to its demand: what it holds and what its pending pods
//     ask), the rest by weight among members that want more, up to their limits (weighted
//     max-min fairness, DivideFairly).
// Pure: the snapshot and the policy in, plain data out.
//
//   FairShareLedger ledger = MakeLedger(snapshot, policy);
//   ShareVerdict v = ClassifyRequest(ledger, policy, "vision", held, requested);
//   if (v.kind == ShareKind::kBorrowed) ...      // place only if v.ok()
#ifndef GPU_TENANCY_TOPOLOGY_FAIR_SHARE_H_
#define GPU_TENANCY_TOPOLOGY_FAIR_SHARE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "topology/policy.h"
#include "topology/quota.h"

namespace topology {

class ClusterSnapshot;

// Amounts by quota item name.
using ItemAmounts = std::map<std::string, int64_t, std::less<>>;
using ItemShares = std::map<std::string, double, std::less<>>;

// The items a quota sets, with their amounts.
ItemAmounts QuotaItems(const TenantQuota& quota);
// Every item a usage adds to (non-zero), with its amount.
ItemAmounts UsageItems(const QuotaUsage& usage);
// What one node offers in quota items: whole GPUs, MIG instances by profile and their compute
// slices, shared replicas, and the GPU memory behind them. Never pods: their number has no bound.
QuotaUsage OfferedCapacity(const NodeSupply& supply);
// "3", or for gpu-memory-mib "40Gi" / "1536Mi".
std::string ItemAmountText(absl::string_view item, double amount);

// The items fair sharing governs in `policy`: every item a fair-sharing tenant or a group
// names in guaranteed or limit.
std::set<std::string, std::less<>> GovernedItems(const Policy& policy);

// Load-time checks (Policy::Validate calls it): groups have names, known parents and no
// cycles; tenants name known groups; weights are at least 1; a guarantee stays within its own
// limit; a group's members' guarantees fit in the group's own guarantee and limit; and, when
// the policy states fairSharing.capacity, the top level's guarantees fit in it. Each error
// names the group (or tenant) and the item, with the guarantees that add up past it.
absl::Status ValidateFairShare(const Policy& policy);
// The top level's guarantees against a cluster's capacity (items the capacity has); an error
// naming the members whose guarantees overcommit it. For where a cluster is at hand.
absl::Status CheckGuarantees(const Policy& policy, const ItemAmounts& capacity);

// Weighted max-min fair division of `amount` among claimants: each first gets min(base, cap)
// (scaled down pro rata if those alone pass `amount`), then the rest goes to those below
// their cap so that (x - base) / weight is equal among all not at their cap. Returns the
// shares in claimant order; their sum is min(amount, sum of caps) when bases fit.
struct Claimant {
  double base = 0;    // guaranteed
  double cap = 0;     // the most it takes: min(limit, demand)
  double weight = 1;  // > 0
};
std::vector<double> DivideFairly(double amount, const std::vector<Claimant>& claimants);

// One fair-sharing tenant in a ledger. Amounts cover the governed items (absent: 0).
struct TenantShare {
  const Tenant* tenant = nullptr;
  std::string name;
  std::string group;       // "" at the top level
  ItemAmounts guaranteed;  // governed items the tenant is guaranteed (0 entries dropped)
  ItemAmounts limit;       // items it has a limit of its own on
  int64_t weight = 1;
  ItemAmounts held;       // bound and assumed pods and allocated claims
  ItemAmounts pending;    // its pods no node holds yet
  ItemAmounts borrowed;   // held beyond the guarantee
  ItemShares lent;        // its unused guarantee that other tenants' borrowing occupies now
  ItemShares fair_share;  // on items whose capacity is known
  // How far above its fair share it is: the largest (held - fair share) / capacity over the
  // items; negative when below on every one. Reclaim takes from the largest first.
  double above_fair_share = 0;

  int64_t Guaranteed(absl::string_view item) const;
  int64_t Held(absl::string_view item) const;
  // What it is owed of `item`: the part of its unused guarantee its pending pods ask for.
  int64_t Owed(absl::string_view item) const;
};

// The cluster as fair sharing sees it now.
struct FairShareLedger {
  std::set<std::string, std::less<>> items;  // governed
  ItemAmounts capacity;                      // offered, per governed item whose capacity is known
  ItemAmounts used;                  // held by everyone (fair-sharing or not), per governed item
  std::vector<TenantShare> tenants;  // the fair-sharing tenants, in policy order

  const TenantShare* Find(absl::string_view tenant) const;
  // What tenants other than `except` are owed of `item`.
  int64_t OwedToOthers(absl::string_view item, absl::string_view except) const;
  // Free capacity of `item`, or nullopt when its capacity is not known.
  std::optional<int64_t> Free(absl::string_view item) const;
  // What a group's members (at any depth) hold of `item`.
  int64_t GroupHeld(const Policy& policy, absl::string_view group, absl::string_view item) const;
};

// Empty (no tenants, no items) for a policy without fair sharing. Costs a pass over the
// namespaces and the published DRA devices, none over nodes.
FairShareLedger MakeLedger(const ClusterSnapshot& snapshot, const Policy& policy);

// How a request (a pod on a given node, or a claim) stands against its tenant's guarantee.
enum class ShareKind {
  kGuaranteed,  // within the guarantee on every governed item it adds to
  kBorrowed,    // above it, from capacity no other tenant is owed
  kOwed,        // above it, and the capacity it would take is owed to other tenants: refused
  kGroupLimit,  // a group of the tenant would pass its limit: refused
};
absl::string_view ShareKindName(ShareKind kind);  // "guaranteed", "borrowed", "owed", "group-limit"

struct ShareVerdict {
  ShareKind kind = ShareKind::kGuaranteed;
  // kBorrowed and kOwed: the first governed item borrowed; kGroupLimit: the item over.
  std::string item;
  int64_t requested = 0;
  int64_t guaranteed = 0;       // kBorrowed, kOwed: the tenant's guarantee of the item
  int64_t above_guarantee = 0;  // kBorrowed, kOwed: what the tenant then holds beyond it
  int64_t free = 0;             // kBorrowed, kOwed: free in the cluster (-1: not known)
  int64_t owed = 0;             // kBorrowed, kOwed: what other tenants are owed of it
  std::string group;            // kGroupLimit
  int64_t group_held = 0;       // kGroupLimit
  int64_t group_limit = 0;      // kGroupLimit

  bool ok() const { return kind == ShareKind::kGuaranteed || kind == ShareKind::kBorrowed; }
  // "borrowed: nvidia.com/gpu 1 above its guarantee of 4, from 3 free of which 0 are owed to
  // other tenants", "...: 2 free, but other tenants' pending pods are owed 2 of them", ...
  std::string Reason(absl::string_view tenant) const;
};

// `held` is what the tenant holds now (the ledger's, or admission's own count), `requested`
// what the pod (on its node) or the claim adds. A tenant without fair sharing: kGuaranteed.
ShareVerdict ClassifyRequest(const FairShareLedger& ledger, const Policy& policy,
                             absl::string_view tenant, const QuotaUsage& held,
                             const QuotaUsage& requested);

// A DRA claim at admission, counted as a pod is placed: within the guarantee, borrowed from
// capacity no other tenant is owed, or refused (owed to others, over a group's limit). `held` is
// what admission counts the tenant holding (its own count); `requested` the claim's quota
// count. A tenant without fair sharing: kGuaranteed, and no ledger is built.
ShareVerdict ClassifyClaim(const ClusterSnapshot& snapshot, const Policy& policy,
                           const TenantRef& tenant, const QuotaUsage& held,
                           const QuotaUsage& requested);

// A tenant's borrowed pods and where they stand for reclaim.
struct BorrowedPod {
  std::string tenant;
  std::string created;
  double above_fair_share = 0;  // its tenant's
};
// By pod UID (PodHold::uid). Each fair-sharing tenant above its guarantee: its pods on nodes,
// newest first, while what it holds is still above the guarantee on an item the pod adds to.
// A pass over every node: for reclaim, the map and explain, not for every filter call.
using BorrowedPods = absl::flat_hash_map<std::string, BorrowedPod>;
BorrowedPods FindBorrowedPods(const ClusterSnapshot& snapshot, const Policy& policy,
                              const FairShareLedger& ledger);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_FAIR_SHARE_H_
