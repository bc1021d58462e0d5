// Devices and slices as NVIDIA's DRA driver publishes them (type and MIG profile attributes),
// for the topology tests of DRA.
#ifndef GPU_TENANCY_TEST_TOPOLOGY_DRA_DEVICES_H_
#define GPU_TENANCY_TEST_TOPOLOGY_DRA_DEVICES_H_

#include <string>
#include <utility>
#include <vector>

#include "topology/dra.h"

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
