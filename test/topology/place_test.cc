// Place: bind's decision on the chosen node. A verdict, never an error; the shared GPU and the
// MIG profile picked when the pod fits.
#include "topology/place.h"

#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"

namespace topology {
namespace {

using namespace testing_fleet;  // NOLINT: the fixture's small vocabulary

const DraState kNoDra;  // a cluster without DRA

class PlaceTest : public FleetTest {
 protected:
  // The fixture's node `kind` as the snapshot would hold it, named `name`.
  NodeState At(const std::string& name, const std::string& kind, NodeOccupancy occupancy) {
    NodeState state;
    state.facts.name = name;
    state.supply = Supply(kind);
    state.occupancy = std::move(occupancy);
    return state;
  }
};

TEST_F(PlaceTest, MigPodTakesItsProfile) {
  PlaceOutcome o = Place(Demand({{"nvidia.com/mig-3g.40gb", 1}}), Context(policy_, "acme"),
                         At("gpu-1", "mig", Used({{"nvidia.com/mig-3g.40gb", 1}})), {}, kNoDra);
  ASSERT_TRUE(o.placed()) << o.reason;
  EXPECT_EQ(o.reason, "");
  EXPECT_EQ(o.placement.node, "gpu-1");
  EXPECT_EQ(o.placement.tenant, "acme");
  EXPECT_EQ(o.placement.tier, "untrusted");
  EXPECT_EQ(o.placement.pool, "gpu-mig");
  EXPECT_EQ(o.placement.mig_profile, "3g.40gb");
  EXPECT_FALSE(o.placement.gpu_index.has_value());
}

TEST_F(PlaceTest, SharedPodIsPromisedTheFullestGpuWithRoom) {
  // GPU 0 has 16,960 MiB left, GPU 1 has 36,864: the best fit for 16 GiB is GPU 0.
  PlaceOutcome o = Place(
      Demand({{"nvidia.com/gpu.shared", 1}}, 16384), Context(policy_, "research"),
      At("ts-1", "ts", Used({{"nvidia.com/gpu.shared", 2}}, {{0, 24000}, {1, 4096}})), {}, kNoDra);
  ASSERT_TRUE(o.placed()) << o.reason;
  EXPECT_EQ(o.placement.gpu_index, 0);
  EXPECT_EQ(o.placement.mig_profile, "");
}

TEST_F(PlaceTest, NoLongerFittingIsAVerdictWithItsReason) {
  PlaceOutcome full = Place(Demand({{"nvidia.com/mig-3g.40gb", 1}}), Context(policy_, "acme"),
                            At("gpu-1", "mig", Used({{"nvidia.com/mig-3g.40gb", 2}})), {}, kNoDra);
  EXPECT_FALSE(full.placed());
  EXPECT_EQ(full.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(full.rule, Rule::kExhausted);
  EXPECT_EQ(full.reason, "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2");
  EXPECT_EQ(full.placement.tenant, "acme");  // who it was for, for the audit record

  PlaceOutcome wrong_pool = Place(Demand({{"nvidia.com/gpu.shared", 1}}), Context(policy_, "acme"),
                                  At("ts-1", "ts", {}), {}, kNoDra);
  EXPECT_EQ(wrong_pool.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(wrong_pool.reason, "pool gpu-timeslice (timeslice) is not allowed for tier untrusted");
}

TEST_F(PlaceTest, PodWithoutGpuDemandIsPlacedAsIs) {
  PlaceOutcome o = Place(GpuDemand{}, Context(policy_, "acme"), At("cpu-1", "cpu", {}), {}, kNoDra);
  EXPECT_TRUE(o.placed());
  EXPECT_EQ(o.placement.node, "cpu-1");
  EXPECT_EQ(o.placement.mig_profile, "");
}

// The quota is checked against what the tenant holds, before the node's capacity: at quota the
// pod is refused as unresolvable (no preemption of another tenant can make room in the tenant's
// own budget), under it it is placed.
TEST_F(PlaceTest, TenantQuotaIsCheckedAgainstItsHoldings) {
  Policy policy = policy_;
  for (Tenant& t : policy.tenants) {
    if (t.name == "acme") t.quota.mig_instances = {{"3g.40gb", 2}};
  }
  const GpuDemand one = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  QuotaUsage held;
  held.mig_instances = {{"3g.40gb", 2}};
  PlaceOutcome at = Place(one, Context(policy, "acme"), At("gpu-1", "mig", {}), held, kNoDra);
  EXPECT_FALSE(at.placed());
  EXPECT_EQ(at.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(at.rule, Rule::kTenantQuota);
  EXPECT_EQ(at.reason, "tenant acme quota: nvidia.com/mig-3g.40gb 2 of 2 held, 1 requested");

  held.mig_instances = {{"3g.40gb", 1}};
  PlaceOutcome under = Place(one, Context(policy, "acme"), At("gpu-1", "mig", {}), held, kNoDra);
  EXPECT_TRUE(under.placed()) << under.reason;
  EXPECT_EQ(under.placement.mig_profile, "3g.40gb");

  // Quota comes before capacity: on a full node the tenant at its quota hears about the quota,
  // the one thing no eviction of another tenant's pod changes.
  held.mig_instances = {{"3g.40gb", 2}};
  PlaceOutcome full =
      Place(one, Context(policy, "acme"), At("gpu-1", "mig", Used({{"nvidia.com/mig-3g.40gb", 2}})),
            held, kNoDra);
  EXPECT_EQ(full.rule, Rule::kTenantQuota);
  held.mig_instances = {{"3g.40gb", 1}};
  PlaceOutcome under_but_full =
      Place(one, Context(policy, "acme"), At("gpu-1", "mig", Used({{"nvidia.com/mig-3g.40gb", 2}})),
            held, kNoDra);
  EXPECT_EQ(under_but_full.rule, Rule::kExhausted);
}

}  // namespace
}  // namespace topology
