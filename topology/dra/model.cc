#include "topology/dra/model.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "topology/dra/capacity.h"
#include "topology/dra/counters.h"
#include "topology/dra/extended_resources.h"

namespace topology {

std::string DraDeviceId::ToString() const { return absl::StrCat(driver, "/", pool, "/", device); }

std::vector<const DraSlice*> CurrentSlices(const std::vector<DraSlice>& slices) {
  // Two passes: the highest generation of each pool first, since an older slice may come
  // before the newer one in a list or watch.
  // Keys are views into `slices`, which outlive the map.
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, int64_t> newest;
  for (const DraSlice& slice : slices) {
    auto [it, inserted] = newest.try_emplace({slice.driver, slice.pool}, slice.generation);
    if (!inserted) it->second = std::max(it->second, slice.generation);
  }
  std::vector<const DraSlice*> out;
  for (const DraSlice& slice : slices) {
    if (slice.generation == newest.at({slice.driver, slice.pool})) out.push_back(&slice);
  }
  return out;
}

std::vector<DraDevice> CurrentDevices(const std::vector<DraSlice>& slices) {
  std::vector<DraDevice> out;
  for (const DraSlice* slice : CurrentSlices(slices)) {
    out.insert(out.end(), slice->devices.begin(), slice->devices.end());
  }
  return out;
}

DraAllocatedDevices AllocatedDevices(const DraClaim& claim, const std::vector<DraDevice>& current) {
  DraAllocatedDevices out;
  if (!claim.allocated) return out;
  for (const DraAllocationResult& result : claim.results) {
    auto it = std::find_if(current.begin(), current.end(), [&](const DraDevice& d) {
      return d.name == result.device && d.pool == result.pool && d.driver == result.driver;
    });
    if (it == current.end()) {
      out.missing.push_back(result);
    } else {
      out.devices.push_back(&*it);
    }
  }
  return out;
}

namespace dra_internal {

const DraDeviceSet& NoDevices() {
  static const DraDeviceSet* empty = new DraDeviceSet();
  return *empty;
}

}  // namespace dra_internal

const std::vector<DraDevice>& DraState::devices() const {
  return (device_set ? *device_set : dra_internal::NoDevices()).devices;
}
const std::vector<DraDeviceClass>& DraState::classes() const {
  return (device_set ? *device_set : dra_internal::NoDevices()).classes;
}
const absl::flat_hash_map<std::string, size_t>& DraState::extended_resources() const {
  return (device_set ? *device_set : dra_internal::NoDevices()).extended_resources;
}

ptrdiff_t DraState::IndexOf(const DraAllocationResult& result) const {
  if (!device_set) return -1;
  auto it = device_set->index.find(DraDeviceSet::Key{result.driver, result.pool, result.device});
  return it == device_set->index.end() ? -1 : static_cast<ptrdiff_t>(it->second);
}

const DraDevice* DraState::Find(const DraAllocationResult& result) const {
  const ptrdiff_t i = IndexOf(result);
  return i < 0 ? nullptr : &device_set->devices[i];
}

std::shared_ptr<const DraDeviceSet> MakeDraDeviceSet(const std::vector<DraSlice>& slices,
                                                     std::vector<DraDeviceClass> classes) {
  auto set = std::make_shared<DraDeviceSet>();
  set->devices = CurrentDevices(slices);
  set->classes = std::move(classes);
  for (size_t i = 0; i < set->devices.size(); ++i) {
    const DraDevice& d = set->devices[i];
    set->index.emplace(DraDeviceSet::Key{d.driver, d.pool, d.name}, i);
    set->publishes_shared_devices = set->publishes_shared_devices || d.allow_multiple_allocations;
    if (d.driver == kNvidiaDraDriver) {
      auto memory = d.capacity.find(kNvidiaMemoryCapacity);
      auto bound = set->nvidia_max_memory_milli.try_emplace(d.type, 0).first;
      if (memory == d.capacity.end()) {
        bound->second.reset();
      } else if (bound->second) {
        bound->second = std::max(*bound->second, memory->second.milli());
      }
    }
  }
  IndexDraPartitions(*set, slices);
  IndexDraExtendedResources(*set);
  return set;
}

namespace {

// An allocated claim's results resolved to the indices in devices() of what they name, a
// device once per result; results naming no current device are left out. Both counts read
// them, so each result is looked up once.
DraHeldResults HeldResults(const DraState& state, const DraClaim& claim) {
  DraHeldResults out;
  if (!claim.allocated) return out;
  for (const DraAllocationResult& r : claim.results) {
    const ptrdiff_t k = state.IndexOf(r);
    if (k >= 0) out.push_back({static_cast<uint32_t>(k), &r});
  }
  return out;
}

// Adds (sign +1) or removes (sign -1) what a claim's held devices count in quota units.
void CountClaimUsage(DraState& state, const std::string& namespace_name,
                     absl::Span<const DraHeldResult> held_results, int sign) {
  QuotaUsage held;
  for (const DraHeldResult& h : held_results) {
    const DraDevice& d = state.devices()[h.device];
    if (IsShare(d, *h.result) && (d.type == "gpu" || d.type == "mig")) {
      ++held.shared_replicas;
    } else if (d.type == "gpu") {
      ++held.gpus;
    } else if (d.type == "mig" && !d.profile.empty()) {
      ++held.mig_instances[d.profile];
      held.mig_compute_slices += MigComputeSlices(d.profile);
    }
  }
  if (held.empty()) return;
  bool now_empty = false;
  state.usage.Update(namespace_name, [&](QuotaUsage& u) {
    u.Add(held, sign);
    now_empty = u.empty();
  });
  if (now_empty) state.usage.Erase(namespace_name);
}

void CountDevices(DraState& state, const DraClaim& claim, int sign) {
  const DraHeldResults held = HeldResults(state, claim);
  if (held.empty()) return;
  CountClaimUsage(state, claim.namespace_name, held, sign);
  CountDraHeldDevices(state, held, sign);
}

void CountClaim(DraState& state, const DraClaim& claim, int sign) {
  CountDevices(state, claim, sign);
  CountDraExtendedClaimPods(state, claim, sign);
}

// What the counts read of a claim, in two parts: its devices and the pods it covers. Most
// claim events change one of them (allocation, then reservation), so the other is left alone.
bool SameDevices(const DraClaim& a, const DraClaim& b) {
  return a.allocated == b.allocated && a.results == b.results;
}
bool SamePods(const DraClaim& a, const DraClaim& b) {
  return a.allocated == b.allocated && a.extended_resource_claim == b.extended_resource_claim &&
         a.reserved_for == b.reserved_for;
}

}  // namespace

DraClaimSet DraClaimSet::Of(std::vector<DraClaim> claims) {
  DraClaimSet out;
  for (DraClaim& c : claims) out.Put(std::make_shared<const DraClaim>(std::move(c)));
  return out;
}

const DraClaim* DraClaimSet::Find(absl::string_view namespace_name, absl::string_view name) const {
  const InNamespace* claims = by_namespace_.Find(namespace_name);
  if (!claims) return nullptr;
  const std::shared_ptr<const DraClaim>* found = claims->Find(name);
  return found ? found->get() : nullptr;
}

std::shared_ptr<const DraClaim> DraClaimSet::PutIn(ByNamespace& index,
                                                   std::shared_ptr<const DraClaim> claim) {
  std::shared_ptr<const DraClaim> before;
  std::string name = claim->name;
  index.Update(claim->namespace_name, [&](InNamespace& claims) {
    if (const auto* found = claims.Find(name)) before = *found;
    claims.Put(std::move(name), std::move(claim));
  });
  return before;
}

std::shared_ptr<const DraClaim> DraClaimSet::EraseIn(ByNamespace& index,
                                                     absl::string_view namespace_name,
                                                     absl::string_view name) {
  const InNamespace* claims = index.Find(namespace_name);
  const std::shared_ptr<const DraClaim>* found = claims ? claims->Find(name) : nullptr;
  if (!found) return nullptr;
  std::shared_ptr<const DraClaim> before = *found;
  bool now_empty = false;
  index.Update(std::string(namespace_name), [&](InNamespace& in) {
    in.Erase(name);
    now_empty = in.empty();
  });
  if (now_empty) index.Erase(namespace_name);
  return before;
}

std::shared_ptr<const DraClaim> DraClaimSet::Put(std::shared_ptr<const DraClaim> claim) {
  if (claim->allocated) {
    EraseIn(pending_by_namespace_, claim->namespace_name, claim->name);
  } else {
    PutIn(pending_by_namespace_, claim);
  }
  std::shared_ptr<const DraClaim> before = PutIn(by_namespace_, std::move(claim));
  if (!before) ++size_;
  return before;
}

std::shared_ptr<const DraClaim> DraClaimSet::Erase(absl::string_view namespace_name,
                                                   absl::string_view name) {
  std::shared_ptr<const DraClaim> before = EraseIn(by_namespace_, namespace_name, name);
  if (!before) return nullptr;
  EraseIn(pending_by_namespace_, namespace_name, name);
  --size_;
  return before;
}

std::vector<const DraClaim*> DraClaimSet::Sorted() const {
  std::vector<const DraClaim*> out;
  out.reserve(size());
  ForEach([&](const DraClaim& c) { out.push_back(&c); });
  std::sort(out.begin(), out.end(), DraClaimKeyLess());
  return out;
}

std::vector<std::shared_ptr<const DraClaim>> DraClaimSet::SortedShared() const {
  std::vector<std::shared_ptr<const DraClaim>> out;
  out.reserve(size());
  by_namespace_.ForEach([&](const std::string&, const InNamespace& claims) {
    claims.ForEach(
        [&](const std::string&, const std::shared_ptr<const DraClaim>& c) { out.push_back(c); });
  });
  std::sort(out.begin(), out.end(), DraClaimKeyLess());
  return out;
}

const DraClassesOnNode* DraState::ClassesOnNode(absl::string_view node) const {
  const auto* found = node_counts.Find(node);
  return found && !(*found)->classes.empty() ? &(*found)->classes : nullptr;
}

int DraState::HeldBy(size_t index) const {
  const auto* found = node_counts.Find(devices()[index].node);
  return found ? (*found)->results[device_set->slot_on_node[index]] : 0;
}

const DraShares* DraState::SharesOf(size_t index) const {
  const auto* found = node_counts.Find(devices()[index].node);
  if (!found) return nullptr;
  auto it = (*found)->shares.find(device_set->slot_on_node[index]);
  return it == (*found)->shares.end() ? nullptr : &it->second;
}

std::shared_ptr<const DraClaim> DraState::PutClaim(std::shared_ptr<const DraClaim> claim) {
  const DraClaim& now = *claim;
  std::shared_ptr<const DraClaim> before = claims.Put(std::move(claim));
  if (!before) {
    CountClaim(*this, now, +1);
    return before;
  }
  if (!SameDevices(*before, now)) {
    CountDevices(*this, *before, -1);
    CountDevices(*this, now, +1);
  }
  if (!SamePods(*before, now)) {
    CountDraExtendedClaimPods(*this, *before, -1);
    CountDraExtendedClaimPods(*this, now, +1);
  }
  return before;
}

std::shared_ptr<const DraClaim> DraState::EraseClaim(absl::string_view namespace_name,
                                                     absl::string_view name) {
  std::shared_ptr<const DraClaim> before = claims.Erase(namespace_name, name);
  if (before) CountClaim(*this, *before, -1);
  return before;
}

DraState MakeDraState(std::shared_ptr<const DraDeviceSet> device_set, const DraClaimSet& claims,
                      DraClaimSet templates) {
  DraState state;
  state.device_set = std::move(device_set);
  if (state.device_set) state.node_counts = state.device_set->node_counts;
  state.templates = std::move(templates);
  state.claims = claims;
  claims.ForEach([&](const DraClaim& c) { CountClaim(state, c, +1); });
  return state;
}

DraState MakeDraState(const std::vector<DraSlice>& slices, std::vector<DraClaim> claims,
                      std::vector<DraDeviceClass> classes, std::vector<DraClaim> templates) {
  return MakeDraState(MakeDraDeviceSet(slices, std::move(classes)),
                      DraClaimSet::Of(std::move(claims)), DraClaimSet::Of(std::move(templates)));
}

}  // namespace topology
