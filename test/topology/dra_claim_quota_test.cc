// What a DRA claim counts toward its tenant's quota before it is allocated: per kind of device
// (whole GPUs, MIG instances and their slices, declared memory), selectors narrowing the count,
// alternatives, and the worst cases (allocationMode All, a selector outside the evaluated CEL,
// a class that does not exist).
#include "topology/dra_claim_quota.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/dra_devices.h"
#include "topology/dra.h"

namespace topology {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;

constexpr char kQuotaGpuClass[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";
constexpr char kQuotaMigClass[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";
constexpr char kQuotaAnyClass[] = "device.driver == 'gpu.nvidia.com'";
constexpr char kOnly1g[] = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'";

DraDevice WithMemory(DraDevice d, int64_t mib) {
  d.memory_mib = mib;
  return d;
}

// node-a: two 80 GiB GPUs; node-b: one GPU cut into 1g.10gb x2 and 3g.40gb; node-c: a 40 GiB GPU.
DraState QuotaCountState() {
  return MakeDraState(
      {NodeSlice("node-a", {WithMemory(NvidiaDevice("node-a", "gpu-0"), 81920),
                            WithMemory(NvidiaDevice("node-a", "gpu-1"), 81920)}),
       NodeSlice("node-b", {WithMemory(NvidiaDevice("node-b", "mig-0", "mig", "1g.10gb"), 9984),
                            WithMemory(NvidiaDevice("node-b", "mig-1", "mig", "1g.10gb"), 9984),
                            WithMemory(NvidiaDevice("node-b", "mig-2", "mig", "3g.40gb"), 40192)}),
       NodeSlice("node-c", {WithMemory(NvidiaDevice("node-c", "gpu-0"), 40960)})},
      {},
      {{"gpu.nvidia.com", {kQuotaGpuClass}, ""},
       {"mig.nvidia.com", {kQuotaMigClass}, ""},
       {"any.nvidia.com", {kQuotaAnyClass}, ""}});
}

DraRequest QuotaRequest(const std::string& name, const std::string& device_class, int64_t count,
                        std::vector<std::string> selectors = {}) {
  DraRequest r;
  r.name = name;
  r.device_class = device_class;
  r.count = count;
  r.selectors = std::move(selectors);
  return r;
}

DraClaim QuotaClaim(std::vector<DraRequest> requests) {
  DraClaim c;
  c.namespace_name = "acme";
  c.name = "c";
  c.requests = std::move(requests);
  return c;
}

QuotaUsage Usage(int64_t gpus, std::map<std::string, int64_t, std::less<>> mig, int64_t slices,
                 int64_t memory) {
  QuotaUsage u;
  u.gpus = gpus;
  u.mig_instances = std::move(mig);
  u.mig_compute_slices = slices;
  u.gpu_memory_mib = memory;
  return u;
}

struct CountCase {
  std::string name;
  std::vector<DraRequest> requests;
  QuotaUsage want;
  size_t worst_cases = 0;
};

TEST(DraClaimQuotaTest, CountsWhatEachRequestCanBeAllocatedAtMost) {
  DraRequest all_mig = QuotaRequest("all", "mig.nvidia.com", 1);
  all_mig.all = true;
  DraRequest big = QuotaRequest("gpu/big", "gpu.nvidia.com", 1);
  DraRequest small = QuotaRequest("gpu/small", "mig.nvidia.com", 2, {kOnly1g});
  big.alternative = small.alternative = true;
  const std::vector<CountCase> cases = {
      {"two whole GPUs: count times the largest memory",
       {QuotaRequest("g", "gpu.nvidia.com", 2)},
       Usage(2, {}, 0, 2 * 81920)},
      {"one MIG device of any profile",
       {QuotaRequest("m", "mig.nvidia.com", 1)},
       Usage(0, {{"1g.10gb", 1}, {"3g.40gb", 1}}, 3, 40192)},
      {"a selector narrows it to 1g.10gb",
       {QuotaRequest("m", "mig.nvidia.com", 2, {kOnly1g})},
       Usage(0, {{"1g.10gb", 2}}, 2, 2 * 9984)},
      {"a class matching both kinds counts each item's most",
       {QuotaRequest("x", "any.nvidia.com", 1)},
       Usage(1, {{"1g.10gb", 1}, {"3g.40gb", 1}}, 3, 81920)},
      {"requests add up",
       {QuotaRequest("g", "gpu.nvidia.com", 1), QuotaRequest("m", "mig.nvidia.com", 1, {kOnly1g})},
       Usage(1, {{"1g.10gb", 1}}, 1, 81920 + 9984)},
      {"firstAvailable: the largest alternative per item",
       {big, small},
       Usage(1, {{"1g.10gb", 2}}, 2, 81920)},
      {"no device matches: nothing",
       {QuotaRequest("m", "mig.nvidia.com", 1,
                     {"device.attributes['gpu.nvidia.com'].profile == '7g.80gb'"})},
       QuotaUsage{}},
      {"allocationMode All: the node with the most",
       {all_mig},
       Usage(0, {{"1g.10gb", 2}, {"3g.40gb", 1}}, 5, 2 * 9984 + 40192),
       1},
      {"a selector outside the evaluated CEL: every device it leaves undecided",
       {QuotaRequest("g", "gpu.nvidia.com", 1,
                     {"device.attributes['gpu.nvidia.com'].type."
                      "matches('.*')"})},
       Usage(1, {}, 0, 81920),
       1},
      {"a class that does not exist: every device",
       {QuotaRequest("g", "missing.nvidia.com", 1)},
       Usage(1, {{"1g.10gb", 1}, {"3g.40gb", 1}}, 3, 81920),
       1},
  };
  const DraState dra = QuotaCountState();
  for (const CountCase& c : cases) {
    SCOPED_TRACE(c.name);
    ClaimQuotaCount got = CountClaimQuota(QuotaClaim(c.requests), dra);
    EXPECT_EQ(got.usage, c.want);
    EXPECT_EQ(got.worst_case.size(), c.worst_cases);
  }
}

TEST(DraClaimQuotaTest, WorstCaseLinesSayWhy) {
  DraRequest all = QuotaRequest("all", "gpu.nvidia.com", 1);
  all.all = true;
  ClaimQuotaCount got = CountClaimQuota(
      QuotaClaim({all, QuotaRequest("odd", "missing.nvidia.com", 1),
                  QuotaRequest("cel", "gpu.nvidia.com", 1, {"device.driver.matches('x')"})}),
      QuotaCountState());
  ASSERT_EQ(got.worst_case.size(), 3u);
  EXPECT_EQ(got.worst_case[0],
            "request all: allocationMode All, counted as every matching device of the node with "
            "the most");
  EXPECT_EQ(got.worst_case[1],
            "request odd: device class missing.nvidia.com not found, every device counted as "
            "matching");
  EXPECT_NE(got.worst_case[2].find("request cel: selector not evaluated ("), std::string::npos)
      << got.worst_case[2];
  // All on node-a: both GPUs.
  EXPECT_EQ(got.usage.gpus, 2 + 1 + 1);
}

TEST(DraClaimQuotaTest, AllocatedMemoryComesFromTheHeldDevices) {
  DraClaim held = QuotaClaim({QuotaRequest("g", "gpu.nvidia.com", 1)});
  held.allocated = true;
  held.results = {{"g", "gpu.nvidia.com", "node-c", "gpu-0"},
                  {"g", "gpu.nvidia.com", "node-gone", "gpu-9"}};
  EXPECT_EQ(AllocatedClaimMemoryMib(held, QuotaCountState()), 40960);
}

}  // namespace
}  // namespace topology
