#include "topology/dra_counters.h"

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

}  // namespace topology
