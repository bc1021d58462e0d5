// Where a pending claim could go: per node and request, the free devices every selector allows,
// the held ones, and the devices each tenant limit excluded; alternatives, All, unknown classes
// and selectors outside the evaluated subset.
#include "topology/dra/claim_fit.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "topology/dra/model.h"

namespace topology {
namespace {

constexpr char kMigClass[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";
constexpr char kGpuClass[] =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";
// As the webhook writes the tenant's migProfiles [1g.10gb].
constexpr char kOnlySmallMig[] =
    "(\"type\" in device.attributes[\"gpu.nvidia.com\"] && "
    "device.attributes[\"gpu.nvidia.com\"].type != \"mig\") || (\"profile\" in "
    "device.attributes[\"gpu.nvidia.com\"] && device.attributes[\"gpu.nvidia.com\"].profile in "
    "[\"1g.10gb\"])";

DraClaim Holding(const std::string& name, const std::string& node, const std::string& device) {
  DraClaim c;
  c.namespace_name = "team-a";
  c.name = name;
  c.allocated = true;
  c.allocated_node = node;
  c.results = {{"mig", "gpu.nvidia.com", node, device}};
  return c;
}

DraRequest Request(const std::string& name, const std::string& device_class,
                   std::vector<std::string> selectors = {}) {
  DraRequest r;
  r.name = name;
  r.device_class = device_class;
  r.selectors = std::move(selectors);
  return r;
}

DraClaim Pending(std::vector<DraRequest> requests) {
  DraClaim c;
  c.namespace_name = "team-a";
  c.name = "pending";
  c.requests = std::move(requests);
  return c;
}

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;

// A device's memory of at most 20Gi, as the webhook writes gpuMemoryPerPod: 20Gi.
constexpr char kUpTo20Gi[] =
    "\"memory\" in device.capacity[\"gpu.nvidia.com\"] && "
    "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"20480Mi\")) <= 0";

// The tenant's mig-profiles as the webhook writes it: into requests for MIG devices only.
const RequestLimitsFor kLimits = [](const std::string& device_class) {
  RequestLimits limits;
  limits.own = {{"mig-profiles", kOnlySmallMig}};
  if (device_class == "mig.nvidia.com") {
    limits.required = {"mig-profiles"};
    limits.joined = {{kOnlySmallMig, {"mig-profiles"}}};
  }
  return limits;
};

// mig-profiles and gpu-memory, joined into one selector for MIG requests; `memory_implied`:
// every MIG device published has at most 20Gi.
RequestLimitsFor ProfilesAndMemory(bool memory_implied) {
  return [memory_implied](const std::string&) {
    RequestLimits limits;
    limits.own = {{"mig-profiles", kOnlySmallMig}, {"gpu-memory", kUpTo20Gi}};
    limits.required = {"mig-profiles", "gpu-memory"};
    limits.joined = {
        {absl::StrCat("(", kOnlySmallMig, ") && ", kUpTo20Gi), {"mig-profiles", "gpu-memory"}},
        {kOnlySmallMig, {"mig-profiles"}}};
    if (memory_implied) limits.implied = {"gpu-memory"};
    return limits;
  };
}

// A MIG device that publishes `memory_gi` GiB of memory.
DraDevice MigWithMemory(const std::string& name, const std::string& profile, int64_t memory_gi) {
  DraDevice d = testing_dra::NvidiaDevice("node-a", name, "mig", profile);
  d.capacity["gpu.nvidia.com/memory"] = Quantity::FromUnits(memory_gi << 30);
  return d;
}

class DraClaimFitTest : public testing::Test {
 protected:
  // node-a: a MIG GPU cut 1g.10gb (held by another claim) + 3g.40gb (free); node-b: a full GPU.
  DraState State(std::vector<DraClaim> held = {Holding("other", "node-a", "gpu-0-mig-1g")}) {
    return MakeDraState(
        {NodeSlice("node-a", {NvidiaDevice("node-a", "gpu-0-mig-1g", "mig", "1g.10gb"),
                              NvidiaDevice("node-a", "gpu-0-mig-3g", "mig", "3g.40gb")}),
         NodeSlice("node-b", {NvidiaDevice("node-b", "gpu-0", "gpu")})},
        std::move(held),
        {{"mig.nvidia.com", {kMigClass}, ""}, {"gpu.nvidia.com", {kGpuClass}, ""}});
  }
};

TEST_F(DraClaimFitTest, TheTenantLimitAndAHeldDeviceLeaveNoMigInstance) {
  std::vector<ClaimOnNode> nodes = ClaimCandidates(
      Pending({Request("mig", "mig.nvidia.com", {kOnlySmallMig})}), State(), kLimits);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, "node-a");
  EXPECT_EQ(nodes[0].answer, RequestOnNode::Answer::kNo);
  const RequestOnNode& a = nodes[0].requests.at(0);
  EXPECT_EQ(a.free_matching, 0);
  EXPECT_EQ(a.held_matching, 1);
  EXPECT_EQ(a.excluded_by_limit.at("mig-profiles"), 1);
  EXPECT_TRUE(a.limits_not_in_claim.empty());
  EXPECT_EQ(RequestOnNodeText(a),
            "mig (mig.nvidia.com): 1 wanted, 0 free match; 1 held by claims; 1 excluded by "
            "mig-profiles");
  // The full GPU fails the class's own selector: not the tenant's doing.
  EXPECT_EQ(nodes[1].node, "node-b");
  EXPECT_EQ(nodes[1].answer, RequestOnNode::Answer::kNo);
  EXPECT_TRUE(nodes[1].requests.at(0).excluded_by_limit.empty());
  EXPECT_EQ(nodes[1].requests.at(0).free_matching, 0);
}

TEST_F(DraClaimFitTest, AFreeAllowedInstanceIsAYes) {
  std::vector<ClaimOnNode> nodes = ClaimCandidates(
      Pending({Request("mig", "mig.nvidia.com", {kOnlySmallMig})}), State({}), kLimits);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].answer, RequestOnNode::Answer::kYes);
  EXPECT_EQ(nodes[0].requests.at(0).free_matching, 1);
  EXPECT_EQ(AnswerName(nodes[0].answer), std::string("yes"));
}

TEST_F(DraClaimFitTest, ALimitTheClaimDoesNotCarryIsReportedAndNotApplied) {
  std::vector<ClaimOnNode> nodes =
      ClaimCandidates(Pending({Request("mig", "mig.nvidia.com")}), State(), kLimits);
  const RequestOnNode& a = nodes.at(0).requests.at(0);
  // The allocator evaluates what the claim says: the 3g.40gb is free and matches.
  EXPECT_EQ(nodes[0].answer, RequestOnNode::Answer::kYes);
  EXPECT_EQ(a.free_matching, 1);
  EXPECT_EQ(a.limits_not_in_claim, std::vector<std::string>{"mig-profiles"});
  EXPECT_NE(RequestOnNodeText(a).find("not in the claim, so not enforced: mig-profiles"),
            std::string::npos);
}

// The webhook writes one selector per request, the limits joined: a device it excludes is
// counted under the limit that excluded it, and the claim carries both.
TEST_F(DraClaimFitTest, AJoinedSelectorCountsEachDeviceUnderTheLimitThatExcludedIt) {
  const DraState dra =
      MakeDraState({NodeSlice("node-a", {MigWithMemory("gpu-0-mig-1g", "1g.10gb", 24),
                                         MigWithMemory("gpu-0-mig-3g", "3g.40gb", 40),
                                         MigWithMemory("gpu-1-mig-1g", "1g.10gb", 10)})},
                   {}, {{"mig.nvidia.com", {kMigClass}, ""}});
  const std::string joined = absl::StrCat("(", kOnlySmallMig, ") && ", kUpTo20Gi);
  std::vector<ClaimOnNode> nodes = ClaimCandidates(
      Pending({Request("mig", "mig.nvidia.com", {joined})}), dra, ProfilesAndMemory(false));
  ASSERT_EQ(nodes.size(), 1u);
  const RequestOnNode& a = nodes[0].requests.at(0);
  EXPECT_EQ(a.free_matching, 1);  // the 1g.10gb with 10Gi
  EXPECT_EQ(a.excluded_by_limit,
            (std::map<std::string, int64_t>{{"gpu-memory", 1}, {"mig-profiles", 1}}));
  EXPECT_TRUE(a.limits_not_in_claim.empty());
  EXPECT_TRUE(a.limits_implied.empty());
  EXPECT_EQ(RequestOnNodeText(a),
            "mig (mig.nvidia.com): 1 wanted, 1 free match; 1 excluded by gpu-memory; 1 excluded "
            "by mig-profiles");
}

// Where every device published has memory within the cap the webhook leaves gpu-memory out:
// explain says the devices imply it. Once they do not, the claim goes without it.
TEST_F(DraClaimFitTest, ALimitThePublishedDevicesImplyIsNotReportedAsUnenforced) {
  const DraClaim claim = Pending({Request("mig", "mig.nvidia.com", {kOnlySmallMig})});
  const RequestOnNode implied =
      ClaimCandidates(claim, State({}), ProfilesAndMemory(true)).at(0).requests.at(0);
  EXPECT_TRUE(implied.limits_not_in_claim.empty());
  EXPECT_EQ(implied.limits_implied, std::vector<std::string>{"gpu-memory"});
  EXPECT_NE(RequestOnNodeText(implied).find("; implied by the devices published: gpu-memory"),
            std::string::npos)
      << RequestOnNodeText(implied);
  const RequestOnNode not_implied =
      ClaimCandidates(claim, State({}), ProfilesAndMemory(false)).at(0).requests.at(0);
  EXPECT_EQ(not_implied.limits_not_in_claim, std::vector<std::string>{"gpu-memory"});
  EXPECT_TRUE(not_implied.limits_implied.empty());
}

TEST_F(DraClaimFitTest, OneFittingAlternativeIsEnough) {
  DraRequest big = Request("gpu/big", "gpu.nvidia.com");
  DraRequest small = Request("gpu/small", "mig.nvidia.com", {kOnlySmallMig});
  big.alternative = small.alternative = true;
  std::vector<ClaimOnNode> nodes = ClaimCandidates(Pending({big, small}), State({}), kLimits);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].answer, RequestOnNode::Answer::kYes);  // small fits on node-a
  EXPECT_EQ(nodes[0].requests[0].answer(), RequestOnNode::Answer::kNo);
  EXPECT_EQ(nodes[1].answer, RequestOnNode::Answer::kYes);  // big fits on node-b
  // Two requests (not alternatives) must both fit.
  DraClaim both = Pending({Request("a", "gpu.nvidia.com"), Request("b", "mig.nvidia.com")});
  nodes = ClaimCandidates(both, State({}), kLimits);
  EXPECT_EQ(nodes[0].answer, RequestOnNode::Answer::kNo);
  EXPECT_EQ(nodes[1].answer, RequestOnNode::Answer::kNo);
}

TEST_F(DraClaimFitTest, CountAndAllModes) {
  DraRequest two = Request("mig", "mig.nvidia.com");
  two.count = 2;
  EXPECT_EQ(ClaimCandidates(Pending({two}), State({}), {}).at(0).answer,
            RequestOnNode::Answer::kYes);
  EXPECT_EQ(ClaimCandidates(Pending({two}), State(), {}).at(0).answer, RequestOnNode::Answer::kNo);
  DraRequest all = Request("mig", "mig.nvidia.com");
  all.all = true;
  std::vector<ClaimOnNode> nodes = ClaimCandidates(Pending({all}), State(), {});
  // All wants every matching device: one of them is held.
  EXPECT_EQ(nodes.at(0).answer, RequestOnNode::Answer::kNo);
  EXPECT_EQ(RequestOnNodeText(nodes[0].requests[0]),
            "mig (mig.nvidia.com): all matching wanted, 1 free match; 1 held by claims");
  EXPECT_EQ(ClaimCandidates(Pending({all}), State({}), {}).at(0).answer,
            RequestOnNode::Answer::kYes);
  EXPECT_EQ(nodes.at(1).answer, RequestOnNode::Answer::kNo);  // nothing matches on node-b
}

TEST_F(DraClaimFitTest, UnknownClassesAndUnevaluatedSelectorsAreSaidSo) {
  std::vector<ClaimOnNode> nodes =
      ClaimCandidates(Pending({Request("x", "no-such.example.com")}), State(), {});
  EXPECT_EQ(nodes.at(0).answer, RequestOnNode::Answer::kNo);
  EXPECT_EQ(RequestOnNodeText(nodes[0].requests[0]),
            "x (no-such.example.com): device class no-such.example.com not found");

  nodes = ClaimCandidates(
      Pending({Request("mig", "mig.nvidia.com",
                       {"device.attributes['gpu.nvidia.com'].profile.matches('^1g')"})}),
      State({}), {});
  EXPECT_EQ(nodes.at(0).answer, RequestOnNode::Answer::kUnknown);
  EXPECT_EQ(nodes[0].requests[0].not_evaluated, 2);
  EXPECT_NE(RequestOnNodeText(nodes[0].requests[0]).find("2 not decided (selector not evaluated"),
            std::string::npos)
      << RequestOnNodeText(nodes[0].requests[0]);
  // On node-b the class already says no before the unsupported selector is reached.
  EXPECT_EQ(nodes.at(1).answer, RequestOnNode::Answer::kNo);
}

// A DynamicMIG-style GPU: the whole GPU and the 3g.40gb placements on slices 0-3 and 4-7 draw
// on one counter set; the placement on slices 0-3 is held.
TEST_F(DraClaimFitTest, PartitionableDevicesTheHeldOnesUseUpAreBlocked) {
  auto slices = [](int from, int to) {
    DraCounters c;
    for (int i = from; i < to; ++i) c["memory-slice-" + std::to_string(i)] = Quantity::FromUnits(1);
    return c;
  };
  DraDevice whole = NvidiaDevice("dm", "gpu-0", "gpu");
  whole.consumes_counters = {{"set", slices(0, 8)}};
  DraDevice low = NvidiaDevice("dm", "gpu-0-mig-3g-0", "mig", "3g.40gb");
  low.consumes_counters = {{"set", slices(0, 4)}};
  DraDevice high = NvidiaDevice("dm", "gpu-0-mig-3g-4", "mig", "3g.40gb");
  high.consumes_counters = {{"set", slices(4, 8)}};
  DraSlice gpu = NodeSlice("dm", {whole, low, high});
  gpu.shared_counters = {{"set", slices(0, 8)}};
  const DraState dra =
      MakeDraState({gpu}, {Holding("big", "dm", "gpu-0-mig-3g-0")},
                   {{"mig.nvidia.com", {kMigClass}, ""}, {"gpu.nvidia.com", {kGpuClass}, ""}});

  std::vector<ClaimOnNode> whole_gpu =
      ClaimCandidates(Pending({Request("gpu", "gpu.nvidia.com")}), dra, {});
  ASSERT_EQ(whole_gpu.size(), 1u);
  EXPECT_EQ(whole_gpu[0].answer, RequestOnNode::Answer::kNo);
  EXPECT_EQ(RequestOnNodeText(whole_gpu[0].requests.at(0)),
            "gpu (gpu.nvidia.com): 1 wanted, 0 free match; 1 blocked by the counters held "
            "devices use");

  std::vector<ClaimOnNode> placement =
      ClaimCandidates(Pending({Request("mig", "mig.nvidia.com")}), dra, {});
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0].answer, RequestOnNode::Answer::kYes);
  EXPECT_EQ(RequestOnNodeText(placement[0].requests.at(0)),
            "mig (mig.nvidia.com): 1 wanted, 1 free match; 1 held by claims");

  // allocationMode All cannot have a device that is blocked.
  DraRequest all = Request("gpu", "gpu.nvidia.com");
  all.all = true;
  EXPECT_EQ(ClaimCandidates(Pending({all}), dra, {}).at(0).answer, RequestOnNode::Answer::kNo);
}

TEST_F(DraClaimFitTest, AClaimWithoutRequestsHasNoRows) {
  EXPECT_TRUE(ClaimCandidates(Pending({}), State(), kLimits).empty());
}

}  // namespace
}  // namespace topology
