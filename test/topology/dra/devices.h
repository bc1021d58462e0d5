// Devices and slices as NVIDIA's DRA driver publishes them (type and MIG profile attributes),
// for the topology tests of DRA.
#ifndef GPU_TENANCY_TEST_TOPOLOGY_DRA_DEVICES_H_
#define GPU_TENANCY_TEST_TOPOLOGY_DRA_DEVICES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topology/dra/model.h"

namespace testing_dra {

// A device of driver gpu.nvidia.com in the pool named after its node.
inline topology::DraDevice NvidiaDevice(const std::string& node, const std::string& name,
                                        const std::string& type = "gpu",
                                        const std::string& profile = "") {
  topology::DraDevice d;
  d.driver = "gpu.nvidia.com";
  d.pool = node;
  d.node = node;
  d.name = name;
  d.type = type;
  d.profile = profile;
  d.attributes["gpu.nvidia.com/type"] = topology::DraAttribute::String(type);
  if (!profile.empty()) {
    d.attributes["gpu.nvidia.com/profile"] = topology::DraAttribute::String(profile);
  }
  return d;
}

// A multi-allocatable GPU (DRAConsumableCapacity) whose capacity `memory` holds `memory`
// units, consumed `policy`'s way (none: a request that asks no memory takes it all).
inline topology::DraDevice SharedGpu(const std::string& node, const std::string& name,
                                     int64_t memory,
                                     std::optional<topology::DraCapacityPolicy> policy = {}) {
  topology::DraDevice d = NvidiaDevice(node, name);
  d.allow_multiple_allocations = true;
  const topology::Quantity value = topology::Quantity::FromUnits(memory);
  d.capacity["gpu.nvidia.com/memory"] = value;
  d.published_capacity = {{"memory", value, std::move(policy)}};
  return d;
}

// A requestPolicy whose default is `default_units` and whose range starts there, in steps of
// `step_units` (0: no step).
inline topology::DraCapacityPolicy RangePolicy(int64_t default_units, int64_t step_units = 0) {
  topology::DraCapacityPolicy p;
  p.default_amount = topology::Quantity::FromUnits(default_units);
  p.min = p.default_amount;
  if (step_units > 0) p.step = topology::Quantity::FromUnits(step_units);
  return p;
}

// An allocated claim of `ns` holding one share of `device` on `node` that consumes `memory`.
inline topology::DraClaim ShareClaim(const std::string& ns, const std::string& name,
                                     const std::string& node, const std::string& device,
                                     int64_t memory) {
  topology::DraClaim c;
  c.namespace_name = ns;
  c.name = name;
  c.uid = ns + "-" + name;
  c.allocated = true;
  c.allocated_node = node;
  topology::DraAllocationResult r{"gpu", "gpu.nvidia.com", node, device};
  r.share_id = c.uid + "-share";
  r.consumed_capacity = {{"memory", topology::Quantity::FromUnits(memory)}};
  c.results = {r};
  return c;
}

// The node's one slice (generation 1) with `devices`.
inline topology::DraSlice NodeSlice(const std::string& node,
                                    std::vector<topology::DraDevice> devices) {
  topology::DraSlice s;
  s.name = node + "-gpu.nvidia.com";
  s.driver = "gpu.nvidia.com";
  s.pool = node;
  s.node = node;
  s.generation = 1;
  s.devices = std::move(devices);
  return s;
}

}  // namespace testing_dra

#endif  // GPU_TENANCY_TEST_TOPOLOGY_DRA_DEVICES_H_
