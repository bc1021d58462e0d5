// Preemption under the tenants' contract: who may preempt whom, quota before capacity, whether
// preemption can help on a node, and the victims chosen per resource kind.
#include "topology/preemption.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"
#include "topology/snapshot.h"

namespace topology {
namespace {

using namespace testing_fleet;  // NOLINT: the fixture's small vocabulary

const DraState kNoDraHere;

struct HolderSpec {
  std::string ns;
  std::string name;
  int32_t priority;
  GpuDemand demand;
  std::optional<int> gpu = std::nullopt;
  Labels labels = {};
  bool assumed = false;
};

class PreemptionTest : public FleetTest {
 protected:
  PreemptionTest() {
    Tenant bank;
    bank.name = "bank";
    bank.tier = "untrusted";
    bank.namespaces = {"bank"};
    Tenant dev;
    dev.name = "dev";
    dev.tier = "untrusted";
    dev.namespaces = {"dev"};
    policy_.tenants.push_back(bank);
    policy_.tenants.push_back(dev);
  }

  // The fixture's node `kind` with these pods on it.
  NodeState At(const std::string& kind, const std::vector<HolderSpec>& holders) {
    NodeState state;
    state.facts.name = kind + "-1";
    state.supply = Supply(kind);
    for (const HolderSpec& h : holders) {
      auto hold = std::make_shared<PodHold>();
      hold->uid = "uid-" + h.name;
      hold->namespace_name = h.ns;
      hold->name = h.name;
      hold->demand = h.demand;
      hold->gpu_index = h.gpu;
      hold->assumed = h.assumed;
      hold->priority = h.priority;
      hold->labels = h.labels;
      AddHold(state, std::move(hold), policy_);
    }
    SortHolds(state.holds);
    return state;
  }

  static PodFacts Preemptor(const std::string& ns, int32_t priority) {
    PodFacts pod;
    pod.namespace_name = ns;
    pod.name = "preemptor";
    pod.uid = "uid-preemptor";
    pod.priority = priority;
    return pod;
  }

  TenantRef TenantOf(absl::string_view ns) { return ResolveTenant(policy_, ns, {}); }

  static std::vector<std::string> Names(const std::vector<const PodHold*>& victims) {
    std::vector<std::string> out;
    for (const PodHold* v : victims) out.push_back(v->namespace_name + "/" + v->name);
    return out;
  }
};

TEST_F(PreemptionTest, WhoMayPreemptWhom) {
  CrossTenantPreemption dev_is_fair_game;
  dev_is_fair_game.victims.tenants = {"dev"};
  CrossTenantPreemption trusted_over_untrusted;
  trusted_over_untrusted.preemptors.tiers = {"trusted"};
  trusted_over_untrusted.victims.tiers = {"untrusted"};
  struct Row {
    const char* name;
    std::vector<CrossTenantPreemption> rules;
    const char* preemptor_ns;
    const char* victim_ns;
    bool may;
  };
  const Row rows[] = {
      {"own tenant", {}, "acme", "acme", true},
      {"another tenant, by default", {}, "acme", "bank", false},
      {"a trusted tenant, by default", {}, "research", "acme", false},
      {"a tenant a rule names as victim", {dev_is_fair_game}, "acme", "dev", true},
      {"a rule's victims only", {dev_is_fair_game}, "acme", "bank", false},
      {"a rule by tier", {trusted_over_untrusted}, "research", "bank", true},
      {"a rule by tier, not the other way", {trusted_over_untrusted}, "acme", "research", false},
      {"two namespaces of no tenant", {}, "scratch-1", "scratch-2", false},
      {"one namespace of no tenant", {}, "scratch-1", "scratch-1", true},
      {"a tenant over a namespace of no tenant", {}, "acme", "scratch-1", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Policy policy = policy_;
    policy.preemption.across_tenants = row.rules;
    policy.unknown_tenant_tier = "untrusted";
    EXPECT_EQ(MayPreempt(policy, ResolveTenant(policy, row.preemptor_ns, {}), row.preemptor_ns,
                         ResolveTenant(policy, row.victim_ns, {}), row.victim_ns),
              row.may);
  }
}

TEST_F(PreemptionTest, QuotaComesBeforeCapacity) {
  for (Tenant& t : policy_.tenants) {
    if (t.name == "acme") t.quota.mig_instances = {{"3g.40gb", 1}};
  }
  const GpuDemand one = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const PodContext ctx = Context(policy_, "acme");
  const Tenant& acme = *ctx.tenant.tenant;
  NodeState full = At("mig", {{"bank", "b1", 10, one}, {"bank", "b2", 10, one}});
  const FitResult exhausted = Fit(one, ctx, full.supply, full.occupancy);
  ASSERT_EQ(exhausted.rule, Rule::kExhausted);
  struct Row {
    const char* name;
    int64_t held;
    Rule rule;
  };
  for (const Row& row : {Row{"under the quota: the capacity decides", 0, Rule::kExhausted},
                         Row{"at the quota: the quota decides", 1, Rule::kTenantQuota},
                         Row{"over the quota: the quota decides", 2, Rule::kTenantQuota}}) {
    SCOPED_TRACE(row.name);
    QuotaUsage held;
    if (row.held) held.mig_instances["3g.40gb"] = row.held;
    PodQuotaCheck quota(acme, policy_, one, held);
    FitResult r = QuotaBeforeCapacity(exhausted, &quota, full);
    EXPECT_EQ(r.rule, row.rule);
    if (row.rule == Rule::kTenantQuota) {
      EXPECT_EQ(r.verdict, Verdict::kUnresolvable);
    }
  }
  // An unresolvable fit stands whatever the quota says.
  PodQuotaCheck over(acme, policy_, one, QuotaUsage{{}, {{"3g.40gb", 1}}});
  const GpuDemand shared = Demand({{"nvidia.com/gpu.shared", 1}});  // outlive the result's views
  const NodeSupply ts = Supply("ts");
  FitResult wrong_pool = Fit(shared, ctx, ts, {});
  EXPECT_EQ(QuotaBeforeCapacity(wrong_pool, &over, full).rule, Rule::kTierPool);
  EXPECT_EQ(QuotaBeforeCapacity(exhausted, nullptr, full).rule, Rule::kExhausted);
}

TEST_F(PreemptionTest, OverQuotaOnlyWhereItsOwnLowerPriorityPodsFreeIt) {
  for (Tenant& t : policy_.tenants) {
    if (t.name == "acme") t.quota.mig_instances = {{"3g.40gb", 1}};
  }
  const GpuDemand one = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const PodContext ctx = Context(policy_, "acme");
  QuotaUsage held;
  held.mig_instances["3g.40gb"] = 1;  // acme's one 3g.40gb, somewhere
  struct Row {
    const char* name;
    std::vector<HolderSpec> holders;
    Verdict verdict;
    std::string reason;
  };
  const std::string at_quota = "tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested";
  const Row rows[] = {
      {"its own lower-priority pod holds it here",
       {{"acme", "old", 500, one}},
       Verdict::kUnschedulable,
       at_quota + "; preempting its own lower-priority pods here would free it"},
      {"its own pod here has the same priority",
       {{"acme", "old", 1000, one}},
       Verdict::kUnresolvable,
       at_quota},
      {"its pod is elsewhere; another tenant's pod here",
       {{"bank", "b", 10, one}},
       Verdict::kUnresolvable,
       at_quota},
      {"its own pod here is mid-bind",
       {{"acme", "new", 10, one, std::nullopt, {}, true}},
       Verdict::kUnresolvable,
       at_quota},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    NodeState node = At("mig", row.holders);
    PodFacts pod = Preemptor("acme", 1000);
    // One check per node set: it remembers views into the last node's supply.
    PodQuotaCheck quota(*ctx.tenant.tenant, policy_, one, held);
    PreemptionRoom room(one, ctx, pod, &held, kNoDraHere,
                        [&](absl::string_view ns) { return TenantOf(ns); });
    FitResult rejection =
        QuotaBeforeCapacity(Fit(one, ctx, node.supply, node.occupancy), &quota, node);
    ASSERT_EQ(rejection.rule, Rule::kTenantQuota);
    FitResult r = room.Classify(rejection, node);
    EXPECT_EQ(r.verdict, row.verdict);
    EXPECT_EQ(r.Reason(), row.reason);
  }
}

TEST_F(PreemptionTest, FullNodesFailOnlyWherePreemptablePodsMakeRoom) {
  const GpuDemand one = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const GpuDemand small = Demand({{"nvidia.com/mig-1g.10gb", 1}});
  CrossTenantPreemption dev_is_fair_game;
  dev_is_fair_game.victims.tenants = {"dev"};
  struct Row {
    const char* name;
    std::vector<HolderSpec> holders;
    std::vector<CrossTenantPreemption> rules;
    Verdict verdict;
  };
  const Row rows[] = {
      {"another tenant's pods, protected",
       {{"bank", "b1", 10, one}, {"bank", "b2", 10, one}},
       {},
       Verdict::kUnresolvable},
      {"its own lower-priority pod",
       {{"bank", "b1", 10, one}, {"acme", "a1", 10, one}},
       {},
       Verdict::kUnschedulable},
      {"a preemptible tenant's pod",
       {{"bank", "b1", 10, one}, {"dev", "d1", 10, one}},
       {dev_is_fair_game},
       Verdict::kUnschedulable},
      {"own pods, but on the wrong profile",
       {{"bank", "b1", 10, one}, {"bank", "b2", 10, one}, {"acme", "a1", 1, small}},
       {},
       Verdict::kUnresolvable},
      {"own pods of higher priority",
       {{"acme", "a1", 5000, one}, {"acme", "a2", 5000, one}},
       {},
       Verdict::kUnresolvable},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    policy_.preemption.across_tenants = row.rules;
    const PodContext ctx = Context(policy_, "acme");
    NodeState node = At("mig", row.holders);
    PodFacts pod = Preemptor("acme", 1000);
    PreemptionRoom room(one, ctx, pod, nullptr, kNoDraHere,
                        [&](absl::string_view ns) { return TenantOf(ns); });
    FitResult fit = Fit(one, ctx, node.supply, node.occupancy);
    ASSERT_EQ(fit.rule, Rule::kExhausted);
    FitResult r = room.Classify(fit, node);
    EXPECT_EQ(r.verdict, row.verdict);
    if (row.verdict == Verdict::kUnresolvable) {
      EXPECT_EQ(r.Reason(),
                "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2; no pod here that it may "
                "preempt would free enough");
    }
  }
}

TEST_F(PreemptionTest, VictimsPerResourceKind) {
  const GpuDemand mig3 = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const GpuDemand mig1 = Demand({{"nvidia.com/mig-1g.10gb", 1}});
  const GpuDemand gpu = Demand({{"nvidia.com/gpu", 1}});
  auto shared = [](int64_t mib) { return Demand({{"nvidia.com/gpu.shared", 1}}, mib); };
  struct Row {
    const char* name;
    const char* kind;
    std::vector<HolderSpec> holders;
    GpuDemand demand;
    const char* ns;
    std::vector<std::string> victims;
  };
  const Row rows[] = {
      {"MIG: the lowest-priority holder of the right profile",
       "mig",
       {{"acme", "a-20", 20, mig3}, {"acme", "a-10", 10, mig3}, {"acme", "a-1g", 1, mig1}},
       mig3,
       "acme",
       {"acme/a-10"}},
      {"whole GPUs: as many as asked, lowest priority first",
       "excl",
       {{"acme", "p4", 4, gpu},
        {"acme", "p1", 1, gpu},
        {"acme", "p3", 3, gpu},
        {"acme", "p2", 2, gpu}},
       Demand({{"nvidia.com/gpu", 2}}),
       "acme",
       {"acme/p1", "acme/p2"}},
      {"time-sliced: the pod on the GPU whose memory makes room",
       "ts",
       {{"research", "big", 1, shared(35000), 0},
        {"research", "mid", 1, shared(10000), 1},
        {"research", "small", 1, shared(10000), 1}},
       shared(30000),
       "research",
       {"research/small"}},
      {"time-sliced: a protected tenant's pod stays, the own one goes",
       "ts",
       {{"acme", "other", 1, shared(35000), 0},
        {"research", "mine", 1, shared(12000), 1},
        {"research", "mine-2", 1, shared(5000), 1}},
       shared(30000),
       "research",
       {"research/mine"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const PodContext ctx = Context(policy_, row.ns);
    NodeState node = At(row.kind, row.holders);
    PodFacts pod = Preemptor(row.ns, 1000);
    PreemptionRoom room(row.demand, ctx, pod, nullptr, kNoDraHere,
                        [&](absl::string_view ns) { return TenantOf(ns); });
    PreemptionChoice choice = room.Choose(node, {});
    ASSERT_TRUE(choice.possible) << choice.blocked;
    EXPECT_EQ(Names(choice.victims), row.victims);
    EXPECT_EQ(choice.pdb_violations, 0);
  }
}

TEST_F(PreemptionTest, NoVictimsWhenItFitsOrNothingMayGo) {
  const GpuDemand mig3 = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const PodContext ctx = Context(policy_, "acme");
  PodFacts pod = Preemptor("acme", 1000);
  PreemptionRoom room(mig3, ctx, pod, nullptr, kNoDraHere,
                      [&](absl::string_view ns) { return TenantOf(ns); });
  PreemptionChoice room_now = room.Choose(At("mig", {{"bank", "b1", 10, mig3}}), {});
  EXPECT_TRUE(room_now.possible);
  EXPECT_TRUE(room_now.victims.empty());

  PreemptionChoice protected_only =
      room.Choose(At("mig", {{"bank", "b1", 10, mig3}, {"bank", "b2", 10, mig3}}), {});
  EXPECT_FALSE(protected_only.possible);
  EXPECT_EQ(protected_only.blocked, "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2");

  PreemptionChoice mid_bind = room.Choose(
      At("mig", {{"acme", "a1", 10, mig3, std::nullopt, {}, true}, {"bank", "b1", 1, mig3}}), {});
  EXPECT_FALSE(mid_bind.possible);
}

TEST_F(PreemptionTest, BudgetsDecideBetweenEqualVictims) {
  const GpuDemand mig3 = Demand({{"nvidia.com/mig-3g.40gb", 1}});
  const PodContext ctx = Context(policy_, "acme");
  PodFacts pod = Preemptor("acme", 1000);
  PreemptionRoom room(mig3, ctx, pod, nullptr, kNoDraHere,
                      [&](absl::string_view ns) { return TenantOf(ns); });
  DisruptionBudget serving;
  serving.namespace_name = "acme";
  serving.name = "serving";
  serving.selector.match_labels = {{"app", "serving"}};
  serving.disruptions_allowed = 0;
  const Labels is_serving = {{"app", "serving"}};
  // a-1 would go first by name; its budget allows no disruption, so a-2 goes instead.
  NodeState node = At("mig", {{"acme", "a-1", 10, mig3, std::nullopt, is_serving},
                              {"acme", "a-2", 10, mig3, std::nullopt, {{"app", "batch"}}}});
  PreemptionChoice choice = room.Choose(node, {serving});
  EXPECT_EQ(Names(choice.victims), std::vector<std::string>{"acme/a-2"});
  EXPECT_EQ(choice.pdb_violations, 0);
  // Both under the budget: one must go, and it is counted as a violation.
  NodeState both = At("mig", {{"acme", "a-1", 10, mig3, std::nullopt, is_serving},
                              {"acme", "a-2", 10, mig3, std::nullopt, is_serving}});
  PreemptionChoice forced = room.Choose(both, {serving});
  EXPECT_EQ(forced.victims.size(), 1u);
  EXPECT_EQ(forced.pdb_violations, 1);
}

TEST(BudgetViolationsTest, CountsAsTheSchedulerDoes) {
  DisruptionBudget one;
  one.namespace_name = "team";
  one.name = "web";
  one.selector.match_expressions = {{"app", LabelRequirement::Op::kIn, {"web", "api"}}};
  one.disruptions_allowed = 1;
  one.disrupted_pods = {"web-0"};
  DisruptionBudget empty_selector;
  empty_selector.namespace_name = "team";
  empty_selector.name = "all";
  const Labels web = {{"app", "web"}};
  const Labels api = {{"app", "api"}};
  const Labels none;
  std::vector<BudgetedPod> pods = {
      {"team", "web-0", &web},   // already disrupted: costs nothing
      {"team", "web-1", &web},   // the one allowed disruption
      {"team", "api-0", &api},   // past the budget
      {"other", "web-2", &web},  // another namespace's budget does not apply
      {"team", "bare", &none},   // no labels, no budget
  };
  EXPECT_EQ(BudgetViolations(pods, {one, empty_selector}),
            (std::vector<bool>{false, false, true, false, false}));
}

TEST(LabelSelectorTest, EveryOperator) {
  const Labels labels = {{"app", "web"}, {"tier", "gold"}};
  using Op = LabelRequirement::Op;
  struct Row {
    const char* name;
    LabelSelector selector;
    bool matches;
  };
  const Row rows[] = {
      {"matchLabels", {{{"app", "web"}}, {}}, true},
      {"matchLabels, other value", {{{"app", "api"}}, {}}, false},
      {"In", {{}, {{"tier", Op::kIn, {"gold", "silver"}}}}, true},
      {"NotIn", {{}, {{"tier", Op::kNotIn, {"gold"}}}}, false},
      {"NotIn, key absent", {{}, {{"zone", Op::kNotIn, {"a"}}}}, true},
      {"Exists", {{}, {{"app", Op::kExists, {}}}}, true},
      {"DoesNotExist", {{}, {{"app", Op::kDoesNotExist, {}}}}, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.selector.Matches(labels), row.matches);
  }
}

}  // namespace
}  // namespace topology
