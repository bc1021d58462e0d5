#include "topology/dra/extended_resources.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/dra/capacity.h"
#include "topology/dra/counters.h"
#include "topology/dra/selector.h"
#include "topology/supply.h"

namespace topology {
namespace {

// The class that backs `device` on this node: the name is DRA-backed and the node offers no
// device-plugin allocatable of it (a node cannot have both, so allocatable wins).
std::optional<size_t> DraClassHere(const DraState& dra, const NodeSupply& supply,
                                   const ResourceCount& device) {
  auto it = dra.extended_resources().find(device.name);
  if (it == dra.extended_resources().end()) return std::nullopt;
  const OfferedResource* offered = supply.Find(device);
  if (offered != nullptr && offered->allocatable > 0) return std::nullopt;
  return it->second;
}

// One class the demand draws on, on one node.
struct DraShare {
  size_t class_index = 0;
  absl::string_view resource;  // the demand's first name for it, for the reason
  int64_t requested = 0;
  int64_t devices = 0;                      // matching devices on the node
  int64_t free = 0;                         // not held by claims nor asked by pending pods, >= 0
  const DraClassOnNode* on_node = nullptr;  // null: no device of the node matches
};

struct DraSplit {
  absl::InlinedVector<DraShare, 2> shares;
  bool rest = false;  // some names go through Fit
};

DraSplit Split(const GpuDemand& demand, const NodeSupply& supply, const DraState& dra) {
  DraSplit split;
  for (const ResourceCount& device : demand.devices) {
    std::optional<size_t> c = DraClassHere(dra, supply, device);
    if (!c) {
      split.rest = true;
      continue;
    }
    auto same = std::find_if(split.shares.begin(), split.shares.end(),
                             [&](const DraShare& s) { return s.class_index == *c; });
    if (same != split.shares.end()) {
      same->requested += device.count;
    } else {
      DraShare share;
      share.class_index = *c;
      share.resource = device.name;
      share.requested = device.count;
      split.shares.push_back(share);
    }
  }
  return split;
}

// What bound and assumed pods ask of the class's names on the node and no allocated claim
// covers yet: a pod bound a moment ago has its claim made at PreBind and allocated after.
int64_t PendingDemand(const NodeState& node, const DraState& dra, size_t class_index) {
  int64_t pending = 0;
  for (const std::shared_ptr<const PodHold>& hold : node.holds) {
    if (dra.extended_claim_pods.contains(hold->uid)) continue;
    for (const ResourceCount& device : hold->demand.devices) {
      if (DraClassHere(dra, node.supply, device) == class_index) pending += device.count;
    }
  }
  return pending;
}

void Count(const NodeState& node, const DraState& dra, DraShare& share) {
  const DraClassesOnNode* on_node = dra.ClassesOnNode(node.facts.name);
  if (on_node && share.class_index < on_node->size()) {
    share.on_node = &(*on_node)[share.class_index];
  }
  if (share.on_node == nullptr) return;
  share.devices = share.on_node->devices;
  const int64_t unclaimed =
      share.on_node->devices - share.on_node->allocated - share.on_node->blocked;
  share.free = std::max<int64_t>(0, unclaimed - PendingDemand(node, dra, share.class_index));
}

SharingMode DraMode(const DraShare& share) {
  return share.on_node != nullptr && share.on_node->type == "mig" ? SharingMode::kMig
                                                                  : SharingMode::kExclusive;
}

// The mode of the class's multi-allocatable devices: one memory heap and fault domain for
// every claim that holds a share, so time-slicing (or mig-shared, for a MIG device).
SharingMode DraSharedMode(const DraShare& share) {
  return share.on_node->type == "mig" ? SharingMode::kMigShared : SharingMode::kTimeslice;
}

// The decision for the DRA-backed shares; the shares get their counts on the way.
FitResult FitShares(const PodContext& pod, const NodeState& node, const DraState& dra,
                    DraSplit& split) {
  FitResult out;
  if (pod.tenant.Denied()) {
    out.verdict = Verdict::kUnresolvable;
    out.rule = Rule::kTenantDenied;
    out.subject = pod.tenant.name;
    return out;
  }
  const Tier& tier = *pod.tenant.tier;
  const NodeSupply& supply = node.supply;
  // A labelled node is judged by its pool, as Fit does; the pool of an unlabelled node that
  // offers only DRA devices is what the devices give.
  if (supply.pool_labelled && !supply.pool_mode && !pod.policy->pools.empty()) {
    out.verdict = Verdict::kUnresolvable;
    out.rule = Rule::kPoolUndefined;
    out.subject = supply.pool;
    return out;
  }
  if (supply.pool_mode && !tier.modes.Has(*supply.pool_mode)) {
    out.verdict = Verdict::kUnresolvable;
    out.rule = Rule::kTierPool;
    out.subject = supply.pool;
    out.mode = *supply.pool_mode;
    out.tier = tier.name;
    return out;
  }
  for (DraShare& share : split.shares) {
    Count(node, dra, share);
    if (share.devices == 0) continue;
    // The allocator may give any matching device, so the tier must allow what each kind of
    // device is: whole GPUs or MIG devices, and shares of the multi-allocatable ones.
    const int64_t shared = share.on_node->multi_allocatable;
    std::optional<SharingMode> refused;
    if (shared < share.devices && !tier.modes.Has(DraMode(share))) refused = DraMode(share);
    if (!refused && shared > 0 && !tier.modes.Has(DraSharedMode(share))) {
      refused = DraSharedMode(share);
    }
    if (refused) {
      out.verdict = Verdict::kUnresolvable;
      out.rule = Rule::kTierResource;
      out.resource = share.resource;
      out.mode = *refused;
      out.tier = tier.name;
      return out;
    }
  }
  for (const DraShare& share : split.shares) {
    if (share.requested <= share.free) continue;
    const bool never = share.requested > share.devices;
    out.verdict = never ? Verdict::kUnresolvable : Verdict::kUnschedulable;
    out.rule = never ? Rule::kDraExceedsNode : Rule::kDraExhausted;
    out.resource = share.resource;
    out.requested = share.requested;
    out.free = share.free;
    out.capacity = share.devices;
    out.subject = dra.classes()[share.class_index].name;
    if (share.on_node != nullptr) out.detail = share.on_node->not_counted_reason;
    return out;
  }
  return out;
}

// Fit over the names that are not DRA-backed here. The result's resource view is moved onto
// `demand`'s own string, since `rest` is gone when the caller reads it.
FitResult FitRest(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                  const DraState& dra) {
  GpuDemand rest;
  rest.memory_mib = demand.memory_mib;
  for (const ResourceCount& device : demand.devices) {
    if (!DraClassHere(dra, node.supply, device)) rest.devices.Set(device.name, device.count);
  }
  FitResult r = Fit(rest, pod, node.supply, node.occupancy);
  if (!r.resource.empty()) {
    for (const ResourceCount& device : demand.devices) {
      if (device.name == r.resource) r.resource = device.name;
    }
  }
  return r;
}

void MergeType(const DraDevice& device, bool first, DraClassOnNode& on) {
  if (first) {
    on.type = device.type;
    on.mig_profile = device.profile;
    return;
  }
  if (on.type != device.type) on.type.clear();
  if (on.mig_profile != device.profile) on.mig_profile.clear();
}

// Per node, what each class makes of its devices; fills counted_for. Devices of slices not
// tied to one node are not counted.
absl::flat_hash_map<std::string, DraClassesOnNode> CountClassesOnNodes(DraDeviceSet& set) {
  absl::flat_hash_map<std::string, DraClassesOnNode> classes_on_node;
  if (set.classes.empty()) return classes_on_node;
  std::vector<std::vector<CompiledSelector>> selectors;
  selectors.reserve(set.classes.size());
  for (const DraDeviceClass& c : set.classes) selectors.push_back(CompileSelectors(c.selectors));
  // Per (node, class): the first reason a device was not counted.
  absl::flat_hash_map<std::string, std::vector<std::string>> first_reason;
  for (size_t k = 0; k < set.devices.size(); ++k) {
    const DraDevice& device = set.devices[k];
    if (device.node.empty()) continue;
    DraClassesOnNode& per_class = classes_on_node[device.node];
    std::vector<std::string>& reasons = first_reason[device.node];
    if (per_class.empty()) {
      per_class.resize(set.classes.size());
      reasons.resize(set.classes.size());
    }
    for (size_t c = 0; c < set.classes.size(); ++c) {
      DraClassOnNode& on = per_class[c];
      SelectorResult r = DeviceMatchesCompiled(device, selectors[c]);
      switch (r.outcome) {
        case SelectorOutcome::kMatch:
          MergeType(device, on.devices == 0, on);
          ++on.devices;
          if (device.allow_multiple_allocations) ++on.multi_allocatable;
          set.counted_for[k].push_back(static_cast<uint32_t>(c));
          break;
        case SelectorOutcome::kNoMatch:
          break;
        case SelectorOutcome::kError:
        case SelectorOutcome::kNotEvaluated:
          if (on.not_counted == 0) {
            reasons[c] =
                absl::StrCat(r.outcome == SelectorOutcome::kError ? "selector failed: "
                                                                  : "selector not evaluated: ",
                             r.detail);
          }
          ++on.not_counted;
          break;
      }
    }
  }
  for (auto& [node, per_class] : classes_on_node) {
    const std::vector<std::string>& reasons = first_reason[node];
    for (size_t c = 0; c < per_class.size(); ++c) {
      DraClassOnNode& on = per_class[c];
      if (on.not_counted == 0) continue;
      on.not_counted_reason =
          absl::StrCat(on.not_counted, on.not_counted == 1 ? " device" : " devices",
                       " not counted, ", reasons[c]);
    }
  }
  return classes_on_node;
}

}  // namespace

void IndexDraExtendedResources(DraDeviceSet& set) {
  set.extended_resources.clear();
  set.node_counts = {};
  set.counted_for.assign(set.devices.size(), {});
  set.slot_on_node.assign(set.devices.size(), 0);
  absl::flat_hash_map<absl::string_view, uint32_t> devices_on_node;
  for (size_t k = 0; k < set.devices.size(); ++k) {
    set.slot_on_node[k] = devices_on_node[set.devices[k].node]++;
  }
  // Explicit names first, by class name, so the lexicographically first class keeps a name
  // two classes claim; then every class's implicit name.
  std::vector<size_t> by_name(set.classes.size());
  std::iota(by_name.begin(), by_name.end(), 0);
  std::sort(by_name.begin(), by_name.end(),
            [&](size_t a, size_t b) { return set.classes[a].name < set.classes[b].name; });
  for (size_t i : by_name) {
    const std::string& name = set.classes[i].extended_resource_name;
    if (!name.empty()) set.extended_resources.try_emplace(name, i);
  }
  for (size_t i : by_name) {
    set.extended_resources.try_emplace(
        absl::StrCat(kDeviceClassResourcePrefix, set.classes[i].name), i);
  }

  absl::flat_hash_map<std::string, DraClassesOnNode> classes_on_node = CountClassesOnNodes(set);
  for (const auto& [node, devices] : devices_on_node) {
    auto counts = std::make_shared<DraNodeCounts>();
    if (auto it = classes_on_node.find(node); it != classes_on_node.end()) {
      counts->classes = std::move(it->second);
    }
    counts->results.assign(devices, 0);
    CountDraBlocked(set, std::string(node), *counts);
    set.node_counts.Put(std::string(node), std::move(counts));
  }
}

void CountDraHeldDevices(DraState& state, absl::Span<const DraHeldResult> held_results, int sign) {
  for (const DraHeldResult& held : held_results) {
    const uint32_t k = held.device;
    const DraDevice& device = state.devices()[k];
    const std::string& node = device.node;
    const uint32_t slot = state.device_set->slot_on_node[k];
    // The device set made an entry for every node with devices.
    auto changed = std::make_shared<DraNodeCounts>(**state.node_counts.Find(node));
    // What the device is to a request of the classes (which asks no capacity) before and
    // after: held and shared (its shares leave room for one more), held and allocated (a
    // whole hold, or shares that leave too little), or not held.
    enum { kNotHeld, kShared, kAllocated };
    auto status = [&] {
      if (changed->results[slot] == 0) return kNotHeld;
      auto shares = changed->shares.find(slot);
      const DraRoom room = RoomFor(device, changed->results[slot],
                                   shares == changed->shares.end() ? nullptr : &shares->second,
                                   /*requests=*/{});
      return room == DraRoom::kShared ? kShared : kAllocated;
    };
    const int before = status();
    changed->results[slot] += sign;
    if (IsShare(device, *held.result)) {
      DraShares& shares = changed->shares[slot];
      shares.count += sign;
      AddCapacity(shares.consumed, held.result->consumed_capacity, sign);
      if (shares.count == 0) changed->shares.erase(slot);
    }
    const int after = status();
    if (before != after && !changed->classes.empty()) {
      for (uint32_t c : state.device_set->counted_for[k]) {
        changed->classes[c].allocated += (after == kAllocated) - (before == kAllocated);
        changed->classes[c].shared += (after == kShared) - (before == kShared);
      }
    }
    CountDraBlocked(*state.device_set, node, *changed);
    state.node_counts.Put(node, std::move(changed));
  }
}

void CountDraExtendedClaimPods(DraState& state, const DraClaim& claim, int sign) {
  if (!claim.allocated || !claim.extended_resource_claim) return;
  auto count = [&](const std::string& key) {
    int claims = 0;
    state.extended_claim_pods.Update(key, [&](int& n) { claims = n += sign; });
    if (claims == 0) state.extended_claim_pods.Erase(key);
  };
  for (const DraReservation& consumer : claim.reserved_for) {
    // Holds are keyed by UID, or by namespace/name for pods without one.
    if (!consumer.uid.empty()) count(consumer.uid);
    count(absl::StrCat(claim.namespace_name, "/", consumer.name));
  }
}

const DraDeviceClass* DraExtendedClass(const DraState& dra, absl::string_view resource) {
  auto it = dra.extended_resources().find(resource);
  return it == dra.extended_resources().end() ? nullptr : &dra.classes()[it->second];
}

absl::Status AddDraExtendedDemand(const PodFacts& pod, const DraState& dra, GpuDemand& demand) {
  if (dra.extended_resources().empty()) return absl::OkStatus();
  // Most pods ask for nothing of the kind: look at the names before computing requests.
  auto wanted = [&](absl::string_view name) {
    return dra.extended_resources().contains(name) && demand.devices.Find(name) == nullptr;
  };
  bool any = false;
  for (const auto* list : {&pod.containers, &pod.init_containers}) {
    for (const ContainerFacts& c : *list) {
      for (const ResourceList* resources : {&c.requests, &c.limits}) {
        for (const auto& [name, q] : *resources) any = any || wanted(name);
      }
    }
  }
  if (!any) return absl::OkStatus();
  for (const auto& [name, q] : EffectiveRequests(pod)) {
    if (!wanted(name)) continue;
    if (q.IsNegative() || q.milli() % 1000 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("pod ", pod.Key(), ": ", name,
                                                     " must be a whole, non-negative number, got ",
                                                     q.ToString()));
    }
    if (!q.IsZero()) demand.devices.Set(name, q.Value());
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuDemand> ComputeDemandWithDra(const PodFacts& pod, const Policy& policy,
                                               const DraState& dra) {
  absl::StatusOr<GpuDemand> demand = ComputeDemand(pod, policy);
  if (demand.ok()) {
    absl::Status added = AddDraExtendedDemand(pod, dra, *demand);
    if (!added.ok()) return added;
  }
  return demand;
}

bool DemandUsesDra(const GpuDemand& demand, const DraState& dra) {
  if (dra.extended_resources().empty()) return false;
  for (const ResourceCount& device : demand.devices) {
    if (dra.extended_resources().contains(device.name)) return true;
  }
  return false;
}

FitResult FitWithDra(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                     const DraState& dra) {
  DraSplit split = Split(demand, node.supply, dra);
  if (split.shares.empty()) return Fit(demand, pod, node.supply, node.occupancy);
  FitResult r = FitShares(pod, node, dra, split);
  if (!r.fits() || !split.rest) return r;
  return FitRest(demand, pod, node, dra);
}

int ScoreWithDra(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                 const DraState& dra) {
  DraSplit split = Split(demand, node.supply, dra);
  if (split.shares.empty()) return Score(demand, pod, node.supply, node.occupancy);
  if (!FitShares(pod, node, dra, split).fits()) return 0;
  if (split.rest && !FitRest(demand, pod, node, dra).fits()) return 0;
  // How full the pod leaves the node's devices of each class, averaged.
  double sum = 0;
  for (const DraShare& share : split.shares) {
    const int64_t used_after = share.devices - share.free + share.requested;
    sum += share.devices > 0 ? static_cast<double>(used_after) / share.devices : 1.0;
  }
  const double fullness = sum / static_cast<double>(split.shares.size());
  const ScoringStrategy strategy = pod.scoring.value_or(pod.policy->scoring);
  const double score = 10.0 * (strategy == ScoringStrategy::kBinpack ? fullness : 1.0 - fullness);
  return std::clamp(static_cast<int>(std::lround(score)), 0, 10);
}

absl::string_view DraMigProfile(const GpuDemand& demand, const NodeState& node,
                                const DraState& dra) {
  DraSplit split = Split(demand, node.supply, dra);
  for (DraShare& share : split.shares) {
    Count(node, dra, share);
    if (share.on_node != nullptr && share.on_node->type == "mig") return share.on_node->mig_profile;
  }
  return {};
}

}  // namespace topology
