// DRA extended resources at the fit: which class backs a name, and a node that offers it only
// through DRA devices counted by their class's selectors, minus what claims hold and what pods
// bound there ask before their extended-resource claim is allocated.
#include "topology/dra/extended_resources.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/topology/fleet_fixture.h"
#include "topology/dra/model.h"
#include "topology/place.h"

namespace topology {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;
using testing_fleet::Demand;
using testing_fleet::FleetTest;
using testing_fleet::Node;

constexpr char kGpuClassSelector[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";
constexpr char kMigClassSelector[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";

// An allocated claim holding `device` on `node`, made by the scheduler for `pod_uid` when
// `extended` (else a user's claim).
DraClaim ExtClaim(const std::string& name, const std::string& node, const std::string& device,
                  const std::string& pod_uid = "", bool extended = false) {
  DraClaim c;
  c.namespace_name = "acme";
  c.name = name;
  c.uid = name + "-uid";
  c.allocated = true;
  c.allocated_node = node;
  c.results = {{"r", "gpu.nvidia.com", node, device}};
  if (!pod_uid.empty()) c.reserved_for = {{"pods", "pod-" + pod_uid, pod_uid}};
  c.extended_resource_claim = extended;
  return c;
}

std::vector<DraDeviceClass> NvidiaClasses() {
  return {{"gpu.nvidia.com", {kGpuClassSelector}, "nvidia.com/gpu"},
          {"mig.nvidia.com", {kMigClassSelector}, ""}};
}

class DraExtendedTest : public FleetTest {
 protected:
  // A node without device-plugin GPUs (DRA only), as the snapshot holds it.
  NodeState DraNode(const std::string& name, Labels labels = {}) {
    NodeFacts facts = Node(std::move(labels), {});
    facts.name = name;
    NodeState state;
    state.supply = BuildNodeSupply(facts, common::BuiltinCatalog(), policy_);
    state.facts = std::move(facts);
    return state;
  }
  // Adds a bound pod asking `demand` to the node's holds and occupancy.
  void Bind(NodeState& node, const std::string& uid, GpuDemand demand) {
    auto hold = std::make_shared<PodHold>();
    hold->uid = uid;
    hold->namespace_name = "acme";
    hold->name = "pod-" + uid;
    hold->demand = std::move(demand);
    AddHold(node, std::move(hold), policy_);
  }
  std::string Reason(const GpuDemand& demand, const NodeState& node, const DraState& dra,
                     const std::string& ns = "acme") {
    return FitWithDra(demand, Context(policy_, ns), node, dra).Reason();
  }
};

TEST_F(DraExtendedTest, NamesMapToClasses) {
  std::vector<DraDeviceClass> classes = NvidiaClasses();
  // Two classes claim the same name: without creation times, the lexicographically first wins.
  classes.push_back({"b-mig-1g.gpu.nvidia.com", {kMigClassSelector}, "nvidia.com/mig-1g.10gb"});
  classes.push_back({"a-mig-1g.gpu.nvidia.com", {kMigClassSelector}, "nvidia.com/mig-1g.10gb"});
  DraState dra = MakeDraState({}, {}, classes);
  ASSERT_NE(DraExtendedClass(dra, "nvidia.com/gpu"), nullptr);
  EXPECT_EQ(DraExtendedClass(dra, "nvidia.com/gpu")->name, "gpu.nvidia.com");
  EXPECT_EQ(DraExtendedClass(dra, "nvidia.com/mig-1g.10gb")->name, "a-mig-1g.gpu.nvidia.com");
  ASSERT_NE(DraExtendedClass(dra, "deviceclass.resource.kubernetes.io/mig.nvidia.com"), nullptr);
  EXPECT_EQ(DraExtendedClass(dra, "deviceclass.resource.kubernetes.io/mig.nvidia.com")->name,
            "mig.nvidia.com");
  EXPECT_EQ(DraExtendedClass(dra, "nvidia.com/mig-3g.40gb"), nullptr);
  EXPECT_EQ(DraExtendedClass(dra, "deviceclass.resource.kubernetes.io/nope"), nullptr);
  EXPECT_TRUE(DemandUsesDra(Demand({{"nvidia.com/gpu", 1}}), dra));
  EXPECT_FALSE(DemandUsesDra(Demand({{"nvidia.com/mig-3g.40gb", 1}}), dra));
  EXPECT_FALSE(DemandUsesDra(Demand({{"nvidia.com/gpu", 1}}), DraState()));
}

TEST_F(DraExtendedTest, CountsTheNodesFreeDevicesOfTheClass) {
  const DraState dra = MakeDraState(
      {NodeSlice("free", {NvidiaDevice("free", "gpu-0"), NvidiaDevice("free", "gpu-1"),
                          NvidiaDevice("free", "gpu-0-mig-1g10gb-19-0", "mig", "1g.10gb")}),
       NodeSlice("half", {NvidiaDevice("half", "gpu-0"), NvidiaDevice("half", "gpu-1")}),
       NodeSlice("full", {NvidiaDevice("full", "gpu-0"), NvidiaDevice("full", "gpu-1")}),
       NodeSlice("mig-only",
                 {NvidiaDevice("mig-only", "gpu-0-mig-1g10gb-19-0", "mig", "1g.10gb")})},
      {ExtClaim("half-0", "half", "gpu-0"), ExtClaim("full-0", "full", "gpu-0"),
       ExtClaim("full-1", "full", "gpu-1")},
      NvidiaClasses());
  struct Row {
    const char* name;
    const char* node;
    int64_t count;
    Verdict verdict;
    const char* reason;
  };
  const std::vector<Row> rows = {
      {"two free, one asked", "free", 1, Verdict::kFits, ""},
      {"two free, two asked", "free", 2, Verdict::kFits, ""},
      {"the MIG device is not of the class", "free", 3, Verdict::kUnresolvable,
       "nvidia.com/gpu: requested 3, node has 2 DRA devices of class gpu.nvidia.com"},
      {"one claimed", "half", 1, Verdict::kFits, ""},
      {"one claimed, two asked", "half", 2, Verdict::kUnschedulable,
       "nvidia.com/gpu: requested 2, DRA devices of class gpu.nvidia.com have 1 of 2 free"},
      {"all claimed", "full", 1, Verdict::kUnschedulable,
       "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 2 free)"},
      {"no device of the class", "mig-only", 1, Verdict::kUnresolvable,
       "nvidia.com/gpu: node has no DRA device of class gpu.nvidia.com"},
      {"no DRA devices at all", "elsewhere", 1, Verdict::kUnresolvable,
       "nvidia.com/gpu: node has no DRA device of class gpu.nvidia.com"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const NodeState node = DraNode(row.node);
    const GpuDemand demand = Demand({{"nvidia.com/gpu", row.count}});
    FitResult r = FitWithDra(demand, Context(policy_, "acme"), node, dra);
    EXPECT_EQ(r.verdict, row.verdict);
    EXPECT_EQ(r.Reason(), row.reason);
    // Without DRA the same node has no GPU at all.
    EXPECT_EQ(Fit(demand, Context(policy_, "acme"), node.supply, node.occupancy).rule,
              Rule::kNoGpu);
  }
  const NodeState full = DraNode("full");
  const GpuDemand one_gpu = Demand({{"nvidia.com/gpu", 1}});  // outlives the result's views
  FitResult r = FitWithDra(one_gpu, Context(policy_, "acme"), full, dra);
  EXPECT_EQ(r.rule, Rule::kDraExhausted);
  EXPECT_EQ(r.code(), "dra-exhausted");
  EXPECT_EQ(r.subject, "gpu.nvidia.com");
  EXPECT_EQ(r.requested, 1);
  EXPECT_EQ(r.free, 0);
  EXPECT_EQ(r.capacity, 2);
}

TEST_F(DraExtendedTest, APodBoundBeforeItsClaimIsAllocatedCountsOnce) {
  const std::vector<DraSlice> slices = {
      NodeSlice("n1", {NvidiaDevice("n1", "gpu-0"), NvidiaDevice("n1", "gpu-1")})};
  NodeState node = DraNode("n1");
  Bind(node, "p1", Demand({{"nvidia.com/gpu", 1}}));
  const GpuDemand two = Demand({{"nvidia.com/gpu", 2}});
  const GpuDemand one = Demand({{"nvidia.com/gpu", 1}});

  // Bound, claim not made yet: its demand holds one device.
  const DraState before = MakeDraState(slices, {}, NvidiaClasses());
  EXPECT_EQ(Reason(two, node, before),
            "nvidia.com/gpu: requested 2, DRA devices of class gpu.nvidia.com have 1 of 2 free");
  EXPECT_EQ(Reason(one, node, before), "");

  // Its extended-resource claim is allocated: the device counts as claimed, the pod no more.
  const DraState after = MakeDraState(
      slices, {ExtClaim("p1-gpu", "n1", "gpu-0", "p1", /*extended=*/true)}, NvidiaClasses());
  EXPECT_EQ(Reason(two, node, after),
            "nvidia.com/gpu: requested 2, DRA devices of class gpu.nvidia.com have 1 of 2 free");
  EXPECT_EQ(Reason(one, node, after), "");

  // A user's claim reserved for the same pod does not stand for its extended resource.
  const DraState user_claim =
      MakeDraState(slices, {ExtClaim("p1-own", "n1", "gpu-1", "p1")}, NvidiaClasses());
  EXPECT_EQ(Reason(one, node, user_claim),
            "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 2 free)");
}

TEST_F(DraExtendedTest, DevicePluginAllocatableWins) {
  const DraState dra =
      MakeDraState({NodeSlice("excl", {NvidiaDevice("excl", "gpu-0")})}, {}, NvidiaClasses());
  NodeState node;
  node.facts.name = "excl";
  node.supply = Supply("excl");  // nvidia.com/gpu: 4 from the device plugin
  node.occupancy = testing_fleet::Used({{"nvidia.com/gpu", 4}});
  EXPECT_EQ(Reason(Demand({{"nvidia.com/gpu", 1}}), node, dra),
            "nvidia.com/gpu: requested 1, free 0 of 4");
}

TEST_F(DraExtendedTest, DevicesWhoseSelectorsAreNotEvaluatedDoNotCount) {
  std::vector<DraDeviceClass> classes = {
      {"h100.gpu.nvidia.com",
       {kGpuClassSelector, "device.attributes['gpu.nvidia.com'].productName.matches('H100')"},
       "nvidia.com/gpu"}};
  const DraState dra = MakeDraState(
      {NodeSlice("n1", {NvidiaDevice("n1", "gpu-0"), NvidiaDevice("n1", "gpu-1"),
                        NvidiaDevice("n1", "gpu-0-mig-1g10gb-19-0", "mig", "1g.10gb")})},
      {}, classes);
  // The MIG device fails the first selector, so only the two GPUs reach matches().
  EXPECT_EQ(Reason(Demand({{"nvidia.com/gpu", 1}}), DraNode("n1"), dra),
            "nvidia.com/gpu: node has no DRA device of class h100.gpu.nvidia.com (2 devices not "
            "counted, selector not evaluated: function matches)");
  classes[0].selectors[1] = "device.attributes['gpu.nvidia.com'].productName == 'H100'";
  const DraState failing =
      MakeDraState({NodeSlice("n1", {NvidiaDevice("n1", "gpu-0")})}, {}, classes);
  EXPECT_EQ(Reason(Demand({{"nvidia.com/gpu", 1}}), DraNode("n1"), failing),
            "nvidia.com/gpu: node has no DRA device of class h100.gpu.nvidia.com (1 device not "
            "counted, selector failed: no such key: productName)");
}

TEST_F(DraExtendedTest, TierAndPoolStillApply) {
  Policy policy = policy_;
  policy.tiers.push_back(testing_fleet::MakeTier("shared-only", {SharingMode::kTimeslice}));
  Tenant notebooks;
  notebooks.name = "notebooks";
  notebooks.tier = "shared-only";
  notebooks.namespaces = {"notebooks"};
  policy.tenants.push_back(notebooks);
  const DraState dra = MakeDraState({NodeSlice("n1", {NvidiaDevice("n1", "gpu-0")}),
                                     NodeSlice("ts", {NvidiaDevice("ts", "gpu-0")})},
                                    {}, NvidiaClasses());
  const GpuDemand one = Demand({{"nvidia.com/gpu", 1}});
  EXPECT_EQ(FitWithDra(one, Context(policy, "notebooks"), DraNode("n1"), dra).Reason(),
            "nvidia.com/gpu is exclusive here, not allowed for tier shared-only");
  const NodeState labelled = DraNode("ts", {{"gpu-tenancy.io/pool", "gpu-timeslice"}});
  EXPECT_EQ(FitWithDra(one, Context(policy, "acme"), labelled, dra).Reason(),
            "pool gpu-timeslice (timeslice) is not allowed for tier untrusted");
  EXPECT_EQ(FitWithDra(one, Context(policy, "nobody"), DraNode("n1"), dra).rule,
            Rule::kTenantDenied);
}

TEST_F(DraExtendedTest, DeviceClassNamesAndMigClasses) {
  std::vector<DraDeviceClass> classes = NvidiaClasses();
  classes.push_back(
      {"mig-1g.gpu.nvidia.com",
       {kMigClassSelector, "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"},
       "nvidia.com/mig-1g.10gb"});
  const DraState dra = MakeDraState(
      {NodeSlice("n1", {NvidiaDevice("n1", "gpu-0-mig-1g10gb-19-0", "mig", "1g.10gb"),
                        NvidiaDevice("n1", "gpu-0-mig-3g40gb-9-4", "mig", "3g.40gb")})},
      {}, classes);
  const NodeState node = DraNode("n1");
  // The implicit name of the mig class: both MIG devices.
  PodFacts pod;
  pod.namespace_name = "acme";
  pod.name = "p";
  ContainerFacts c;
  c.limits.emplace("deviceclass.resource.kubernetes.io/mig.nvidia.com", Quantity::FromUnits(2));
  c.limits.emplace("cpu", Quantity::FromUnits(1));
  pod.containers = {c};
  GpuDemand demand;
  ASSERT_TRUE(AddDraExtendedDemand(pod, dra, demand).ok());
  EXPECT_EQ(demand.devices.Get("deviceclass.resource.kubernetes.io/mig.nvidia.com"), 2);
  EXPECT_EQ(demand.devices.size(), 1u);
  EXPECT_EQ(Reason(demand, node, dra), "");
  // A MIG class's own name; the placement records the profile.
  PlaceOutcome placed =
      Place(Demand({{"nvidia.com/mig-1g.10gb", 1}}), Context(policy_, "acme"), node, {}, dra);
  ASSERT_TRUE(placed.placed()) << placed.reason;
  EXPECT_EQ(placed.placement.mig_profile, "1g.10gb");
  EXPECT_EQ(Reason(Demand({{"nvidia.com/mig-1g.10gb", 2}}), node, dra),
            "nvidia.com/mig-1g.10gb: requested 2, node has 1 DRA devices of class "
            "mig-1g.gpu.nvidia.com");

  pod.containers[0].limits["deviceclass.resource.kubernetes.io/mig.nvidia.com"] =
      *Quantity::Parse("1500m");
  GpuDemand bad;
  EXPECT_EQ(AddDraExtendedDemand(pod, dra, bad).code(), absl::StatusCode::kInvalidArgument);
  // Names nothing backs are left out, as before.
  pod.containers[0].limits = {{"example.com/nic", Quantity::FromUnits(1)}};
  GpuDemand none;
  ASSERT_TRUE(AddDraExtendedDemand(pod, dra, none).ok());
  EXPECT_TRUE(none.empty());
}

TEST_F(DraExtendedTest, MixedDemandAndPlaceAndScore) {
  const DraState dra =
      MakeDraState({NodeSlice("mig", {NvidiaDevice("mig", "gpu-7"), NvidiaDevice("mig", "gpu-6")})},
                   {}, NvidiaClasses());
  NodeState node;
  node.facts.name = "mig";
  node.supply = Supply("mig");  // MIG instances from the device plugin, no nvidia.com/gpu
  const GpuDemand mixed = Demand({{"nvidia.com/gpu", 1}, {"nvidia.com/mig-3g.40gb", 1}});
  EXPECT_TRUE(FitWithDra(mixed, Context(policy_, "acme"), node, dra).fits());
  node.occupancy = testing_fleet::Used({{"nvidia.com/mig-3g.40gb", 2}});
  EXPECT_EQ(Reason(mixed, node, dra), "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2");

  const NodeState n1 = DraNode("mig");
  const GpuDemand one = Demand({{"nvidia.com/gpu", 1}});
  PlaceOutcome placed = Place(one, Context(policy_, "acme"), n1, {}, dra);
  ASSERT_TRUE(placed.placed()) << placed.reason;
  EXPECT_EQ(placed.placement.mig_profile, "");
  // Without the DRA state, Place cannot see the devices.
  EXPECT_EQ(Place(one, Context(policy_, "acme"), n1, {}, DraState{}).rule, Rule::kNoGpu);

  // Binpack (the default) prefers the fuller node: 1 of 2 used after placing vs 2 of 2.
  Policy binpack = policy_;
  binpack.scoring = ScoringStrategy::kBinpack;
  PodContext ctx = Context(binpack, "acme");
  NodeState busy = DraNode("mig");
  Bind(busy, "p1", one);
  EXPECT_EQ(ScoreWithDra(one, ctx, n1, dra), 5);
  EXPECT_EQ(ScoreWithDra(one, ctx, busy, dra), 10);
  EXPECT_EQ(ScoreWithDra(Demand({{"nvidia.com/gpu", 3}}), ctx, n1, dra), 0);
}

// A GPU published with its placements as partitionable devices (NVIDIA's DynamicMIG): the
// whole GPU and two 3g.40gb placements draw on one counter set of eight memory slices.
DraSlice PartitionedGpu(const std::string& node) {
  auto slices = [](int from, int to) {
    DraCounters c;
    for (int i = from; i < to; ++i) c["memory-slice-" + std::to_string(i)] = Quantity::FromUnits(1);
    return c;
  };
  DraDevice whole = NvidiaDevice(node, "gpu-0");
  whole.consumes_counters = {{"gpu-0-counter-set", slices(0, 8)}};
  DraDevice low = NvidiaDevice(node, "gpu-0-mig-3g40gb-9-0", "mig", "3g.40gb");
  low.consumes_counters = {{"gpu-0-counter-set", slices(0, 4)}};
  DraDevice high = NvidiaDevice(node, "gpu-0-mig-3g40gb-9-4", "mig", "3g.40gb");
  high.consumes_counters = {{"gpu-0-counter-set", slices(4, 8)}};
  DraSlice s = NodeSlice(node, {whole, low, high});
  s.shared_counters = {{"gpu-0-counter-set", slices(0, 8)}};
  return s;
}

TEST_F(DraExtendedTest, APartitionedGpuIsNotFreeWhileAPlacementIsHeld) {
  const std::vector<DraSlice> slices = {PartitionedGpu("idle"), PartitionedGpu("low"),
                                        PartitionedGpu("whole")};
  const DraState dra = MakeDraState(
      slices,
      {ExtClaim("low-3g", "low", "gpu-0-mig-3g40gb-9-0"), ExtClaim("whole-gpu", "whole", "gpu-0")},
      NvidiaClasses());
  const GpuDemand gpu = Demand({{"nvidia.com/gpu", 1}});
  const GpuDemand mig = Demand({{"deviceclass.resource.kubernetes.io/mig.nvidia.com", 1}});
  const GpuDemand two_mig = Demand({{"deviceclass.resource.kubernetes.io/mig.nvidia.com", 2}});
  EXPECT_EQ(Reason(gpu, DraNode("idle"), dra), "");
  EXPECT_EQ(Reason(two_mig, DraNode("idle"), dra), "");
  EXPECT_EQ(Reason(gpu, DraNode("low"), dra),
            "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)")
      << "the whole GPU shares the counters the held placement uses";
  EXPECT_EQ(Reason(mig, DraNode("low"), dra), "") << "the other placement is on other slices";
  EXPECT_NE(Reason(two_mig, DraNode("low"), dra), "");
  EXPECT_EQ(Reason(mig, DraNode("whole"), dra),
            "no free deviceclass.resource.kubernetes.io/mig.nvidia.com on DRA devices of class "
            "mig.nvidia.com (0 of 2 free)")
      << "no placement while the whole GPU is held";
  // Releasing the placement frees the whole GPU again, in the state updated in place.
  DraState released = dra;
  released.EraseClaim("acme", "low-3g");
  EXPECT_EQ(Reason(gpu, DraNode("low"), released), "");
  EXPECT_NE(Reason(gpu, DraNode("low"), dra), "") << "the state before stays";
}

}  // namespace
}  // namespace topology
