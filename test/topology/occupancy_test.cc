// ApplyPod: adding and removing a pod's demand restores the occupancy exactly.
#include "topology/occupancy.h"

#include <optional>

#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"

namespace topology {
namespace {

using namespace testing_fleet;  // NOLINT: the fixture's small vocabulary
using OccupancyTest = FleetTest;

TEST_F(OccupancyTest, ApplyPodAddsAndRemovesExactly) {
  const NodeSupply& ts = Supply("ts");
  const GpuDemand shared = Demand({{"nvidia.com/gpu.shared", 1}}, 4096);
  NodeOccupancy o;
  ApplyPod(o, shared, ts, 1, +1);
  ApplyPod(o, shared, ts, std::nullopt, +1);
  EXPECT_EQ(o.Used("nvidia.com/gpu.shared"), 2);
  EXPECT_EQ(o.shared_memory_by_gpu.at(1), 4096);
  EXPECT_EQ(o.shared_memory_unassigned_mib, 4096);
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 8192);
  EXPECT_EQ(o.pods, 2);
  ApplyPod(o, shared, ts, 1, -1);
  ApplyPod(o, shared, ts, std::nullopt, -1);
  EXPECT_TRUE(o.used.empty());
  EXPECT_TRUE(o.shared_memory_by_gpu.empty());
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 0);
  EXPECT_EQ(o.pods, 0);

  // MIG memory is the instance's own: it never enters the shared heap.
  ApplyPod(o, Demand({{"nvidia.com/mig-3g.40gb", 1}}, 8192), Supply("mig"), std::nullopt, +1);
  EXPECT_EQ(o.SharedMemoryUsedMiB(), 0);
  EXPECT_EQ(o.Used("nvidia.com/mig-3g.40gb"), 1);
}

}  // namespace
}  // namespace topology
