#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/views/audit_fixture.h"
#include "views/audit.h"

namespace views {
namespace {

using testing::AuditModel;
using ::testing::ElementsAre;
using testing::ExclusiveNode;
using testing::GpuPod;
using ::testing::HasSubstr;
using testing::MigNode;
using testing::SharedNode;

const HeldDevice* FindHeld(const std::vector<TenantDeal>& deals, const std::string& tenant,
                           const std::string& pod) {
  for (const TenantDeal& d : deals) {
    if (d.tenant != tenant) continue;
    for (const HeldDevice& h : d.devices) {
      if (h.namespace_name + "/" + h.name == pod) return &h;
    }
  }
  return nullptr;
}

struct DealCase {
  std::string name;
  std::vector<topology::NodeFacts> nodes;
  std::vector<topology::PodFacts> pods;
  std::string tenant, pod;
  DeviceBoundary boundary;
  std::vector<std::string> co_tenants;
  bool certain;
  std::string says;  // part of the sentence a customer reads
};

TEST(TenantDealsTest, EachPodGetsTheBoundaryItsResourceGives) {
  const std::vector<DealCase> cases = {
      {"MIG instance alone on its GPU",
       {MigNode("mig", 1, {{"nvidia.com/mig-3g.40gb", "1"}, {"nvidia.com/mig-1g.10gb", "2"}})},
       {GpuPod("acme", "llm", "mig", {{"nvidia.com/mig-3g.40gb", "1"}})},
       "acme",
       "acme/llm",
       DeviceBoundary::kMigInstance,
       {},
       true,
       "No other tenant holds a MIG instance of this GPU"},
      {"MIG instance beside another tenant's on a one-GPU node",
       {MigNode("mig", 1, {{"nvidia.com/mig-3g.40gb", "1"}, {"nvidia.com/mig-1g.10gb", "2"}})},
       {GpuPod("acme", "llm", "mig", {{"nvidia.com/mig-3g.40gb", "1"}}),
        GpuPod("bank-prod", "risk", "mig", {{"nvidia.com/mig-1g.10gb", "1"}})},
       "acme",
       "acme/llm",
       DeviceBoundary::kMigInstance,
       {"bank"},
       true,
       "Other instances of the same physical GPU: bank"},
      {"MIG instances on a two-GPU node: the neighbour may be on the other GPU",
       {MigNode("mig", 2, {{"nvidia.com/mig-3g.40gb", "2"}})},
       {GpuPod("acme", "llm", "mig", {{"nvidia.com/mig-3g.40gb", "1"}}),
        GpuPod("bank-prod", "risk", "mig", {{"nvidia.com/mig-3g.40gb", "1"}})},
       "acme",
       "acme/llm",
       DeviceBoundary::kMigInstance,
       {"bank"},
       false,
       "possibly bank"},
      {"MIG shared by time-slicing, the tenant's alone",
       {MigNode("mig", 1, {{"nvidia.com/mig-3g.40gb.shared", "4"}})},
       {GpuPod("research", "a", "mig", {{"nvidia.com/mig-3g.40gb.shared", "1"}}),
        GpuPod("research-dev", "b", "mig", {{"nvidia.com/mig-3g.40gb.shared", "1"}})},
       "research",
       "research/a",
       DeviceBoundary::kMigTimeSliced,
       {},
       true,
       "a hardware boundary to other tenants"},
      {"MIG shared by time-slicing with another tenant",
       {MigNode("mig", 1, {{"nvidia.com/mig-3g.40gb.shared", "4"}}, "success",
                {{"nvidia.com/mig-3g.40gb.count", "1"}})},
       {GpuPod("research", "a", "mig", {{"nvidia.com/mig-3g.40gb.shared", "1"}}),
        GpuPod("gpu-ops", "probe", "mig", {{"nvidia.com/mig-3g.40gb.shared", "1"}})},
       "research",
       "research/a",
       DeviceBoundary::kMigTimeSliced,
       {"gpu-platform"},
       true,
       "no hardware boundary to them"},
      {"whole GPU",
       {ExclusiveNode("excl", 2)},
       {GpuPod("acme", "train", "excl", {{"nvidia.com/gpu", "1"}}),
        GpuPod("bank-prod", "risk", "excl", {{"nvidia.com/gpu", "1"}})},
       "acme",
       "acme/train",
       DeviceBoundary::kWholeGpu,
       {},
       true,
       "the physical device is this tenant's alone"},
      {"time-sliced without co-tenants",
       {SharedNode("ts", "time-slicing", 2, {{"nvidia.com/gpu.shared", "8"}}, "gpu-timeslice")},
       {GpuPod("research", "nb", "ts", {{"nvidia.com/gpu.shared", "1"}}, 0),
        GpuPod("gpu-ops", "probe", "ts", {{"nvidia.com/gpu.shared", "1"}}, 1)},
       "research",
       "research/nb",
       DeviceBoundary::kTimeSliced,
       {},
       true,
       "no other tenant on it"},
      {"time-sliced with a co-tenant on the same GPU",
       {SharedNode("ts", "time-slicing", 2, {{"nvidia.com/gpu.shared", "8"}}, "gpu-timeslice")},
       {GpuPod("research", "nb", "ts", {{"nvidia.com/gpu.shared", "1"}}, 0),
        GpuPod("gpu-ops", "probe", "ts", {{"nvidia.com/gpu.shared", "1"}}, 0)},
       "research",
       "research/nb",
       DeviceBoundary::kTimeSliced,
       {"gpu-platform"},
       true,
       "one memory heap and one fault domain"},
      {"time-sliced, GPU not recorded: co-tenants of the node's GPUs, possibly",
       {SharedNode("ts", "time-slicing", 2, {{"nvidia.com/gpu.shared", "8"}}, "gpu-timeslice")},
       {GpuPod("research", "nb", "ts", {{"nvidia.com/gpu.shared", "1"}}),
        GpuPod("gpu-ops", "probe", "ts", {{"nvidia.com/gpu.shared", "1"}}, 1)},
       "research",
       "research/nb",
       DeviceBoundary::kTimeSliced,
       {"gpu-platform"},
       false,
       "possibly shared with"},
      {"MPS with a co-tenant",
       {SharedNode("mps", "mps", 1, {{"nvidia.com/gpu.shared", "4"}})},
       {GpuPod("research", "infer", "mps", {{"nvidia.com/gpu.shared", "1"}}),
        GpuPod("gpu-ops", "probe", "mps", {{"nvidia.com/gpu.shared", "1"}})},
       "research",
       "research/infer",
       DeviceBoundary::kMps,
       {"gpu-platform"},
       true,
       "one MPS control daemon"},
  };
  for (const DealCase& c : cases) {
    SCOPED_TRACE(c.name);
    AuditModel model(c.nodes, c.pods);
    std::vector<TenantDeal> deals = TenantDeals(*model.state);
    const HeldDevice* held = FindHeld(deals, c.tenant, c.pod);
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(BoundaryName(held->boundary), BoundaryName(c.boundary));
    EXPECT_EQ(held->co_tenants, c.co_tenants);
    EXPECT_EQ(held->co_tenants_certain, c.certain);
    EXPECT_THAT(held->isolation, HasSubstr(c.says));
  }
}

TEST(TenantDealsTest, NodesListWhatIsSharedAboveTheDevice) {
  AuditModel model(
      {SharedNode("mps", "mps", 1, {{"nvidia.com/gpu.shared", "4"}}), ExclusiveNode("excl", 2)},
      {GpuPod("research", "infer", "mps", {{"nvidia.com/gpu.shared", "1"}}),
       GpuPod("gpu-ops", "probe", "mps", {{"nvidia.com/gpu.shared", "1"}}),
       GpuPod("research", "train", "excl", {{"nvidia.com/gpu", "1"}})});
  std::vector<TenantDeal> deals = TenantDeals(*model.state);
  const TenantDeal* research = nullptr;
  for (const TenantDeal& d : deals) {
    if (d.tenant == "research") research = &d;
  }
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->tier, "trusted");
  ASSERT_EQ(research->nodes.size(), 2u);
  EXPECT_EQ(research->nodes[0].node, "excl");
  EXPECT_TRUE(research->nodes[0].other_tenants.empty());
  EXPECT_THAT(research->nodes[0].shared,
              ElementsAre("host kernel", "NVIDIA driver and kernel modules",
                          "container runtime and NVIDIA container toolkit"));
  EXPECT_EQ(research->nodes[1].node, "mps");
  EXPECT_THAT(research->nodes[1].shared, ::testing::Contains("MPS control daemon"));
  EXPECT_THAT(research->nodes[1].other_tenants, ElementsAre("gpu-platform"));
  EXPECT_THAT(research->limits, ::testing::Contains("shared replicas per pod: at most 1"));
}

topology::DraClaim AllocatedClaim(const std::string& ns, const std::string& name,
                                  const std::string& device, std::vector<std::string> selectors) {
  topology::DraClaim c;
  c.namespace_name = ns;
  c.name = name;
  c.uid = ns + "-" + name;
  c.requests.push_back({"gpu", "mig.nvidia.com", std::move(selectors), false, 1, false});
  c.device_classes = {"mig.nvidia.com"};
  c.allocated = true;
  c.allocated_node = "dra-1";
  c.results.push_back({"gpu", "gpu.nvidia.com", "dra-1", device});
  return c;
}

// DRA names each device and a MIG device's parent GPU: co-tenants are certain, and the claim's
// selectors are what the allocator enforced.
TEST(TenantDealsTest, ClaimsNameTheirGpuAndCarryTheirSelectors) {
  topology::DraDevice acme_slice =
      testing_dra::NvidiaDevice("dra-1", "gpu-0-mig-0", "mig", "3g.40gb");
  acme_slice.parent_uuid = "GPU-aaaa";
  topology::DraDevice bank_slice =
      testing_dra::NvidiaDevice("dra-1", "gpu-0-mig-1", "mig", "3g.40gb");
  bank_slice.parent_uuid = "GPU-aaaa";
  topology::DraDevice research_gpu = testing_dra::NvidiaDevice("dra-1", "gpu-1");
  research_gpu.uuid = "GPU-bbbb";
  topology::ClusterData data = AuditModel::Data({}, {});
  data.dra_slices.push_back(
      testing_dra::NodeSlice("dra-1", {acme_slice, bank_slice, research_gpu}));
  const std::string selector = R"(device.attributes["gpu.nvidia.com"].profile in ["3g.40gb"])";
  data.dra_claims = {AllocatedClaim("acme", "slice", "gpu-0-mig-0", {selector}),
                     AllocatedClaim("bank-prod", "slice", "gpu-0-mig-1", {}),
                     AllocatedClaim("research", "gpu", "gpu-1", {})};
  AuditModel model(std::move(data), testing::AuditDemoPolicy());
  std::vector<TenantDeal> deals = TenantDeals(*model.state);
  const HeldDevice* acme = FindHeld(deals, "acme", "acme/slice");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(acme->kind, "claim");
  EXPECT_EQ(acme->node, "dra-1");
  EXPECT_EQ(acme->resource, "gpu.nvidia.com/dra-1/gpu-0-mig-0");
  EXPECT_EQ(BoundaryName(acme->boundary), "mig-instance");
  EXPECT_EQ(acme->gpu, "GPU-aaaa");
  EXPECT_EQ(acme->co_tenants, std::vector<std::string>{"bank"});
  EXPECT_TRUE(acme->co_tenants_certain);
  const HeldDevice* research = FindHeld(deals, "research", "research/gpu");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(BoundaryName(research->boundary), "whole-gpu");
  EXPECT_EQ(research->gpu, "GPU-bbbb");
  EXPECT_TRUE(research->co_tenants.empty());
  for (const TenantDeal& d : deals) {
    if (d.tenant != "acme") continue;
    ASSERT_EQ(d.claim_selectors.size(), 1u);
    EXPECT_EQ(d.claim_selectors[0].claim, "acme/slice");
    EXPECT_THAT(d.claim_selectors[0].selectors, ElementsAre(selector));
  }
}

TEST(TenantDealsTest, EveryPolicyTenantIsListedEvenWithoutDevices) {
  AuditModel model({ExclusiveNode("excl", 1)}, {});
  std::vector<std::string> names;
  for (const TenantDeal& d : TenantDeals(*model.state)) names.push_back(d.tenant);
  EXPECT_THAT(names, ElementsAre("acme", "bank", "gpu-platform", "research"));
}

}  // namespace
}  // namespace views
