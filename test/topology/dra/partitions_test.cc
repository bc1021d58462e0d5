// A GPU published as partitionable devices, read from the recorded v1.36.2 pool (the two
// partitionable-*.json lists in test/testdata/dra, kept unchanged): per counter set, the
// placements allocated claims hold, those the held ones block and those that could still be cut,
// each with its memory slices, in the model (PartitionedGpus) and in /debug/allocations.
#include "topology/dra/partitions.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.h"
#include "extender/allocations.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/test_inputs.h"
#include "topology/snapshot.h"
#include "wire/dra_codec.h"

namespace dra_partitions_test {
namespace {

using testing_support::JsonOrFail;
using testing_support::Testdata;

constexpr char kPartitionsPolicy[] = R"(tiers:
  - name: trusted
    modes: [exclusive, mig]
tenants:
  - name: acme
    tier: trusted
    namespaces: [team]
)";

using Names = std::vector<std::string>;

// The recorded pool: the whole H100 gpu-0 and its nine MIG placements on dm-node, and the
// claims big (a 3g.40gb, on slices 0-3), small (a 1g.10gb, on slice 4), and whole and big2,
// which the allocator refused.
topology::ClusterData RecordedPool() {
  topology::ClusterData data;
  for (const char* file : {"dra/partitionable-list-resourceslices.v1.json",
                           "dra/partitionable-list-resourceclaims.v1.json"}) {
    absl::StatusOr<wire::DraObjects> objects = wire::ParseDraList(JsonOrFail(Testdata(file)));
    EXPECT_TRUE(objects.ok()) << file << ": " << objects.status();
    if (!objects.ok()) continue;
    for (topology::DraSlice& s : objects->slices) data.dra_slices.push_back(std::move(s));
    for (topology::DraClaim& c : objects->claims) data.dra_claims.push_back(std::move(c));
  }
  data.nodes.push_back({"dm-node", {{"kubernetes.io/hostname", "dm-node"}}, {}, {}, std::nullopt});
  return data;
}

topology::DraClaim* ClaimNamed(topology::ClusterData& data, const std::string& name) {
  for (topology::DraClaim& c : data.dra_claims) {
    if (c.name == name) return &c;
  }
  ADD_FAILURE() << "no claim " << name;
  return nullptr;
}

Names DeviceNames(const std::vector<const topology::DraDevice*>& devices) {
  Names out;
  for (const topology::DraDevice* d : devices) out.push_back(d->name);
  return out;
}

const Names kEveryOneGig = {"gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1",
                            "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3",
                            "gpu-0-mig-1g10gb-19-4", "gpu-0-mig-1g10gb-19-5",
                            "gpu-0-mig-1g10gb-19-6"};

class DraPartitionsTest : public ::testing::Test {
 protected:
  void Build(const topology::ClusterData& data) {
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPartitionsPolicy);
    ASSERT_TRUE(policy.ok()) << policy.status();
    state_.policy = std::make_shared<const topology::Policy>(*std::move(policy));
    state_.catalog = &common::BuiltinCatalog();
    state_.snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(data, *state_.catalog, *state_.policy));
  }
  topology::ModelState state_;
};

// After the recorded allocations the held placements are the 3g.40gb on slices 0-3 and the
// 1g.10gb on slice 4; only the 1g.10gb placements on slices 5 and 6 can still be cut (the
// 3g.40gb on slices 4-7 overlaps slice 4, and the whole GPU every slice).
TEST_F(DraPartitionsTest, TheRecordedAllocationsLeaveTwoOneGigPlacements) {
  Build(RecordedPool());
  const std::vector<topology::PartitionedGpu> gpus =
      topology::PartitionedGpus(state_.snapshot->dra());
  ASSERT_EQ(gpus.size(), 1u);
  const topology::PartitionedGpu& gpu = gpus[0];
  EXPECT_EQ(gpu.node, "dm-node");
  EXPECT_EQ(gpu.driver, "gpu.nvidia.com");
  EXPECT_EQ(gpu.pool, "dm-node");
  EXPECT_EQ(gpu.counter_set, "gpu-0-counter-set");

  ASSERT_EQ(gpu.held.size(), 2u);
  EXPECT_EQ(gpu.held[0].device->name, "gpu-0-mig-1g10gb-19-4");
  ASSERT_NE(gpu.held[0].claim, nullptr);
  EXPECT_EQ(gpu.held[0].claim->name, "small");
  EXPECT_EQ(topology::MemorySlices(*gpu.held[0].device, gpu.counter_set), std::vector<int>{4});
  EXPECT_EQ(gpu.held[1].device->name, "gpu-0-mig-3g40gb-9-0");
  ASSERT_NE(gpu.held[1].claim, nullptr);
  EXPECT_EQ(gpu.held[1].claim->name, "big");
  EXPECT_EQ(topology::MemorySlices(*gpu.held[1].device, gpu.counter_set),
            (std::vector<int>{0, 1, 2, 3}));

  EXPECT_EQ(DeviceNames(gpu.can_cut), (Names{"gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6"}));
  EXPECT_EQ(DeviceNames(gpu.blocked),
            (Names{"gpu-0", "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1",
                   "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3", "gpu-0-mig-3g40gb-9-4"}));
}

// Held, blocked and cuttable as the allocated claims change: the three lists always part the
// GPU's ten devices.
TEST_F(DraPartitionsTest, HeldBlockedAndCuttableFollowTheClaims) {
  struct Row {
    std::string name;
    std::vector<std::pair<std::string, std::string>> allocated;  // claim -> device; others not
    Names held, can_cut;
  };
  Names everything = {"gpu-0"};
  everything.insert(everything.end(), kEveryOneGig.begin(), kEveryOneGig.end());
  everything.push_back("gpu-0-mig-3g40gb-9-0");
  everything.push_back("gpu-0-mig-3g40gb-9-4");
  const std::vector<Row> rows = {
      {"nothing held: the whole GPU and every placement", {}, {}, everything},
      {"the whole GPU held: no placement", {{"whole", "gpu-0"}}, {"gpu-0"}, {}},
      {"a 3g.40gb on slices 4-7: the 1g.10gb and the 3g.40gb on slices 0-3",
       {{"big", "gpu-0-mig-3g40gb-9-4"}},
       {"gpu-0-mig-3g40gb-9-4"},
       {"gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1", "gpu-0-mig-1g10gb-19-2",
        "gpu-0-mig-1g10gb-19-3", "gpu-0-mig-3g40gb-9-0"}},
      {"both 3g.40gb: nothing",
       {{"big", "gpu-0-mig-3g40gb-9-0"}, {"big2", "gpu-0-mig-3g40gb-9-4"}},
       {"gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4"},
       {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    topology::ClusterData data = RecordedPool();
    topology::DraClaim model = *ClaimNamed(data, "big");
    for (topology::DraClaim& c : data.dra_claims) {
      c.allocated = false;
      c.results.clear();
    }
    for (const auto& [claim, device] : row.allocated) {
      topology::DraClaim* c = ClaimNamed(data, claim);
      ASSERT_NE(c, nullptr);
      c->allocated = true;
      c->allocated_node = model.allocated_node;
      c->results = model.results;
      c->results[0].device = device;
    }
    Build(data);
    const std::vector<topology::PartitionedGpu> gpus =
        topology::PartitionedGpus(state_.snapshot->dra());
    ASSERT_EQ(gpus.size(), 1u);
    Names held;
    for (const topology::HeldPlacement& h : gpus[0].held) held.push_back(h.device->name);
    EXPECT_EQ(held, row.held);
    EXPECT_EQ(DeviceNames(gpus[0].can_cut), row.can_cut);
    EXPECT_EQ(held.size() + gpus[0].can_cut.size() + gpus[0].blocked.size(), everything.size());
  }
}

TEST_F(DraPartitionsTest, AClusterWithoutPartitionableDevicesHasNoPartitionedGpus) {
  topology::ClusterData data = RecordedPool();
  for (topology::DraSlice& s : data.dra_slices) {
    s.shared_counters.clear();
    for (topology::DraDevice& d : s.devices) d.consumes_counters.clear();
  }
  Build(data);
  EXPECT_TRUE(topology::PartitionedGpus(state_.snapshot->dra()).empty());
  rapidjson::Document doc =
      JsonOrFail(extender::AllocationsJson(state_, extender::Allocations(state_)));
  ASSERT_TRUE(doc.HasMember("partitionedGpus"));
  EXPECT_EQ(doc["partitionedGpus"].Size(), 0u);
}

// Only counters named "...memory-slice-<N>" of the named set are slices; the rest (SMs,
// memory) and other sets are not.
TEST(DraPartitionsMemorySlicesTest, ReadsTheSliceCountersOfTheNamedSet) {
  topology::DraDevice d;
  const topology::Quantity one = topology::Quantity::FromUnits(1);
  d.consumes_counters = {{"gpu-0-counter-set",
                          {{"memory-slice-6", one},
                           {"memory-slice-5", one},
                           {"multiprocessors", one},
                           {"memory", one},
                           {"memory-slice-x", one}}},
                         {"gpu-1-counter-set", {{"memory-slice-0", one}}}};
  EXPECT_EQ(topology::MemorySlices(d, "gpu-0-counter-set"), (std::vector<int>{5, 6}));
  EXPECT_EQ(topology::MemorySlices(d, "gpu-1-counter-set"), std::vector<int>{0});
  EXPECT_TRUE(topology::MemorySlices(d, "gpu-2-counter-set").empty());
}

// The inventory's JSON: partitionedGpus per counter set, and the claim's device naming the GPU
// it is a slice of.
TEST_F(DraPartitionsTest, TheInventoryListsHeldAndCuttablePlacements) {
  Build(RecordedPool());
  rapidjson::Document doc =
      JsonOrFail(extender::AllocationsJson(state_, extender::Allocations(state_)));
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("partitionedGpus"));
  ASSERT_EQ(doc["partitionedGpus"].Size(), 1u);
  rapidjson::Document want = JsonOrFail(R"({
    "node": "dm-node", "driver": "gpu.nvidia.com", "pool": "dm-node",
    "counterSet": "gpu-0-counter-set",
    "held": [
      {"device": "gpu-0-mig-1g10gb-19-4", "migProfile": "1g.10gb", "memorySlices": [4],
       "claim": "team/small", "tenant": "acme"},
      {"device": "gpu-0-mig-3g40gb-9-0", "migProfile": "3g.40gb", "memorySlices": [0, 1, 2, 3],
       "claim": "team/big", "tenant": "acme"}],
    "canStillCut": [
      {"device": "gpu-0-mig-1g10gb-19-5", "migProfile": "1g.10gb", "memorySlices": [5]},
      {"device": "gpu-0-mig-1g10gb-19-6", "migProfile": "1g.10gb", "memorySlices": [6]}],
    "blocked": ["gpu-0", "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1",
                "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3", "gpu-0-mig-3g40gb-9-4"]
  })");
  EXPECT_TRUE(doc["partitionedGpus"][0] == want)
      << extender::AllocationsJson(state_, extender::Allocations(state_));

  const rapidjson::Value* big = nullptr;
  for (const rapidjson::Value& tenant : doc["tenants"].GetArray()) {
    if (tenant["tenant"] != "acme" || !tenant.HasMember("claims")) continue;
    for (const rapidjson::Value& claim : tenant["claims"].GetArray()) {
      if (claim["name"] == "big") big = &claim;
    }
  }
  ASSERT_NE(big, nullptr);
  ASSERT_EQ((*big)["devices"].Size(), 1u);
  const rapidjson::Value& device = (*big)["devices"][0];
  EXPECT_EQ(device["driver"], "gpu.nvidia.com");
  EXPECT_EQ(device["pool"], "dm-node");
  EXPECT_EQ(device["partitionOf"], "gpu-0-counter-set");
  EXPECT_TRUE(device["memorySlices"] == JsonOrFail("[0, 1, 2, 3]"));
}

}  // namespace
}  // namespace dra_partitions_test
