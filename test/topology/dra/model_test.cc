// The DRA model: which published devices are current (newest pool generation only) and which
// devices a claim's allocation results name, including results whose device is gone.
#include "topology/dra/model.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

DraDevice DraTestDevice(const std::string& driver, const std::string& pool,
                        const std::string& name) {
  DraDevice d;
  d.driver = driver;
  d.pool = pool;
  d.name = name;
  d.node = pool;
  d.type = "gpu";
  return d;
}

DraSlice DraTestSlice(const std::string& driver, const std::string& pool, int64_t generation,
                      const std::vector<std::string>& device_names) {
  DraSlice s;
  s.name = pool + "-" + driver + "-g" + std::to_string(generation);
  s.driver = driver;
  s.pool = pool;
  s.node = pool;
  s.generation = generation;
  for (const std::string& name : device_names)
    s.devices.push_back(DraTestDevice(driver, pool, name));
  return s;
}

std::vector<std::string> DraTestIds(const std::vector<DraDevice>& devices) {
  std::vector<std::string> ids;
  for (const DraDevice& d : devices) ids.push_back(d.Id().ToString());
  return ids;
}

constexpr char kGpuDriver[] = "gpu.nvidia.com";
constexpr char kOtherDriver[] = "other.example.com";

TEST(DraDeviceIdTest, IsDriverPoolDevice) {
  EXPECT_EQ((DraDeviceId{"gpu.nvidia.com", "node-a", "gpu-0"}).ToString(),
            "gpu.nvidia.com/node-a/gpu-0");
  DraAllocationResult r{"mig", "gpu.nvidia.com", "node-a", "gpu-0-mig-1g10gb-19-0"};
  EXPECT_EQ(r.Id(), DraTestDevice("gpu.nvidia.com", "node-a", "gpu-0-mig-1g10gb-19-0").Id());
}

TEST(DraCurrentDevicesTest, KeepsOnlyTheNewestGenerationPerPool) {
  struct Row {
    std::string name;
    std::vector<DraSlice> slices;
    std::vector<std::string> want;  // device IDs, in order
  };
  const std::vector<Row> rows = {
      {"no slices", {}, {}},
      {"one slice",
       {DraTestSlice(kGpuDriver, "a", 1, {"gpu-0", "gpu-1"})},
       {"gpu.nvidia.com/a/gpu-0", "gpu.nvidia.com/a/gpu-1"}},
      {"older generation listed first",
       {DraTestSlice(kGpuDriver, "a", 1, {"gpu-0"}), DraTestSlice(kGpuDriver, "a", 2, {"gpu-1"})},
       {"gpu.nvidia.com/a/gpu-1"}},
      {"older generation listed last",
       {DraTestSlice(kGpuDriver, "a", 3, {"gpu-1"}), DraTestSlice(kGpuDriver, "a", 2, {"gpu-0"})},
       {"gpu.nvidia.com/a/gpu-1"}},
      {"several slices of the current generation are all kept, in order",
       {DraTestSlice(kGpuDriver, "a", 2, {"gpu-1"}), DraTestSlice(kGpuDriver, "a", 1, {"old"}),
        DraTestSlice(kGpuDriver, "a", 2, {"gpu-0"})},
       {"gpu.nvidia.com/a/gpu-1", "gpu.nvidia.com/a/gpu-0"}},
      {"pools are independent",
       {DraTestSlice(kGpuDriver, "a", 1, {"gpu-0"}), DraTestSlice(kGpuDriver, "b", 7, {"gpu-0"}),
        DraTestSlice(kGpuDriver, "b", 6, {"gpu-9"})},
       {"gpu.nvidia.com/a/gpu-0", "gpu.nvidia.com/b/gpu-0"}},
      {"the same pool name under another driver is another pool",
       {DraTestSlice(kGpuDriver, "a", 5, {"gpu-0"}), DraTestSlice(kOtherDriver, "a", 1, {"x"})},
       {"gpu.nvidia.com/a/gpu-0", "other.example.com/a/x"}},
      {"a slice without devices (counters only) adds none",
       {DraTestSlice(kGpuDriver, "a", 1, {}), DraTestSlice(kGpuDriver, "a", 1, {"gpu-0"})},
       {"gpu.nvidia.com/a/gpu-0"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(DraTestIds(CurrentDevices(row.slices)), row.want);
  }
}

TEST(DraCurrentDevicesTest, CopiesDevicesWhole) {
  DraSlice slice = DraTestSlice(kGpuDriver, "node-a", 1, {});
  DraDevice mig = DraTestDevice(kGpuDriver, "node-a", "gpu-0-mig-1g10gb-19-0");
  mig.type = "mig";
  mig.uuid = "MIG-1";
  mig.parent_uuid = "GPU-0";
  mig.profile = "1g.10gb";
  mig.product = "NVIDIA H100 80GB HBM3";
  mig.memory_mib = 9984;
  slice.devices.push_back(mig);
  std::vector<DraDevice> current = CurrentDevices({slice});
  ASSERT_EQ(current.size(), 1u);
  EXPECT_EQ(current[0], mig);
}

DraClaim DraTestClaim(std::vector<DraAllocationResult> results) {
  DraClaim c;
  c.namespace_name = "team-a";
  c.name = "claim";
  c.allocated = true;
  c.allocated_node = "node-a";
  c.results = std::move(results);
  return c;
}

TEST(DraAllocatedDevicesTest, ResolvesResultsAndReportsTheMissing) {
  const std::vector<DraDevice> current = {
      DraTestDevice(kGpuDriver, "node-a", "gpu-0"),
      DraTestDevice(kGpuDriver, "node-a", "gpu-1"),
      DraTestDevice(kOtherDriver, "node-a", "gpu-2"),
      DraTestDevice(kGpuDriver, "node-b", "gpu-3"),
  };
  const DraAllocationResult gpu1{"a", kGpuDriver, "node-a", "gpu-1"};
  const DraAllocationResult gpu0{"b/sub", kGpuDriver, "node-a", "gpu-0"};
  const DraAllocationResult gone{"c", kGpuDriver, "node-a", "gpu-7"};
  const DraAllocationResult wrong_driver{"d", kGpuDriver, "node-a", "gpu-2"};
  const DraAllocationResult wrong_pool{"e", kGpuDriver, "node-a", "gpu-3"};

  struct Row {
    std::string name;
    DraClaim claim;
    std::vector<const DraDevice*> devices;
    std::vector<DraAllocationResult> missing;
  };
  DraClaim unallocated = DraTestClaim({gpu0});
  unallocated.allocated = false;
  const std::vector<Row> rows = {
      {"all published, in result order",
       DraTestClaim({gpu1, gpu0}),
       {&current[1], &current[0]},
       {}},
      {"a device that is no longer published", DraTestClaim({gpu0, gone}), {&current[0]}, {gone}},
      {"the device ID is the whole triple",
       DraTestClaim({wrong_driver, wrong_pool, gpu1}),
       {&current[1]},
       {wrong_driver, wrong_pool}},
      {"no results", DraTestClaim({}), {}, {}},
      {"an unallocated claim holds nothing", unallocated, {}, {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    DraAllocatedDevices held = AllocatedDevices(row.claim, current);
    EXPECT_EQ(held.devices, row.devices);
    EXPECT_EQ(held.missing, row.missing);
  }
}

TEST(DraAllocatedDevicesTest, AnOldGenerationDeviceIsMissing) {
  // The driver republished node-a without gpu-1 (generation 2); a claim still names gpu-1.
  std::vector<DraSlice> slices = {DraTestSlice(kGpuDriver, "node-a", 1, {"gpu-0", "gpu-1"}),
                                  DraTestSlice(kGpuDriver, "node-a", 2, {"gpu-0"})};
  std::vector<DraDevice> current = CurrentDevices(slices);
  DraClaim claim =
      DraTestClaim({{"a", kGpuDriver, "node-a", "gpu-0"}, {"b", kGpuDriver, "node-a", "gpu-1"}});
  DraAllocatedDevices held = AllocatedDevices(claim, current);
  ASSERT_EQ(held.devices.size(), 1u);
  EXPECT_EQ(held.devices[0]->name, "gpu-0");
  ASSERT_EQ(held.missing.size(), 1u);
  EXPECT_EQ(held.missing[0].device, "gpu-1");
}

}  // namespace
// Allocated claims' devices in quota units per namespace: whole GPUs, MIG instances by profile
// and their compute slices; unallocated claims and unpublished devices count nothing.
TEST(DraStateTest, UsageCountsWhatAllocatedClaimsHoldPerNamespace) {
  DraSlice slice;
  slice.driver = "gpu.nvidia.com";
  slice.pool = "node-a";
  slice.generation = 1;
  auto device = [&](const char* name, const char* type, const char* profile) {
    DraDevice d;
    d.driver = slice.driver;
    d.pool = slice.pool;
    d.name = name;
    d.type = type;
    d.profile = profile;
    return d;
  };
  slice.devices = {device("gpu-1", "gpu", ""), device("mig-a", "mig", "3g.40gb"),
                   device("mig-b", "mig", "1g.10gb")};
  int made = 0;
  auto claim = [&](const char* ns, bool allocated, std::vector<const char*> devices) {
    DraClaim c;
    c.namespace_name = ns;
    c.name = "claim-" + std::to_string(made++);
    c.allocated = allocated;
    for (const char* d : devices) c.results.push_back({"r", "gpu.nvidia.com", "node-a", d});
    return c;
  };
  DraState state = MakeDraState({slice},
                                {claim("a", true, {"gpu-1", "mig-a"}), claim("a", true, {"mig-b"}),
                                 claim("b", false, {"gpu-1"}), claim("c", true, {"gone"})},
                                {});
  ASSERT_EQ(state.usage.size(), 1u);
  ASSERT_NE(state.usage.Find("a"), nullptr);
  const QuotaUsage& a = *state.usage.Find("a");
  EXPECT_EQ(a.gpus, 1);
  EXPECT_EQ(a.mig_instances,
            (std::map<std::string, int64_t, std::less<>>{{"1g.10gb", 1}, {"3g.40gb", 1}}));
  EXPECT_EQ(a.mig_compute_slices, 4);
  EXPECT_EQ(a.gpu_pods, 0);
  EXPECT_EQ(a.gpu_memory_mib, 0);
}

// Per NVIDIA device type, the largest memory a device publishes: what a cap on each device's
// memory says about the devices now. A device without memory leaves its type unbounded; other
// drivers' devices are not counted.
TEST(DraDeviceSetTest, KnowsTheLargestMemoryOfEachNvidiaDeviceType) {
  auto with_memory = [](DraDevice d, const char* memory) {
    if (*memory) d.capacity[std::string(kNvidiaMemoryCapacity)] = *Quantity::Parse(memory);
    return d;
  };
  DraSlice nvidia = DraTestSlice(kGpuDriver, "node-a", 1, {});
  DraDevice gpu = DraTestDevice(kGpuDriver, "node-a", "gpu-0");
  DraDevice mig = DraTestDevice(kGpuDriver, "node-a", "mig-0");
  mig.type = "mig";
  DraDevice vfio = DraTestDevice(kGpuDriver, "node-a", "vfio-0");
  vfio.type = "vfio";
  nvidia.devices = {with_memory(gpu, "80Gi"), with_memory(gpu, "40Gi"), with_memory(mig, "10Gi"),
                    with_memory(mig, ""), with_memory(vfio, "141Gi")};
  nvidia.devices[1].name = "gpu-1";
  nvidia.devices[3].name = "mig-1";
  DraSlice other = DraTestSlice(kOtherDriver, "node-a", 1, {"big"});
  other.devices[0] = with_memory(other.devices[0], "1Ti");
  const std::shared_ptr<const DraDeviceSet> set = MakeDraDeviceSet({nvidia, other}, {});
  const auto& max = set->nvidia_max_memory_milli;
  ASSERT_EQ(max.size(), 3u);
  EXPECT_EQ(max.at("gpu"), Quantity::Parse("80Gi")->milli());
  EXPECT_EQ(max.at("mig"), std::nullopt) << "one MIG device publishes no memory";
  EXPECT_EQ(max.at("vfio"), Quantity::Parse("141Gi")->milli());
}

// The claims of a namespace not allocated yet are indexed apart, and follow every Put and Erase:
// a quota that does not count allocated claims' memory reads only those.
TEST(DraClaimSetTest, KeepsThePendingClaimsOfEachNamespaceApart) {
  auto claim = [](const char* ns, const char* name, bool allocated) {
    DraClaim c;
    c.namespace_name = ns;
    c.name = name;
    c.allocated = allocated;
    return std::make_shared<const DraClaim>(std::move(c));
  };
  auto pending_in = [](const DraClaimSet& set, const char* ns) {
    std::set<std::string> names;
    set.ForEachPendingIn(ns, [&](const DraClaim& c) { names.insert(c.name); });
    return names;
  };
  DraClaimSet set;
  set.Put(claim("a", "one", false));
  set.Put(claim("a", "two", false));
  set.Put(claim("a", "three", true));
  set.Put(claim("b", "four", false));
  EXPECT_EQ(pending_in(set, "a"), (std::set<std::string>{"one", "two"}));
  EXPECT_EQ(pending_in(set, "b"), (std::set<std::string>{"four"}));
  const DraClaimSet before = set;
  set.Put(claim("a", "one", true));  // allocated now
  set.Erase("a", "two");
  set.Put(claim("a", "three", false));  // its allocation gone
  set.Erase("b", "four");
  EXPECT_EQ(pending_in(set, "a"), (std::set<std::string>{"three"}));
  EXPECT_TRUE(pending_in(set, "b").empty());
  EXPECT_TRUE(pending_in(set, "c").empty());
  EXPECT_EQ(set.size(), 2u);
  // An earlier version is a value of its own.
  EXPECT_EQ(pending_in(before, "a"), (std::set<std::string>{"one", "two"}));
  EXPECT_EQ(pending_in(before, "b"), (std::set<std::string>{"four"}));
}

}  // namespace topology
