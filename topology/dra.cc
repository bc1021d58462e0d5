#include "topology/dra.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "topology/dra_extended.h"

namespace topology {

std::string DraDeviceId::ToString() const { return absl::StrCat(driver, "/", pool, "/", device); }

std::vector<DraDevice> CurrentDevices(const std::vector<DraSlice>& slices) {
  // Two passes: the highest generation of each pool first, since an older slice may come
  // before the newer one in a list or watch.
  // Keys are views into `slices`, which outlive the map.
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, int64_t> newest;
  for (const DraSlice& slice : slices) {
    auto [it, inserted] = newest.try_emplace({slice.driver, slice.pool}, slice.generation);
    if (!inserted) it->second = std::max(it->second, slice.generation);
  }
  std::vector<DraDevice> out;
  for (const DraSlice& slice : slices) {
    if (slice.generation != newest.at({slice.driver, slice.pool})) continue;
    out.insert(out.end(), slice.devices.begin(), slice.devices.end());
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
  auto it = device_set->index.find(result.Id().ToString());
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
    set->index.emplace(set->devices[i].Id().ToString(), i);
  }
  IndexDraExtendedResources(*set);
  return set;
}

DraState MakeDraState(std::shared_ptr<const DraDeviceSet> device_set, std::vector<DraClaim> claims,
                      std::vector<DraClaim> templates) {
  DraState state;
  state.device_set = std::move(device_set);
  state.claims = std::move(claims);
  state.templates = std::move(templates);
  for (const DraClaim& claim : state.claims) {
    if (!claim.allocated) continue;
    QuotaUsage held;
    for (const DraAllocationResult& r : claim.results) {
      const DraDevice* found = state.Find(r);
      if (!found) continue;
      const DraDevice& d = *found;
      if (d.type == "gpu") {
        ++held.gpus;
      } else if (d.type == "mig" && !d.profile.empty()) {
        ++held.mig_instances[d.profile];
        held.mig_compute_slices += MigComputeSlices(d.profile);
      }
    }
    if (!held.empty()) state.usage[claim.namespace_name].Add(held);
  }
  CountDraExtendedClaims(state);
  return state;
}

DraState MakeDraState(const std::vector<DraSlice>& slices, std::vector<DraClaim> claims,
                      std::vector<DraDeviceClass> classes, std::vector<DraClaim> templates) {
  return MakeDraState(MakeDraDeviceSet(slices, std::move(classes)), std::move(claims),
                      std::move(templates));
}

}  // namespace topology
