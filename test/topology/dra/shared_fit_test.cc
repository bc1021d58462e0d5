// Multi-allocatable devices (DRAConsumableCapacity) where the model decides: a DRA extended
// resource fits a shared GPU while its shares leave room for one more, only for a tier that may
// time-slice; explain's pending-claim rows count a request's capacity asks against what the
// shares leave.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/topology/fleet_fixture.h"
#include "topology/dra/claim_fit.h"
#include "topology/dra/extended_resources.h"
#include "topology/dra/model.h"

namespace topology {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;
using testing_dra::RangePolicy;
using testing_dra::ShareClaim;
using testing_dra::SharedGpu;
using testing_fleet::Demand;
using testing_fleet::FleetTest;

constexpr char kSharedGpuClass[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";

std::vector<DraDeviceClass> GpuClass() {
  return {{"gpu.nvidia.com", {kSharedGpuClass}, "nvidia.com/gpu"}};
}

// An allocated claim holding `device` whole.
DraClaim WholeClaim(const std::string& name, const std::string& node, const std::string& device) {
  DraClaim c;
  c.namespace_name = "research";
  c.name = name;
  c.allocated = true;
  c.results = {{"gpu", "gpu.nvidia.com", node, device}};
  return c;
}

class DraSharedFitTest : public FleetTest {
 protected:
  NodeState DraOnlyNode(const std::string& name) {
    NodeFacts facts = testing_fleet::Node({}, {});
    facts.name = name;
    NodeState state;
    state.supply = BuildNodeSupply(facts, common::BuiltinCatalog(), policy_);
    state.facts = std::move(facts);
    return state;
  }
};

// Each node's GPUs hold 80 units of memory and a request that asks none takes the default, 10.
TEST_F(DraSharedFitTest, ExtendedResourcesOnSharedGpus) {
  const DraState dra = MakeDraState(
      {NodeSlice("room", {SharedGpu("room", "gpu-0", 80, RangePolicy(10))}),
       NodeSlice("full", {SharedGpu("full", "gpu-0", 80, RangePolicy(10))}),
       NodeSlice("whole", {SharedGpu("whole", "gpu-0", 80, RangePolicy(10))}),
       NodeSlice("mixed", {SharedGpu("mixed", "gpu-0", 80, RangePolicy(10)),
                           NvidiaDevice("mixed", "gpu-1")}),
       NodeSlice("plain", {NvidiaDevice("plain", "gpu-0")})},
      {ShareClaim("research", "a", "room", "gpu-0", 20),
       ShareClaim("acme", "b", "room", "gpu-0", 20),
       ShareClaim("research", "c", "full", "gpu-0", 75), WholeClaim("d", "whole", "gpu-0")},
      GpuClass());
  struct Row {
    const char* name;
    const char* node;
    const char* ns;
    int64_t count;
    Verdict verdict;
    const char* reason;  // null: checked by rule and capacity
  };
  const std::vector<Row> rows = {
      {"shares leave room", "room", "research", 1, Verdict::kFits, ""},
      // One device however many shares it may still take: a request's devices are distinct.
      {"one shared GPU is one device", "room", "research", 2, Verdict::kUnresolvable, nullptr},
      {"an untrusted tier may not share", "room", "acme", 1, Verdict::kUnresolvable,
       "nvidia.com/gpu is timeslice here, not allowed for tier untrusted"},
      {"shares leave too little", "full", "research", 1, Verdict::kUnschedulable,
       "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)"},
      {"held whole", "whole", "research", 1, Verdict::kUnschedulable,
       "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)"},
      // The allocator may give either GPU, so the tier must allow both kinds.
      {"a shared and a plain GPU, untrusted", "mixed", "acme", 1, Verdict::kUnresolvable,
       "nvidia.com/gpu is timeslice here, not allowed for tier untrusted"},
      {"a shared and a plain GPU, trusted", "mixed", "research", 2, Verdict::kFits, ""},
      {"plain GPUs only", "plain", "acme", 1, Verdict::kFits, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    // A FitResult's views point into its inputs: the demand outlives the result.
    const GpuDemand demand = Demand({{"nvidia.com/gpu", row.count}});
    FitResult r = FitWithDra(demand, Context(policy_, row.ns), DraOnlyNode(row.node), dra);
    EXPECT_EQ(r.verdict, row.verdict);
    if (row.reason) {
      EXPECT_EQ(r.Reason(), row.reason);
    } else {
      EXPECT_EQ(r.rule, Rule::kDraExceedsNode);
      EXPECT_EQ(r.capacity, 1);
    }
  }
}

// One node: a shared GPU whose two shares consume 20 of 80 (default 10, steps of 10), a plain
// GPU of 80 that is free and one that a claim holds.
TEST_F(DraSharedFitTest, PendingClaimRowsCountCapacityAsks) {
  DraDevice free_gpu = NvidiaDevice("n1", "gpu-1");
  free_gpu.published_capacity = {{"memory", Quantity::FromUnits(80), std::nullopt}};
  DraDevice held_gpu = free_gpu;
  held_gpu.name = "gpu-2";
  const DraState dra = MakeDraState(
      {NodeSlice("n1", {SharedGpu("n1", "gpu-0", 80, RangePolicy(10, 10)), free_gpu, held_gpu})},
      {ShareClaim("research", "a", "n1", "gpu-0", 10), ShareClaim("acme", "b", "n1", "gpu-0", 10),
       WholeClaim("c", "n1", "gpu-2")},
      GpuClass());
  struct Row {
    const char* name;
    int64_t count;
    DraCapacity requests;
    RequestOnNode::Answer answer;
    const char* text;
  };
  const std::vector<Row> rows = {
      {"no capacity asked",
       1,
       {},
       RequestOnNode::Answer::kYes,
       "gpu (gpu.nvidia.com): 1 wanted, 2 free match (1 shared with other claims); 1 held by "
       "claims"},
      {"two devices",
       2,
       {{"memory", Quantity::FromUnits(10)}},
       RequestOnNode::Answer::kYes,
       "gpu (gpu.nvidia.com): 2 wanted, 2 free match (1 shared with other claims); 1 held by "
       "claims"},
      {"more than the shares leave",
       1,
       {{"memory", Quantity::FromUnits(65)}},
       RequestOnNode::Answer::kYes,
       "gpu (gpu.nvidia.com): 1 wanted, 1 free match; 1 held by claims; 1 shared by claims "
       "that leave too little"},
      {"more than any GPU has",
       1,
       {{"memory", Quantity::FromUnits(90)}},
       RequestOnNode::Answer::kNo,
       "gpu (gpu.nvidia.com): 1 wanted, 0 free match; 1 held by claims; 2 short of the "
       "capacity asked"},
      {"a capacity no GPU publishes",
       1,
       {{"cores", Quantity::FromUnits(1)}},
       RequestOnNode::Answer::kNo,
       "gpu (gpu.nvidia.com): 1 wanted, 0 free match; 1 held by claims; 2 short of the "
       "capacity asked"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    DraClaim claim;
    claim.namespace_name = "research";
    claim.name = "pending";
    DraRequest request{"gpu", "gpu.nvidia.com", {}, false, row.count, false};
    request.capacity_requests = row.requests;
    claim.requests = {request};
    const std::vector<ClaimOnNode> nodes = ClaimCandidates(claim, dra, {});
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0].answer, row.answer);
    ASSERT_EQ(nodes[0].requests.size(), 1u);
    EXPECT_EQ(RequestOnNodeText(nodes[0].requests[0]), row.text);
  }
}

// A multi-allocatable device that also draws on shared counters (a partitionable GPU offered
// whole and shareable beside a MIG placement): its first share takes the counters, later ones
// do not (the allocator skips the check while the device has shares), so the placement is
// blocked while shares are held and blocks the GPU while it is.
TEST_F(DraSharedFitTest, SharesTakeTheCountersOnce) {
  const Quantity one = Quantity::FromUnits(1);
  DraDevice gpu = SharedGpu("n1", "gpu-0", 80, RangePolicy(10));
  gpu.consumes_counters = {{"set", {{"slice-0", one}, {"slice-1", one}}}};
  DraDevice mig = NvidiaDevice("n1", "mig-0", "mig", "1g.10gb");
  mig.consumes_counters = {{"set", {{"slice-0", one}}}};
  DraSlice slice = NodeSlice("n1", {gpu, mig});
  slice.shared_counters = {{"set", {{"slice-0", one}, {"slice-1", one}}}};
  std::vector<DraDeviceClass> classes = GpuClass();
  classes.push_back({"mig.nvidia.com", {"device.attributes['gpu.nvidia.com'].type == 'mig'"}, ""});
  DraClaim mig_claim = WholeClaim("m", "n1", "mig-0");
  struct Row {
    const char* name;
    std::vector<DraClaim> claims;
    int64_t gpu_blocked, mig_blocked, gpu_shared;
  };
  const std::vector<Row> rows = {
      {"nothing held", {}, 0, 0, 0},
      {"one share", {ShareClaim("research", "a", "n1", "gpu-0", 10)}, 0, 1, 1},
      {"three shares",
       {ShareClaim("research", "a", "n1", "gpu-0", 10),
        ShareClaim("research", "b", "n1", "gpu-0", 10), ShareClaim("acme", "c", "n1", "gpu-0", 10)},
       0,
       1,
       1},
      {"the placement held", {mig_claim}, 1, 0, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const DraState dra = MakeDraState({slice}, row.claims, classes);
    const DraClassesOnNode* on = dra.ClassesOnNode("n1");
    ASSERT_NE(on, nullptr);
    EXPECT_EQ(on->at(0).blocked, row.gpu_blocked);
    EXPECT_EQ(on->at(1).blocked, row.mig_blocked);
    EXPECT_EQ(on->at(0).shared, row.gpu_shared);
  }
}

}  // namespace
}  // namespace topology
