// Partitionable devices on the wire: sharedCounters on a slice (1.35+ publishes them in a slice
// of their own) and consumesCounters on each device, in the v1 shape kube-apiserver v1.36.2
// stored (the two partitionable-*.json lists in test/testdata/dra, kept unchanged) and in
// v1beta1's `basic` wrapper. The model read from the recorded pool agrees with what
// kube-scheduler's allocator decided.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/dra/counters.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

namespace wire {
namespace {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using topology::DraClaim;
using topology::DraDevice;
using topology::DraSlice;
using topology::Quantity;

Quantity MiB(int64_t mib) { return Quantity::FromUnits(mib << 20); }

DraObjects PartitionableOrFail() {
  DraObjects out;
  for (const char* file : {"dra/partitionable-list-resourceslices.v1.json",
                           "dra/partitionable-list-resourceclaims.v1.json"}) {
    absl::StatusOr<DraObjects> objects = ParseDraList(JsonOrFail(Testdata(file)));
    EXPECT_TRUE(objects.ok()) << file << ": " << objects.status();
    if (!objects.ok()) continue;
    for (DraSlice& s : objects->slices) out.slices.push_back(std::move(s));
    for (DraClaim& c : objects->claims) out.claims.push_back(std::move(c));
  }
  return out;
}

const DraDevice* Named(const std::vector<DraDevice>& devices, const std::string& name) {
  for (const DraDevice& d : devices) {
    if (d.name == name) return &d;
  }
  ADD_FAILURE() << "no device " << name;
  return nullptr;
}

TEST(DraCodecCountersTest, ReadsACountersOnlySliceAndWhatEachDeviceConsumes) {
  const DraObjects objects = PartitionableOrFail();
  ASSERT_EQ(objects.slices.size(), 2u);
  const DraSlice& counters = objects.slices[0];
  EXPECT_EQ(counters.name, "dm-node-counters");
  EXPECT_TRUE(counters.devices.empty());
  ASSERT_EQ(counters.shared_counters.size(), 1u);
  EXPECT_EQ(counters.shared_counters[0].name, "gpu-0-counter-set");
  EXPECT_EQ(counters.shared_counters[0].counters.size(), 10u);
  EXPECT_EQ(counters.shared_counters[0].counters.at("memory"), MiB(81920));
  EXPECT_EQ(counters.shared_counters[0].counters.at("multiprocessors"), Quantity::FromUnits(132));
  EXPECT_EQ(counters.shared_counters[0].counters.at("memory-slice-7"), Quantity::FromUnits(1));

  const std::vector<DraDevice> current = topology::CurrentDevices(objects.slices);
  ASSERT_EQ(current.size(), 10u);
  const DraDevice* big = Named(current, "gpu-0-mig-3g40gb-9-4");
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(big->consumes_counters.size(), 1u);
  EXPECT_EQ(big->consumes_counters[0].counter_set, "gpu-0-counter-set");
  EXPECT_EQ(big->consumes_counters[0].counters,
            (topology::DraCounters{{"memory", MiB(40192)},
                                   {"memory-slice-4", Quantity::FromUnits(1)},
                                   {"memory-slice-5", Quantity::FromUnits(1)},
                                   {"memory-slice-6", Quantity::FromUnits(1)},
                                   {"memory-slice-7", Quantity::FromUnits(1)},
                                   {"multiprocessors", Quantity::FromUnits(60)}}));
  EXPECT_EQ(Named(current, "gpu-0")->consumes_counters[0].counters.size(), 10u);
}

// The claims were made in the order big, whole, small, big2. The allocator gave `big` the
// 3g.40gb on slices 0-3, refused `whole` (the whole GPU shares the used counters), gave `small`
// the 1g.10gb on slice 4 and then refused `big2` (the other 3g.40gb needs slice 4).
TEST(DraCodecCountersTest, TheModelAgreesWithTheAllocatorOnTheRecordedPool) {
  const DraObjects objects = PartitionableOrFail();
  const std::vector<DraDevice> current = topology::CurrentDevices(objects.slices);
  const topology::DraCounterSets sets = topology::CurrentCounterSets(objects.slices);
  auto free_with = [&](const std::set<std::string>& held_claims) {
    std::vector<const DraDevice*> held;
    for (const DraClaim& claim : objects.claims) {
      if (!held_claims.contains(claim.name)) continue;
      const topology::DraAllocatedDevices devices = topology::AllocatedDevices(claim, current);
      EXPECT_TRUE(devices.missing.empty()) << claim.name;
      held.insert(held.end(), devices.devices.begin(), devices.devices.end());
    }
    const topology::DraCounterSets left = topology::CountersLeft(sets, held);
    std::set<std::string> out;
    for (const DraDevice& d : current) {
      const bool taken = std::find(held.begin(), held.end(), &d) != held.end();
      if (!taken && topology::CountersFit(d, left)) out.insert(d.name);
    }
    return out;
  };
  // When `whole` was tried, `big` held slices 0-3.
  const std::set<std::string> after_big = free_with({"big"});
  EXPECT_FALSE(after_big.contains("gpu-0"));
  EXPECT_EQ(after_big, (std::set<std::string>{"gpu-0-mig-1g10gb-19-4", "gpu-0-mig-1g10gb-19-5",
                                              "gpu-0-mig-1g10gb-19-6", "gpu-0-mig-3g40gb-9-4"}));
  // When `big2` was tried, `small` held slice 4 as well: no 3g.40gb is left, two 1g.10gb are.
  EXPECT_EQ(free_with({"big", "small"}),
            (std::set<std::string>{"gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6"}));
}

TEST(DraCodecCountersTest, ReadsV1beta1CountersInsideBasic) {
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceSlice",
      "spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1"},
        "sharedCounters":[{"name":"gpu-0-counter-set","counters":{"memory":{"value":"80Gi"}}}],
        "devices":[{"name":"gpu-0-mig-1g10gb-19-0","basic":{
          "attributes":{"type":{"string":"mig"},"profile":{"string":"1g.10gb"}},
          "consumesCounters":[{"counterSet":"gpu-0-counter-set",
                               "counters":{"memory":{"value":"9984Mi"}}}]}}]}})";
  absl::StatusOr<DraSlice> slice = ParseResourceSlice(JsonOrFail(kJson));
  ASSERT_TRUE(slice.ok()) << slice.status();
  ASSERT_EQ(slice->shared_counters.size(), 1u);
  EXPECT_EQ(slice->shared_counters[0].counters.at("memory"), MiB(81920));
  ASSERT_EQ(slice->devices.size(), 1u);
  ASSERT_EQ(slice->devices[0].consumes_counters.size(), 1u);
  EXPECT_EQ(slice->devices[0].consumes_counters[0].counters.at("memory"), MiB(9984));
}

TEST(DraCodecCountersTest, ErrorsNameTheField) {
  const std::string spec = R"({"spec":{"driver":"d","pool":{"name":"p"},)";
  const std::string device = spec + R"("devices":[{"name":"x","consumesCounters":)";
  struct Row {
    std::string json, error;
  } rows[] = {
      {spec + R"("sharedCounters":[{"counters":{}}]}})",
       "resourceslice.spec.sharedCounters[0].name: missing"},
      {spec + R"("sharedCounters":[{"name":""}]}})",
       "resourceslice.spec.sharedCounters[0].name: empty"},
      {spec + R"("sharedCounters":[{"name":"s"}]}})",
       "resourceslice.spec.sharedCounters[0].counters: missing"},
      {spec + R"("sharedCounters":[{"name":"s","counters":{"memory":{"value":"-1Gi"}}}]}})",
       "resourceslice.spec.sharedCounters[0].counters.memory.value: negative"},
      {spec + R"("sharedCounters":[{"name":"s","counters":{"memory":{}}}]}})",
       "resourceslice.spec.sharedCounters[0].counters.memory.value: missing"},
      {spec + R"("sharedCounters":{}}})",
       "resourceslice.spec.sharedCounters: expected array, got object"},
      {device + R"([{"counters":{}}]}]}})",
       "resourceslice.spec.devices[0].consumesCounters[0].counterSet: missing"},
      {device + R"([{"counterSet":"s","counters":{"memory":"1Gi"}}]}]}})",
       "resourceslice.spec.devices[0].consumesCounters[0].counters.memory: expected object"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<DraSlice> slice = ParseResourceSlice(JsonOrFail(row.json));
    ASSERT_FALSE(slice.ok()) << row.json;
    EXPECT_EQ(slice.status().message(), row.error) << row.json;
  }
}

}  // namespace
}  // namespace wire
