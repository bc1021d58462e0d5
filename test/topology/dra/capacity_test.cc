// Consumable capacity: what one allocation consumes of a multi-allocatable device under its
// requestPolicy, whether a device has room for a request beside the shares claims hold, and
// the counts built on that (a device is allocated only when its shares leave too little), from
// a v1.36 apiserver's slice and claims and from tables.
#include "topology/dra/capacity.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "test/topology/dra/devices.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

namespace topology {
namespace {

using testing_dra::NvidiaDevice;
using testing_dra::RangePolicy;
using testing_dra::ShareClaim;
using testing_dra::SharedGpu;

Quantity Units(int64_t n) { return Quantity::FromUnits(n); }

TEST(DraCapacityTest, ConsumedFollowsTheRequestPolicy) {
  DraCapacityPolicy stepped = RangePolicy(10, 5);
  stepped.max = Units(40);
  DraCapacityPolicy values;
  values.default_amount = Units(8);
  values.valid_values = {Units(8), Units(16), Units(40)};
  DraCapacityPolicy default_only;
  default_only.default_amount = Units(10);
  struct Row {
    const char* name;
    std::optional<DraCapacityPolicy> policy;
    DraCapacity requests;
    std::optional<int64_t> consumed;  // of memory; nullopt: the device cannot serve it
  };
  const std::vector<Row> rows = {
      {"no policy, nothing asked: all of it", std::nullopt, {}, 80},
      {"no policy: what is asked", std::nullopt, {{"memory", Units(10)}}, 10},
      {"no policy: more than there is is still the amount",
       std::nullopt,
       {{"memory", Units(90)}},
       90},
      {"default only, nothing asked", default_only, {}, 10},
      {"default only: what is asked", default_only, {{"memory", Units(7)}}, 7},
      {"range: nothing asked is the default", stepped, {}, 10},
      {"range: below min rounds up to it", stepped, {{"memory", Units(3)}}, 10},
      {"range: up to the next step", stepped, {{"memory", Units(12)}}, 15},
      {"range: on a step", stepped, {{"memory", Units(15)}}, 15},
      {"range: max", stepped, {{"memory", Units(40)}}, 40},
      {"range: rounded up to max", stepped, {{"memory", Units(36)}}, 40},
      {"range: rounded past max is refused", stepped, {{"memory", Units(41)}}, std::nullopt},
      {"range without a step", RangePolicy(10), {{"memory", Units(12)}}, 12},
      {"values: up to the next", values, {{"memory", Units(9)}}, 16},
      {"values: the largest", values, {{"memory", Units(40)}}, 40},
      {"values: above all is refused", values, {{"memory", Units(41)}}, std::nullopt},
      {"values: nothing asked is the default", values, {}, 8},
      {"a capacity the device does not publish", std::nullopt, {{"cores", Units(1)}}, std::nullopt},
      // The allocator matches the request's key with the published one as written.
      {"the key as published, not qualified",
       std::nullopt,
       {{"gpu.nvidia.com/memory", Units(1)}},
       std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const DraDevice device = SharedGpu("n", "gpu-0", 80, row.policy);
    const std::optional<DraCapacity> consumed = CapacityConsumedBy(device, row.requests);
    ASSERT_EQ(consumed.has_value(), row.consumed.has_value());
    if (consumed) {
      EXPECT_EQ(*consumed, (DraCapacity{{"memory", Units(*row.consumed)}}));
    }
  }

  // Each capacity on its own: the one not asked is taken whole when it has no policy.
  DraDevice two = SharedGpu("n", "gpu-0", 80, RangePolicy(10));
  two.published_capacity.push_back({"cores", Units(4), std::nullopt});
  EXPECT_EQ(CapacityConsumedBy(two, {{"memory", Units(20)}}),
            (DraCapacity{{"cores", Units(4)}, {"memory", Units(20)}}));
}

TEST(DraCapacityTest, RoomBesideTheShares) {
  const DraDevice shared = SharedGpu("n", "gpu-0", 80, RangePolicy(10));
  const DraDevice plain = [] {
    DraDevice d = NvidiaDevice("n", "gpu-1");
    d.published_capacity = {{"memory", Units(80), std::nullopt}};
    return d;
  }();
  const DraDevice no_capacity = NvidiaDevice("n", "gpu-2");
  struct Row {
    const char* name;
    const DraDevice* device;
    int results;
    std::optional<DraShares> shares;
    DraCapacity requests;
    DraRoom room;
  };
  const std::vector<Row> rows = {
      {"nobody holds it", &shared, 0, std::nullopt, {}, DraRoom::kFree},
      {"two shares leave room",
       &shared,
       2,
       DraShares{2, {{"memory", Units(20)}}},
       {},
       DraRoom::kShared},
      {"shares leave exactly the default",
       &shared,
       2,
       DraShares{2, {{"memory", Units(70)}}},
       {},
       DraRoom::kShared},
      {"shares leave less than the default",
       &shared,
       2,
       DraShares{2, {{"memory", Units(75)}}},
       {},
       DraRoom::kFull},
      {"shares leave less than asked",
       &shared,
       1,
       DraShares{1, {{"memory", Units(50)}}},
       {{"memory", Units(40)}},
       DraRoom::kFull},
      {"held whole (a result without a share)", &shared, 1, std::nullopt, {}, DraRoom::kHeld},
      {"more than it has", &shared, 0, std::nullopt, {{"memory", Units(90)}}, DraRoom::kTooSmall},
      {"a plain device, free, asked less than it has",
       &plain,
       0,
       std::nullopt,
       {{"memory", Units(80)}},
       DraRoom::kFree},
      {"a plain device asked more than it has",
       &plain,
       0,
       std::nullopt,
       {{"memory", Units(81)}},
       DraRoom::kTooSmall},
      {"a plain device held", &plain, 1, std::nullopt, {{"memory", Units(81)}}, DraRoom::kHeld},
      {"a device without the capacity asked",
       &no_capacity,
       0,
       std::nullopt,
       {{"memory", Units(1)}},
       DraRoom::kTooSmall},
      {"a device without capacity, nothing asked",
       &no_capacity,
       0,
       std::nullopt,
       {},
       DraRoom::kFree},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(RoomFor(*row.device, row.results, row.shares ? &*row.shares : nullptr, row.requests),
              row.room);
  }
}

// The slice and claims a v1.36 apiserver serves: research and acme each hold a 10Gi share of
// node-c's multi-allocatable gpu-0. The class's counts see the GPU as shared, not allocated,
// until the shares leave less than the default (10Gi) of its 81559Mi.
TEST(DraCapacityTest, SharesCountOnTheNodeUntilTheyLeaveTooLittle) {
  absl::StatusOr<wire::DraObjects> slices = wire::ParseDraList(testing_support::JsonOrFail(
      testing_support::Testdata("dra/consumable-list-resourceslices.v1.json")));
  absl::StatusOr<wire::DraObjects> claims = wire::ParseDraList(testing_support::JsonOrFail(
      testing_support::Testdata("dra/consumable-list-resourceclaims.v1.json")));
  absl::StatusOr<wire::DraObjects> classes = wire::ParseDraList(
      testing_support::JsonOrFail(testing_support::Testdata("dra/list-deviceclasses.v1.json")));
  ASSERT_TRUE(slices.ok() && claims.ok() && classes.ok());
  DraState state = MakeDraState(slices->slices, claims->claims, classes->classes);
  ASSERT_EQ(state.devices()[0].name, "gpu-0");
  size_t gpu_class = 0;
  while (state.classes()[gpu_class].name != "gpu.nvidia.com") ++gpu_class;
  constexpr int64_t kGi = int64_t{1} << 30;

  struct Row {
    const char* name;
    std::vector<DraClaim> put;
    std::vector<std::string> erase;  // names in acme
    int shares;
    int64_t consumed;  // bytes of memory
    int64_t allocated, shared;
  };
  const std::vector<Row> rows = {
      {"as captured", {}, {}, 2, 20 * kGi, 0, 1},
      {"a third share leaves 9.6Gi",
       {ShareClaim("acme", "big", "node-c", "gpu-0", 50 * kGi)},
       {},
       3,
       70 * kGi,
       1,
       0},
      {"it goes", {}, {"big"}, 2, 20 * kGi, 0, 1},
      {"a share ID on the plain GPU holds it whole",
       {ShareClaim("acme", "whole", "node-c", "gpu-1", 0)},
       {},
       2,
       20 * kGi,
       1,
       1},
      {"the shares go", {}, {"shared-b", "whole"}, 1, 10 * kGi, 0, 1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    for (const DraClaim& c : row.put) state.PutClaim(std::make_shared<const DraClaim>(c));
    for (const std::string& name : row.erase) state.EraseClaim("acme", name);
    const DraShares* shares = state.SharesOf(0);
    ASSERT_NE(shares, nullptr);
    EXPECT_EQ(shares->count, row.shares);
    EXPECT_EQ(shares->consumed, (DraCapacity{{"memory", Units(row.consumed)}}));
    const DraClassesOnNode* on = state.ClassesOnNode("node-c");
    ASSERT_NE(on, nullptr);
    EXPECT_EQ(on->at(gpu_class).devices, 2);
    EXPECT_EQ(on->at(gpu_class).multi_allocatable, 1);
    EXPECT_EQ(on->at(gpu_class).allocated, row.allocated);
    EXPECT_EQ(on->at(gpu_class).shared, row.shared);
  }
  EXPECT_EQ(state.SharesOf(1), nullptr) << "gpu-1 allows no sharing: its result holds it whole";
}

}  // namespace
}  // namespace topology
