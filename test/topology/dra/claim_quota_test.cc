// What a DRA claim counts toward its tenant's quota before it is allocated: per kind of device
// (whole GPUs, MIG instances and their slices, declared memory), selectors narrowing the count,
// alternatives, and the worst cases (allocationMode All, a selector outside the evaluated CEL,
// a class that does not exist).
#include "topology/dra/claim_quota.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "test/topology/dra/devices.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

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

// Consumable capacity: a claim on a multi-allocatable GPU counts a shared replica and the
// memory its share would consume, not a whole GPU. node-d: a shared GPU of 80Gi (default 10Gi,
// steps of 1Gi) and a plain one of 40Gi.
TEST(DraClaimQuotaTest, ASharedGpuCountsAReplicaAndTheMemoryItConsumes) {
  constexpr int64_t kGi = int64_t{1} << 30;
  DraCapacityPolicy policy = testing_dra::RangePolicy(10 * kGi, kGi);
  DraDevice plain = WithMemory(NvidiaDevice("node-d", "gpu-1"), 40960);
  plain.published_capacity = {{"memory", Quantity::FromUnits(40 * kGi), std::nullopt}};
  const DraState dra = MakeDraState(
      {NodeSlice(
          "node-d",
          {WithMemory(testing_dra::SharedGpu("node-d", "gpu-0", 80 * kGi, policy), 81920), plain})},
      {},
      {{"gpu.nvidia.com", {kQuotaGpuClass}, ""},
       {"shared.nvidia.com", {kQuotaGpuClass, "device.allowMultipleAllocations"}, ""}});
  auto usage = [](int64_t gpus, int64_t replicas, int64_t memory_mib) {
    QuotaUsage u;
    u.gpus = gpus;
    u.shared_replicas = replicas;
    u.gpu_memory_mib = memory_mib;
    return u;
  };
  struct Row {
    const char* name;
    const char* device_class;
    int64_t count;
    DraCapacity requests;
    QuotaUsage want;
  };
  const std::vector<Row> rows = {
      {"no capacity asked: the default", "shared.nvidia.com", 1, {}, usage(0, 1, 10240)},
      {"an ask rounded up to the step",
       "shared.nvidia.com",
       1,
       {{"memory", Quantity::FromUnits(24 * kGi + 1)}},
       usage(0, 1, 25600)},
      {"two shares",
       "shared.nvidia.com",
       2,
       {{"memory", Quantity::FromUnits(20 * kGi)}},
       usage(0, 2, 40960)},
      {"more than the GPU has counts nothing",
       "shared.nvidia.com",
       1,
       {{"memory", Quantity::FromUnits(90 * kGi)}},
       usage(0, 0, 0)},
      // Either GPU may be given: each item at its most.
      {"a shared or a plain GPU",
       "gpu.nvidia.com",
       1,
       {{"memory", Quantity::FromUnits(30 * kGi)}},
       usage(1, 1, 40960)},
      {"only the shared GPU has that much",
       "gpu.nvidia.com",
       1,
       {{"memory", Quantity::FromUnits(50 * kGi)}},
       usage(0, 1, 51200)},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    DraRequest request = QuotaRequest("r", row.device_class, row.count);
    request.capacity_requests = row.requests;
    const ClaimQuotaCount got = CountClaimQuota(QuotaClaim({request}), dra);
    EXPECT_EQ(got.usage, row.want);
    EXPECT_TRUE(got.worst_case.empty());
  }
}

// Allocated, as a v1.36 apiserver serves them: research and acme each hold a 10Gi share of
// node-c's multi-allocatable GPU. Each namespace holds one shared replica and 10Gi, no GPU.
TEST(DraClaimQuotaTest, AllocatedSharesCountAReplicaAndTheirConsumedMemory) {
  absl::StatusOr<wire::DraObjects> slices = wire::ParseDraList(testing_support::JsonOrFail(
      testing_support::Testdata("dra/consumable-list-resourceslices.v1.json")));
  absl::StatusOr<wire::DraObjects> claims = wire::ParseDraList(testing_support::JsonOrFail(
      testing_support::Testdata("dra/consumable-list-resourceclaims.v1.json")));
  ASSERT_TRUE(slices.ok() && claims.ok());
  const DraState dra = MakeDraState(slices->slices, claims->claims, {});
  for (const char* ns : {"research", "acme"}) {
    SCOPED_TRACE(ns);
    const QuotaUsage* held = dra.usage.Find(ns);
    ASSERT_NE(held, nullptr);
    QuotaUsage want;
    want.shared_replicas = 1;
    EXPECT_EQ(*held, want);
  }
  for (const DraClaim& c : claims->claims) {
    EXPECT_EQ(AllocatedClaimMemoryMib(c, dra), 10240) << c.namespace_name;
  }
  // Held whole (no share ID), the same GPU counts as a GPU and all its memory.
  DraClaim whole = claims->claims[0];
  whole.results[0].share_id.clear();
  const DraState held_whole = MakeDraState(slices->slices, {whole}, {});
  EXPECT_EQ(held_whole.usage.Find("research")->gpus, 1);
  EXPECT_EQ(held_whole.usage.Find("research")->shared_replicas, 0);
  EXPECT_EQ(AllocatedClaimMemoryMib(whole, held_whole), 81559);
}

}  // namespace
}  // namespace topology
