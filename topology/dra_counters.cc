#include "topology/dra_counters.h"

#include <memory>

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

void IndexDraPartitions(DraDeviceSet& set, const std::vector<DraSlice>& slices) {
  set.partitioned_nodes.clear();
  for (const DraDevice& d : set.devices) {
    if (!d.consumes_counters.empty()) set.partitioned_nodes.try_emplace(d.node);
  }
  if (set.partitioned_nodes.empty()) return;
  const DraCounterSets sets = CurrentCounterSets(slices);
  for (size_t k = 0; k < set.devices.size(); ++k) {
    const DraDevice& d = set.devices[k];
    auto node = set.partitioned_nodes.find(d.node);
    if (node == set.partitioned_nodes.end()) continue;
    node->second.devices.push_back(static_cast<uint32_t>(k));
    // The sets of the device's pool; a pool seen before adds nothing new.
    for (auto it = sets.lower_bound({d.driver, d.pool, ""});
         it != sets.end() && it->first.driver == d.driver && it->first.pool == d.pool; ++it) {
      node->second.sets.insert(*it);
    }
  }
}

namespace {

// The blocked devices of one node of set.partitioned_nodes, given its counts.
std::vector<uint32_t> Blocked(const DraDeviceSet& set, const DraDeviceSet::Partitions& partitions,
                              const DraNodeCounts& counts) {
  auto held = [&](uint32_t k) { return counts.results[set.slot_on_node[k]] > 0; };
  std::vector<const DraDevice*> taken;
  for (uint32_t k : partitions.devices) {
    if (held(k)) taken.push_back(&set.devices[k]);
  }
  const DraCounterSets left = CountersLeft(partitions.sets, taken);
  std::vector<uint32_t> out;
  for (uint32_t k : partitions.devices) {
    if (!held(k) && !CountersFit(set.devices[k], left)) out.push_back(k);
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
