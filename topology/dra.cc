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

const DraDevice* DraState::Find(const DraAllocationResult& result) const {
  auto it = device_index.find(result.Id().ToString());
  return it == device_index.end() ? nullptr : &devices[it->second];
}

DraState MakeDraState(const std::vector<DraSlice>& slices, std::vector<DraClaim> claims,
                      std::vector<DraDeviceClass> classes, std::vector<DraClaim> templates) {
  DraState state;
  state.devices = CurrentDevices(slices);
  state.claims = std::move(claims);
  state.templates = std::move(templates);
  state.classes = std::move(classes);
  for (size_t i = 0; i < state.devices.size(); ++i) {
    state.device_index.emplace(state.devices[i].Id().ToString(), i);
  }
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
  IndexDraExtendedResources(state);
  return state;
}

}  // namespace topology
