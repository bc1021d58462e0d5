// topology/device_ids: every form the NVIDIA device plugin gives the kubelet parses into the
// device, its physical GPU where the ID says it, and its replica; a node's allocatable IDs group
// into its GPUs with their MIG instances, in order.
#include "topology/device_ids.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

TEST(ParseDeviceIdTest, EveryFormOfTheDevicePlugin) {
  struct Row {
    std::string id;
    DeviceId want;
  };
  const std::string gpu = "GPU-0f2b8e5c-1111-2222-3333-444455556666";
  const std::string mig = "MIG-5c1d3a2e-aaaa-bbbb-cccc-ddddeeeeffff";
  std::vector<Row> rows = {
      {gpu, {gpu, gpu, false, -1}},
      {gpu + "::3", {gpu, gpu, false, 3}},
      {mig, {mig, "", true, -1}},
      {mig + "::0", {mig, "", true, 0}},
      {"MIG-" + gpu + "/7/0", {"MIG-" + gpu + "/7/0", gpu, true, -1}},
      {"MIG-" + gpu + "/7/0::12", {"MIG-" + gpu + "/7/0", gpu, true, 12}},
      {"0", {"0", "0", false, -1}},
      {"3::1", {"3", "3", false, 1}},
      {"1:4", {"1:4", "1", true, -1}},
      {"1:4::2", {"1:4", "1", true, 2}},
      // Not a replica suffix: kept whole, a device of its own.
      {"vendor-x::abc", {"vendor-x::abc", "", false, -1}},
      {"", {"", "", false, -1}},
      {"odd:thing", {"odd:thing", "", false, -1}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.id);
    EXPECT_EQ(ParseDeviceId(row.id), row.want);
  }
}

TEST(GpusOfDevicesTest, GpusInOrderWithTheirMigInstances) {
  NodeGpus got = GpusOfDevices({"GPU-b::0", "GPU-b::1", "GPU-a::0", "MIG-GPU-c/1/0",
                                "MIG-GPU-c/2/0", "MIG-GPU-c/1/0::1", "MIG-x", "GPU-a::1", "0:1"});
  NodeGpus want{
      {{"GPU-b", {}}, {"GPU-a", {}}, {"GPU-c", {"MIG-GPU-c/1/0", "MIG-GPU-c/2/0"}}, {"0", {"0:1"}}},
      {"MIG-x"},
      {}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(GpusOfDevices({}), NodeGpus{});
}

}  // namespace
}  // namespace topology
