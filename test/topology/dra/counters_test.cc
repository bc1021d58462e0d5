// Partitionable devices: a GPU published as NVIDIA's DynamicMIG does (the whole GPU and every
// MIG placement the catalog allows, all drawing on one counter set) is free as the catalog's
// geometry says: once a placement is held, exactly the placements on other memory slices can
// still be cut, and the whole GPU cannot.
#include "topology/dra/counters.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "topology/catalog.h"

namespace topology {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;

constexpr char kSet[] = "gpu-0-counter-set";

struct CatalogPlacement {
  std::string device;  // "gpu-0-mig-3g.40gb-4"
  int start = 0, size = 0;
};

Quantity MiB(int64_t mib) { return Quantity::FromUnits(mib << 20); }

// One H100 80GB of the built-in catalog as a DynamicMIG slice: a counter set of its memory
// slices, SMs and memory, the whole GPU taking all of it, and a device per placement of each
// profile (the +me profiles, limited by a media engine the counters here do not model, are
// left out).
struct DynamicMigGpu {
  DraSlice slice;
  std::vector<CatalogPlacement> placements;
};

DynamicMigGpu H100() {
  const GpuModel* model = common::BuiltinCatalog().FindModel("H100-80GB");
  EXPECT_NE(model, nullptr);
  DynamicMigGpu gpu;
  DraCounters all;
  for (int i = 0; i < model->memory_slices; ++i) {
    all[absl::StrCat("memory-slice-", i)] = Quantity::FromUnits(1);
  }
  all["multiprocessors"] = Quantity::FromUnits(132);
  all["memory"] = MiB(*model->total_memory_mib);
  std::vector<DraDevice> devices = {NvidiaDevice("n1", "gpu-0")};
  devices[0].consumes_counters = {{kSet, all}};
  for (const MigProfile& profile : model->profiles) {
    if (profile.name.find('+') != std::string::npos) continue;
    for (int start : profile.placements) {
      CatalogPlacement p{absl::StrCat("gpu-0-mig-", profile.name, "-", start), start,
                         profile.memory_slices};
      DraDevice d = NvidiaDevice("n1", p.device, "mig", profile.name);
      DraCounters takes;
      for (int i = start; i < start + p.size; ++i) {
        takes[absl::StrCat("memory-slice-", i)] = Quantity::FromUnits(1);
      }
      takes["multiprocessors"] = Quantity::FromUnits(*profile.sm_count);
      takes["memory"] = MiB(*profile.memory_mib);
      d.consumes_counters = {{kSet, takes}};
      devices.push_back(std::move(d));
      gpu.placements.push_back(p);
    }
  }
  gpu.slice = NodeSlice("n1", std::move(devices));
  gpu.slice.shared_counters = {{kSet, all}};
  return gpu;
}

// The devices free with `held` held, by name.
std::set<std::string> FreeWith(const DraSlice& slice, const std::set<std::string>& held) {
  std::vector<const DraDevice*> taken;
  for (const DraDevice& d : slice.devices) {
    if (held.contains(d.name)) taken.push_back(&d);
  }
  const DraCounterSets left = CountersLeft(CurrentCounterSets({slice}), taken);
  std::set<std::string> out;
  for (const DraDevice& d : slice.devices) {
    if (!held.contains(d.name) && CountersFit(d, left)) out.insert(d.name);
  }
  return out;
}

// What the geometry allows, found without counters: the placements whose memory slices no
// held placement covers.
std::set<std::string> DisjointFrom(const DynamicMigGpu& gpu, const std::set<std::string>& held) {
  std::set<int> used;
  for (const CatalogPlacement& p : gpu.placements) {
    if (!held.contains(p.device)) continue;
    for (int i = p.start; i < p.start + p.size; ++i) used.insert(i);
  }
  std::set<std::string> out;
  for (const CatalogPlacement& p : gpu.placements) {
    bool clear = !held.contains(p.device);
    for (int i = p.start; i < p.start + p.size; ++i) clear = clear && !used.contains(i);
    if (clear) out.insert(p.device);
  }
  return out;
}

TEST(DraCountersTest, NothingHeldLeavesEveryPlacementAndTheWholeGpu) {
  const DynamicMigGpu gpu = H100();
  std::set<std::string> want = DisjointFrom(gpu, {});
  want.insert("gpu-0");
  EXPECT_EQ(FreeWith(gpu.slice, {}), want);
}

TEST(DraCountersTest, HeldPlacementsLeaveExactlyWhatTheCatalogCanStillCut) {
  const DynamicMigGpu gpu = H100();
  const std::vector<std::set<std::string>> cases = {
      {"gpu-0-mig-3g.40gb-0"},
      {"gpu-0-mig-3g.40gb-4"},
      {"gpu-0-mig-3g.40gb-0", "gpu-0-mig-1g.10gb-4"},
      {"gpu-0-mig-1g.10gb-0"},
      {"gpu-0-mig-2g.20gb-2", "gpu-0-mig-1g.20gb-6"},
      {"gpu-0-mig-7g.80gb-0"},
      {"gpu-0-mig-1g.10gb-0", "gpu-0-mig-1g.10gb-1", "gpu-0-mig-1g.10gb-2", "gpu-0-mig-1g.10gb-3",
       "gpu-0-mig-1g.10gb-4", "gpu-0-mig-1g.10gb-5"},
  };
  for (const std::set<std::string>& held : cases) {
    const std::set<std::string> free = FreeWith(gpu.slice, held);
    EXPECT_EQ(free, DisjointFrom(gpu, held))
        << "held " << *held.begin() << " (+" << held.size() - 1 << ")";
    EXPECT_FALSE(free.contains("gpu-0")) << "the whole GPU is not free while a placement is held";
  }
  // The 3g.40gb on slices 0-3 leaves the other 3g.40gb, and nothing that touches slices 0-3.
  const std::set<std::string> after_big = FreeWith(gpu.slice, {"gpu-0-mig-3g.40gb-0"});
  EXPECT_TRUE(after_big.contains("gpu-0-mig-3g.40gb-4"));
  EXPECT_FALSE(after_big.contains("gpu-0-mig-4g.40gb-0"));
  EXPECT_FALSE(after_big.contains("gpu-0-mig-1g.10gb-3"));
}

// The live state's per-node recount (a compiled form of the same arithmetic) blocks exactly
// the unheld devices CountersFit refuses.
TEST(DraCountersTest, TheStateBlocksWhatTheCountersRefuse) {
  const DynamicMigGpu gpu = H100();
  const std::vector<std::set<std::string>> cases = {
      {},
      {"gpu-0"},
      {"gpu-0-mig-3g.40gb-0", "gpu-0-mig-1g.10gb-4"},
      {"gpu-0-mig-2g.20gb-2", "gpu-0-mig-1g.20gb-6"},
      {"gpu-0-mig-1g.10gb-0", "gpu-0-mig-1g.10gb-5"},
  };
  for (const std::set<std::string>& held : cases) {
    std::vector<DraClaim> claims;
    for (const std::string& device : held) {
      DraClaim c;
      c.namespace_name = "team-a";
      c.name = device;
      c.allocated = true;
      c.allocated_node = "n1";
      c.results = {{"r", gpu.slice.driver, gpu.slice.pool, device}};
      claims.push_back(std::move(c));
    }
    const DraState state = MakeDraState({gpu.slice}, std::move(claims), {});
    std::set<std::string> blocked;
    for (uint32_t k : DraBlockedDevices(state, "n1")) {
      blocked.insert(state.device_set->devices[k].name);
    }
    const std::set<std::string> free = FreeWith(gpu.slice, held);
    std::set<std::string> want;
    for (const DraDevice& d : gpu.slice.devices) {
      if (!held.contains(d.name) && !free.contains(d.name)) want.insert(d.name);
    }
    EXPECT_EQ(blocked, want) << held.size() << " held";
  }
}

TEST(DraCountersTest, TheWholeGpuHeldLeavesNoPlacement) {
  const DynamicMigGpu gpu = H100();
  EXPECT_TRUE(FreeWith(gpu.slice, {"gpu-0"}).empty());
}

TEST(DraCountersTest, SetsComeFromTheCurrentGenerationOfAnySliceOfThePool) {
  DraDevice d = NvidiaDevice("n1", "part");
  d.consumes_counters = {{"set", {{"memory", MiB(10)}}}};
  DraSlice devices = NodeSlice("n1", {d});
  devices.name = "devices";
  DraSlice counters = NodeSlice("n1", {});
  counters.name = "counters";
  counters.shared_counters = {{"set", {{"memory", MiB(10)}}}};
  DraSlice stale = counters;
  stale.generation = 0;
  stale.shared_counters = {{"set", {{"memory", MiB(1)}}}};
  const DraCounterSets sets = CurrentCounterSets({stale, devices, counters});
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets.begin()->second.at("memory"), MiB(10)) << "the stale generation is ignored";
  EXPECT_TRUE(CountersFit(d, sets));
  EXPECT_FALSE(CountersFit(d, CountersLeft(sets, {&d}))) << "its own consumption is taken";
}

TEST(DraCountersTest, AConsumptionNoSetCoversNeverFits) {
  const DraCounterSets sets = {{{"gpu.nvidia.com", "n1", "set"}, {{"memory", MiB(10)}}}};
  DraDevice other_set = NvidiaDevice("n1", "a");
  other_set.consumes_counters = {{"missing", {{"memory", MiB(1)}}}};
  DraDevice other_counter = NvidiaDevice("n1", "b");
  other_counter.consumes_counters = {{"set", {{"multiprocessors", Quantity::FromUnits(1)}}}};
  DraDevice other_pool = NvidiaDevice("n2", "c");
  other_pool.consumes_counters = {{"set", {{"memory", MiB(1)}}}};
  DraDevice plain = NvidiaDevice("n1", "d");
  EXPECT_FALSE(CountersFit(other_set, sets));
  EXPECT_FALSE(CountersFit(other_counter, sets));
  EXPECT_FALSE(CountersFit(other_pool, sets)) << "counter sets are shared inside a pool only";
  EXPECT_TRUE(CountersFit(plain, sets)) << "a device that consumes nothing always fits";
  // Held devices naming what no slice publishes take nothing from the sets that exist.
  EXPECT_EQ(CountersLeft(sets, {&other_set, &other_counter, &other_pool}), sets);
}

}  // namespace
}  // namespace topology
