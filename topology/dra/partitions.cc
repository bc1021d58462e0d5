#include "topology/dra/partitions.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "topology/dra/counters.h"

namespace topology {

std::vector<int> MemorySlices(const DraDevice& device, const std::string& counter_set) {
  constexpr absl::string_view kMarker = "memory-slice-";
  std::vector<int> out;
  for (const DraCounterConsumption& c : device.consumes_counters) {
    if (c.counter_set != counter_set) continue;
    for (const auto& [name, amount] : c.counters) {
      const size_t at = absl::string_view(name).rfind(kMarker);
      int index = 0;
      if (at != absl::string_view::npos &&
          absl::SimpleAtoi(absl::string_view(name).substr(at + kMarker.size()), &index)) {
        out.push_back(index);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<PartitionedGpu> PartitionedGpus(const DraState& dra) {
  std::vector<PartitionedGpu> out;
  if (!dra.device_set || dra.device_set->partitioned_nodes.empty()) return out;
  const std::vector<DraDevice>& devices = dra.devices();
  // Who holds each device: the first allocated claim (in namespace/name order) naming it.
  absl::flat_hash_map<const DraDevice*, const DraClaim*> holder;
  for (const DraClaim* c : dra.claims.Sorted()) {
    if (!c->allocated) continue;
    for (const DraAllocationResult& r : c->results) {
      if (const DraDevice* d = dra.Find(r)) holder.try_emplace(d, c);
    }
  }
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, PartitionedGpu> gpus;
  for (const auto& [node, partitions] : dra.device_set->partitioned_nodes) {
    const std::vector<uint32_t> blocked_list = DraBlockedDevices(dra, node);
    const std::set<uint32_t> blocked(blocked_list.begin(), blocked_list.end());
    for (uint32_t k : partitions.devices) {
      const DraDevice& d = devices[k];
      for (const DraCounterConsumption& c : d.consumes_counters) {
        PartitionedGpu& gpu = gpus[{d.node, d.driver, d.pool, c.counter_set}];
        if (gpu.counter_set.empty()) gpu = {d.node, d.driver, d.pool, c.counter_set, {}, {}, {}};
        if (dra.Held(k)) {
          auto h = holder.find(&d);
          gpu.held.push_back({&d, h == holder.end() ? nullptr : h->second});
        } else if (blocked.contains(k)) {
          gpu.blocked.push_back(&d);
        } else {
          gpu.can_cut.push_back(&d);
        }
      }
    }
  }
  auto by_name = [](const DraDevice* a, const DraDevice* b) { return a->name < b->name; };
  for (auto& [key, gpu] : gpus) {
    std::sort(gpu.held.begin(), gpu.held.end(),
              [&](const HeldPlacement& a, const HeldPlacement& b) {
                return by_name(a.device, b.device);
              });
    std::sort(gpu.can_cut.begin(), gpu.can_cut.end(), by_name);
    std::sort(gpu.blocked.begin(), gpu.blocked.end(), by_name);
    out.push_back(std::move(gpu));
  }
  return out;
}

}  // namespace topology
