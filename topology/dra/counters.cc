#include "topology/dra/counters.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace topology {

DraCounterSets CurrentCounterSets(const std::vector<DraSlice>& slices) {
  DraCounterSets out;
  for (const DraSlice* slice : CurrentSlices(slices)) {
    for (const DraCounterSet& set : slice->shared_counters) {
      out.insert_or_assign({slice->driver, slice->pool, set.name}, set.counters);
    }
  }
  return out;
}

DraCounterSets CountersLeft(DraCounterSets sets, absl::Span<const DraDevice* const> held) {
  for (const DraDevice* device : held) {
    for (const DraCounterConsumption& consumption : device->consumes_counters) {
      auto set = sets.find({device->driver, device->pool, consumption.counter_set});
      if (set == sets.end()) continue;
      for (const auto& [name, amount] : consumption.counters) {
        auto counter = set->second.find(name);
        if (counter == set->second.end()) continue;
        counter->second = Quantity::FromMilli(counter->second.milli() - amount.milli());
      }
    }
  }
  return sets;
}

bool CountersFit(const DraDevice& device, const DraCounterSets& left) {
  for (const DraCounterConsumption& consumption : device.consumes_counters) {
    auto set = left.find({device.driver, device.pool, consumption.counter_set});
    if (set == left.end()) return false;
    for (const auto& [name, amount] : consumption.counters) {
      auto counter = set->second.find(name);
      if (counter == set->second.end() || counter->second < amount) return false;
    }
  }
  return true;
}

namespace {

// Fills the compiled form of `p` from its devices and `sets`, the counter sets of its pools.
void CompilePartitions(const DraDeviceSet& set, const DraCounterSets& sets,
                       DraDeviceSet::Partitions& p) {
  std::map<std::pair<DraCounterSetKey, std::string>, uint32_t, std::less<>> slots;
  for (const auto& [key, counters] : sets) {
    for (const auto& [name, amount] : counters) {
      slots.emplace(std::make_pair(key, name), static_cast<uint32_t>(p.capacity.size()));
      p.capacity.push_back(amount.milli());
    }
  }
  for (uint32_t k : p.devices) {
    const DraDevice& d = set.devices[k];
    p.uses_begin.push_back(static_cast<uint32_t>(p.uses.size()));
    bool never = false;
    for (const DraCounterConsumption& consumption : d.consumes_counters) {
      DraCounterSetKey key{d.driver, d.pool, consumption.counter_set};
      for (const auto& [name, amount] : consumption.counters) {
        auto slot = slots.find(std::make_pair(key, name));
        if (slot == slots.end()) {
          never = true;
          continue;
        }
        p.uses.emplace_back(slot->second, amount.milli());
      }
      never = never || !sets.contains(key);
    }
    p.never_fits.push_back(never);
  }
  p.uses_begin.push_back(static_cast<uint32_t>(p.uses.size()));
}

}  // namespace

void IndexDraPartitions(DraDeviceSet& set, const std::vector<DraSlice>& slices) {
  set.partitioned_nodes.clear();
  for (const DraDevice& d : set.devices) {
    if (!d.consumes_counters.empty()) set.partitioned_nodes.try_emplace(d.node);
  }
  if (set.partitioned_nodes.empty()) return;
  const DraCounterSets sets = CurrentCounterSets(slices);
  absl::flat_hash_map<std::string, DraCounterSets> sets_of_node;
  for (size_t k = 0; k < set.devices.size(); ++k) {
    const DraDevice& d = set.devices[k];
    auto node = set.partitioned_nodes.find(d.node);
    if (node == set.partitioned_nodes.end()) continue;
    node->second.devices.push_back(static_cast<uint32_t>(k));
    // The sets of the device's pool; a pool seen before adds nothing new.
    DraCounterSets& of_node = sets_of_node[d.node];
    for (auto it = sets.lower_bound({d.driver, d.pool, ""});
         it != sets.end() && it->first.driver == d.driver && it->first.pool == d.pool; ++it) {
      of_node.insert(*it);
    }
  }
  for (auto& [node, partitions] : set.partitioned_nodes) {
    CompilePartitions(set, sets_of_node[node], partitions);
  }
}

namespace {

// The blocked devices of one node of set.partitioned_nodes, given its counts: CountersLeft and
// CountersFit over the compiled form.
std::vector<uint32_t> Blocked(const DraDeviceSet& set, const DraDeviceSet::Partitions& partitions,
                              const DraNodeCounts& counts) {
  auto held = [&](uint32_t k) { return counts.results[set.slot_on_node[k]] > 0; };
  absl::InlinedVector<int64_t, 96> left(partitions.capacity.begin(), partitions.capacity.end());
  const size_t n = partitions.devices.size();
  for (size_t i = 0; i < n; ++i) {
    if (!held(partitions.devices[i])) continue;
    for (uint32_t u = partitions.uses_begin[i]; u < partitions.uses_begin[i + 1]; ++u) {
      left[partitions.uses[u].first] -= partitions.uses[u].second;
    }
  }
  std::vector<uint32_t> out;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = partitions.devices[i];
    if (held(k)) continue;
    bool fits = !partitions.never_fits[i];
    for (uint32_t u = partitions.uses_begin[i]; fits && u < partitions.uses_begin[i + 1]; ++u) {
      fits = left[partitions.uses[u].first] >= partitions.uses[u].second;
    }
    if (!fits) out.push_back(k);
  }
  return out;
}

}  // namespace

std::vector<uint32_t> DraBlockedDevices(const DraState& state, const std::string& node) {
  if (!state.device_set) return {};
  auto partitions = state.device_set->partitioned_nodes.find(node);
  const std::shared_ptr<const DraNodeCounts>* counts = state.node_counts.Find(node);
  if (partitions == state.device_set->partitioned_nodes.end() || !counts) return {};
  return Blocked(*state.device_set, partitions->second, **counts);
}

void CountDraBlocked(const DraDeviceSet& set, const std::string& node, DraNodeCounts& counts) {
  auto partitions = set.partitioned_nodes.find(node);
  if (partitions == set.partitioned_nodes.end() || counts.classes.empty()) return;
  for (DraClassOnNode& on : counts.classes) on.blocked = 0;
  for (uint32_t k : Blocked(set, partitions->second, counts)) {
    for (uint32_t c : set.counted_for[k]) ++counts.classes[c].blocked;
  }
}

}  // namespace topology
