// Admission budgets (webhook/claim_budget.h): the size a write may grant, the replica's book of
// what it admitted from its budget, the record decision that converts those claims and replaces
// the budget, and Review over records kept in memory: far from the quota one write serves many
// claims, and two replicas sharing one record never admit past the quota between them.
#include "webhook/claim_budget.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/claim_quota.h"
#include "webhook/review.h"

namespace claim_budget_test {
namespace {

using topology::QuotaUsage;
using webhook::ClaimBudgets;
using webhook::RecordData;

constexpr int64_t kNow = 1'800'000'000;

QuotaUsage Gpus(int64_t n) {
  QuotaUsage u;
  u.gpus = n;
  return u;
}

topology::TenantQuota GpuQuota(int64_t n) {
  topology::TenantQuota q;
  q.gpus = n;
  return q;
}

TEST(BudgetToGrantTest, AQuarterOfTheHeadroomAtMost128ClaimsAndNoneNearTheQuota) {
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(1000), Gpus(100), Gpus(1)), Gpus(128));
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(1000), Gpus(100), Gpus(2)), Gpus(225));
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(100000), Gpus(0), Gpus(2)), Gpus(256));
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(100), Gpus(60), Gpus(1)), Gpus(10));
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(100), Gpus(97), Gpus(1)), std::nullopt)
      << "3 left: a quarter covers no claim, so every claim is decided on the record";
  EXPECT_EQ(webhook::BudgetToGrant(GpuQuota(100), Gpus(120), Gpus(1)), std::nullopt);

  // MIG: per profile and in compute slices; a profile the claim does not ask gets nothing.
  topology::TenantQuota mig;
  mig.mig_instances = {{"1g.10gb", 100}, {"3g.40gb", 8}};
  mig.mig_compute_slices = 200;
  QuotaUsage one;
  one.mig_instances["1g.10gb"] = 1;
  one.mig_compute_slices = 1;
  QuotaUsage expected;
  expected.mig_instances["1g.10gb"] = 24;  // (100 - 4) / 4
  expected.mig_compute_slices = 49;        // min((200 - 4) / 4, 128)
  QuotaUsage held;
  held.mig_instances["1g.10gb"] = 4;
  held.mig_compute_slices = 4;
  EXPECT_EQ(webhook::BudgetToGrant(mig, held, one), expected);

  // A claim that asks nothing the quota limits gets an empty budget: any number of claims like
  // it fit.
  EXPECT_EQ(webhook::BudgetToGrant(mig, {}, Gpus(1)), QuotaUsage{});
}

TEST(ClaimBudgetsTest, AdmitsWithinTheBudgetAndTheQuotaUntilItExpiresOrCloses) {
  ClaimBudgets budgets("test");
  EXPECT_EQ(budgets.record_key(), "budget.test");
  const topology::TenantQuota quota = GpuQuota(100);
  const auto none = [](const std::string&) { return false; };
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.a", Gpus(1), {}, none, kNow))
      << "no budget yet";
  EXPECT_FALSE(budgets.HasOpenBudget("acme", kNow));
  budgets.Written("acme", {}, Gpus(3), kNow);
  EXPECT_TRUE(budgets.HasOpenBudget("acme", kNow));
  EXPECT_FALSE(budgets.HasOpenBudget("acme", kNow + webhook::kBudgetSeconds));
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.a", Gpus(1), {}, none, kNow));
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.a", Gpus(1), {}, none, kNow))
      << "the same claim again: counted once";
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.b", Gpus(3), {}, none, kNow))
      << "1 of 3 spent: 3 more do not fit";
  EXPECT_FALSE(budgets.TryAdmit("other", quota, "other.a", Gpus(1), {}, none, kNow))
      << "budgets are per tenant";
  // A pod placed since the grant: the snapshot shows 98 held, and the unseen claim makes 99.
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.b", Gpus(2), Gpus(98), none, kNow));
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.b", Gpus(1), Gpus(98), none, kNow));
  EXPECT_FALSE(
      budgets.TryAdmit("acme", quota, "acme.c", Gpus(1), {}, none, kNow + webhook::kBudgetSeconds))
      << "expired";

  const webhook::UnrecordedClaims unrecorded = budgets.Close("acme");
  EXPECT_EQ(unrecorded.size(), 2u);
  EXPECT_EQ(unrecorded.at("acme.a"), std::pair(Gpus(1), kNow));
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.c", Gpus(1), {}, none, kNow)) << "closed";
  budgets.Written("acme", unrecorded, Gpus(2), kNow + 1);
  EXPECT_TRUE(budgets.Close("acme").empty()) << "converted by the write";
  budgets.Written("acme", {}, Gpus(2), kNow + 1);
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.c", Gpus(2), {}, none, kNow + 1));
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.d", Gpus(1), {}, none, kNow + 1));
}

TEST(ClaimBudgetsTest, OnlyNearTheQuotaAreTheUnrecordedClaimsLookedUp) {
  ClaimBudgets budgets("test");
  const topology::TenantQuota quota = GpuQuota(100);
  int lookups = 0;
  bool seen = true;
  const auto in_snapshot = [&](const std::string&) {
    ++lookups;
    return seen;
  };
  budgets.Written("acme", {}, Gpus(10), kNow);
  for (const char* key : {"acme.a", "acme.b", "acme.c"}) {
    ASSERT_TRUE(budgets.TryAdmit("acme", quota, key, Gpus(1), {}, in_snapshot, kNow));
  }
  // 96 shown, 3 unrecorded and 1 asked for: even counting the 3 twice, 100 fit.
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.d", Gpus(1), Gpus(96), in_snapshot, kNow));
  EXPECT_EQ(lookups, 0) << "far from the quota nothing is looked up";
  // 97 shown: 97 + 4 + 1 would not fit, so each unrecorded claim is looked up; the snapshot
  // shows them all, so 97 + 1 do.
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.e", Gpus(1), Gpus(97), in_snapshot, kNow));
  EXPECT_EQ(lookups, 4);
  seen = false;  // the same, none of them shown yet: 97 + 5 + 1 do not fit
  EXPECT_FALSE(budgets.TryAdmit("acme", quota, "acme.f", Gpus(1), Gpus(97), in_snapshot, kNow));
  // Converted by a write, the claims no longer count as unrecorded.
  const webhook::UnrecordedClaims unrecorded = budgets.Close("acme");
  ASSERT_EQ(unrecorded.size(), 5u);
  budgets.Written("acme", unrecorded, Gpus(10), kNow);
  lookups = 0;
  EXPECT_TRUE(budgets.TryAdmit("acme", quota, "acme.g", Gpus(1), Gpus(99), in_snapshot, kNow));
  EXPECT_EQ(lookups, 0);
}

TEST(ClaimBudgetsTest, TheRecordWriteConvertsTheBudgetsClaimsAndReplacesIt) {
  const topology::TenantQuota quota = GpuQuota(100);
  const absl::flat_hash_set<std::string> seen = {"acme.seen"};
  const webhook::UnrecordedClaims converted = {{"acme.seen", {Gpus(1), kNow - 5}},
                                               {"acme.unseen", {Gpus(1), kNow - 5}}};
  const RecordData record = {{"budget.mine", webhook::EncodeReservation({Gpus(32), kNow - 10})},
                             {"budget.other", webhook::EncodeReservation({Gpus(20), kNow - 10})},
                             {"acme.old", webhook::EncodeReservation({Gpus(1), kNow - 30})}};
  webhook::ClaimQuotaInput in;
  in.quota = &quota;
  in.observed = Gpus(41);  // 40 bound pods and acme.seen
  in.observed_claims = &seen;
  in.key = "acme.new";
  in.requested = Gpus(1);
  in.now_unix = kNow;
  in.grant_budget = true;
  in.own_budget_key = "budget.mine";
  in.converted = &converted;
  const webhook::ClaimQuotaDecision d = webhook::DecideClaimQuota(in, record);
  ASSERT_TRUE(d.admit);
  ASSERT_TRUE(d.write.has_value());
  // Held: 41 observed + 20 (the other replica's budget) + 1 (acme.old) + 1 (acme.unseen) = 63;
  // with the new claim 64, so the new budget is min((100 - 64) / 4, 128) = 9.
  EXPECT_EQ(d.budget, Gpus(9));
  const RecordData expected = {{"acme.new", webhook::EncodeReservation({Gpus(1), kNow})},
                               {"acme.old", webhook::EncodeReservation({Gpus(1), kNow - 30})},
                               {"acme.seen", webhook::EncodeReservation({Gpus(1), kNow - 5})},
                               {"acme.unseen", webhook::EncodeReservation({Gpus(1), kNow - 5})},
                               {"budget.mine", webhook::EncodeReservation({Gpus(9), kNow})},
                               {"budget.other", webhook::EncodeReservation({Gpus(20), kNow - 10})}};
  EXPECT_EQ(*d.write, expected);

  // The other replica's budget is held against this one: 78 observed + 20 + 1 + 1 + 1 = 101.
  in.observed = Gpus(78);
  const webhook::ClaimQuotaDecision full = webhook::DecideClaimQuota(in, record);
  EXPECT_FALSE(full.admit);
  EXPECT_FALSE(full.write.has_value());
}

TEST(ClaimBudgetsTest, ARefillAheadIsAskedOnceWhenMoreThanHalfIsSpentOrHalfItsTimeIsGone) {
  const topology::TenantQuota quota = GpuQuota(100);
  auto none = [](const std::string&) { return false; };
  ClaimBudgets budgets("a");
  EXPECT_FALSE(budgets.TakeRefillAhead("acme", quota, kNow)) << "no budget, nothing to refill";
  budgets.Written("acme", {}, Gpus(4), kNow);
  for (const char* key : {"acme.a", "acme.b"}) {
    ASSERT_TRUE(budgets.TryAdmit("acme", quota, key, Gpus(1), {}, none, kNow));
    EXPECT_FALSE(budgets.TakeRefillAhead("acme", quota, kNow)) << key;
  }
  ASSERT_TRUE(budgets.TryAdmit("acme", quota, "acme.c", Gpus(1), {}, none, kNow));
  EXPECT_TRUE(budgets.TakeRefillAhead("acme", quota, kNow));  // 3 of 4
  EXPECT_FALSE(budgets.TakeRefillAhead("acme", quota, kNow)) << "asked once per budget";
  EXPECT_TRUE(budgets.RefillAheadDue("acme"));
  const webhook::UnrecordedClaims converted = budgets.Close("acme");
  EXPECT_FALSE(budgets.RefillAheadDue("acme")) << "the write that replaces the budget is under way";
  budgets.Written("acme", converted, Gpus(4), kNow);
  EXPECT_FALSE(budgets.TakeRefillAhead("acme", quota, kNow + webhook::kBudgetSeconds / 2 - 1));
  EXPECT_TRUE(budgets.TakeRefillAhead("acme", quota, kNow + webhook::kBudgetSeconds / 2 + 1));
}

// A refill ahead of need keeps the budget open: claims admitted while its write is under way
// come out of what is left of the old budget, which the write carries into the new one, and
// stay unrecorded until the next write converts them.
TEST(ClaimBudgetsTest, ARefillAheadKeepsTheBudgetOpenAndCarriesWhatIsLeft) {
  const topology::TenantQuota quota = GpuQuota(100);
  auto none = [](const std::string&) { return false; };
  auto admit = [&](ClaimBudgets& budgets, const std::string& key, int64_t now = kNow) {
    return budgets.TryAdmit("acme", quota, key, Gpus(1), {}, none, now);
  };
  ClaimBudgets budgets("a");
  budgets.Written("acme", {}, Gpus(8), kNow);
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(admit(budgets, key));
  const ClaimBudgets::Refill refill = budgets.BeginRefill("acme", quota, kNow);
  EXPECT_EQ(refill.carried, Gpus(5));
  ASSERT_EQ(refill.converted.size(), 3u);
  // While the write is under way: what is left, and no more.
  for (const char* key : {"d", "e", "f", "g", "h"}) EXPECT_TRUE(admit(budgets, key)) << key;
  EXPECT_FALSE(admit(budgets, "i")) << "the old budget is spent";
  budgets.RefillWritten("acme", refill, Gpus(4), kNow + 1);
  // 5 carried + 4 granted, 5 of it spent while the write was under way.
  for (const char* key : {"i", "j", "k", "l"}) EXPECT_TRUE(admit(budgets, key, kNow + 1)) << key;
  EXPECT_FALSE(admit(budgets, "m", kNow + 1));
  const webhook::UnrecordedClaims left = budgets.Close("acme");
  std::vector<std::string> keys;
  for (const auto& [key, admitted] : left) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"d", "e", "f", "g", "h", "i", "j", "k", "l"}))
      << "the claims the write converted are forgotten, the others wait for the next one";

  // No grant: no budget open; the record's carried part covers what was admitted meanwhile.
  ClaimBudgets near("b");
  near.Written("acme", {}, Gpus(2), kNow);
  const ClaimBudgets::Refill last = near.BeginRefill("acme", quota, kNow);
  ASSERT_TRUE(admit(near, "x"));
  near.RefillWritten("acme", last, std::nullopt, kNow + 1);
  EXPECT_FALSE(near.HasOpenBudget("acme", kNow + 1));
  EXPECT_EQ(near.Close("acme").count("x"), 1u) << "converted by the next write";

  // A failed write closes the budget; every claim it admitted waits for the next write.
  ClaimBudgets failed("c");
  failed.Written("acme", {}, Gpus(4), kNow);
  ASSERT_TRUE(admit(failed, "p"));
  failed.BeginRefill("acme", quota, kNow);
  ASSERT_TRUE(admit(failed, "q"));
  failed.RefillFailed("acme");
  EXPECT_FALSE(failed.HasOpenBudget("acme", kNow));
  EXPECT_EQ(failed.Close("acme").size(), 2u);

  // An expired budget admits nothing more, so nothing of it is carried.
  ClaimBudgets old("d");
  old.Written("acme", {}, Gpus(4), kNow);
  EXPECT_TRUE(old.BeginRefill("acme", quota, kNow + webhook::kBudgetSeconds).carried.empty());
}

// The refill's entry holds what it carries and the grant, which is sized with the carried part
// held.
TEST(ClaimBudgetsTest, ARefillAheadsEntryCarriesWhatIsLeftBesideTheGrant) {
  const topology::TenantQuota quota = GpuQuota(100);
  const webhook::UnrecordedClaims converted = {{"acme.a", {Gpus(3), kNow - 5}}};
  const QuotaUsage carried = Gpus(5);
  const RecordData record = {{"budget.mine", webhook::EncodeReservation({Gpus(8), kNow - 6})}};
  webhook::ClaimQuotaInput in;
  in.quota = &quota;
  in.observed = Gpus(40);
  in.requested = Gpus(1);  // the shape; no claim is admitted
  in.now_unix = kNow;
  in.grant_budget = true;
  in.own_budget_key = "budget.mine";
  in.converted = &converted;
  in.carried = &carried;
  const webhook::ClaimQuotaDecision d = webhook::DecideClaimQuota(in, record);
  ASSERT_TRUE(d.write.has_value());
  // Held: 40 observed + 3 converted + 5 carried = 48: the grant is min((100 - 48) / 4, 128) = 13.
  EXPECT_EQ(d.budget, Gpus(13));
  EXPECT_EQ(*d.write, (RecordData{{"acme.a", webhook::EncodeReservation({Gpus(3), kNow - 5})},
                                  {"budget.mine", webhook::EncodeReservation({Gpus(18), kNow})}}));
  // Near the quota nothing is granted, and the carried part alone stays reserved.
  in.observed = Gpus(90);
  const webhook::ClaimQuotaDecision near = webhook::DecideClaimQuota(in, record);
  EXPECT_EQ(near.budget, std::nullopt);
  EXPECT_EQ(near.write->at("budget.mine"), webhook::EncodeReservation({Gpus(5), kNow}));
}

constexpr char kPolicy[] = R"(tiers:
  - {name: training, modes: [exclusive, mig]}
tenants:
  - name: acme
    tier: training
    namespaces: [acme]
    quota: {gpus: 100}
unknownTenant: deny
pools:
  - {name: gpu, mode: exclusive}
)";

// kPolicy, loaded; `quota` replaces acme's.
topology::Policy AcmePolicy(absl::string_view quota = "{gpus: 100}") {
  absl::StatusOr<topology::Policy> policy =
      common::LoadPolicy(absl::StrReplaceAll(kPolicy, {{"{gpus: 100}", quota}}));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy{};
}

// Replicas sharing one record kept in memory, each with its own budgets: a write is applied
// only if the record did not change since the replica decided, as the API server's
// resourceVersion precondition does; on a conflict the replica decides again.
struct SharedRecord {
  RecordData data;
  int writes = 0;
  // Runs once, between the next decision and its write: what happens while a write is under way.
  std::function<void()> during_write;

  webhook::ClaimQuotaContext Context(ClaimBudgets& budgets, int64_t now) {
    webhook::ClaimQuotaContext c;
    c.now_unix = now;
    c.budgets = &budgets;
    c.update = [this](const std::string&, const auto& decide, bool dry_run) {
      for (;;) {
        const int seen = writes;
        std::optional<RecordData> next = decide(data);
        if (std::function<void()> meanwhile = std::exchange(during_write, nullptr)) meanwhile();
        if (writes != seen) continue;  // the record changed: decide again
        if (next && !dry_run) {
          data = *next;
          ++writes;
        }
        return absl::OkStatus();
      }
    };
    return c;
  }
  // With a count cache; `stopped` set: the review runs on an event loop.
  webhook::ClaimQuotaContext CountingContext(ClaimBudgets& budgets, int64_t now,
                                             webhook::ClaimCountCache& counts, bool* stopped) {
    webhook::ClaimQuotaContext c = Context(budgets, now);
    c.counts = &counts;
    c.stopped_for_io = stopped;
    return c;
  }
};

bool Admitted(const std::string& name, const topology::Policy& policy,
              const topology::ClusterSnapshot& snapshot, const webhook::ClaimQuotaContext& c) {
  webhook_test::ReviewOptions o;
  o.ns = "acme";
  o.group = "resource.k8s.io";
  o.kind = "ResourceClaim";
  o.resource = "resourceclaims";
  const rapidjson::Document claim = webhook_test::Yaml(
      absl::StrCat("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: ", name,
                   ", namespace: acme}\nspec:\n  devices:\n    requests:\n    - name: gpu\n",
                   "      exactly: {deviceClassName: gpu.nvidia.com, count: 1}\n"));
  return webhook_test::Decode(webhook::Review(webhook_test::MakeReview(claim, o),
                                              webhook::ReviewKind::kValidate, policy, snapshot, c))
      .allowed;
}

// One node with a GPU; acme's namespace holds `claims` allocated claims besides, and `more`.
topology::ClusterSnapshot OneNode(const topology::Policy& policy, int claims = 0,
                                  std::vector<topology::DraClaim> more = {}) {
  topology::ClusterData data;
  data.dra_claims = std::move(more);
  for (int i = 0; i < claims; ++i) {
    topology::DraClaim claim;
    claim.namespace_name = "acme";
    claim.name = absl::StrCat("held-", i);
    claim.allocated = true;
    data.dra_claims.push_back(claim);
  }
  data.dra_slices.push_back(
      testing_dra::NodeSlice("node-a", {testing_dra::NvidiaDevice("node-a", "gpu-0")}));
  data.dra_classes.push_back(
      {"gpu.nvidia.com", {"device.attributes['gpu.nvidia.com'].type == 'gpu'"}, ""});
  data.namespace_labels["acme"] = {};
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

// acme's claim "pending" for two whole GPUs, not allocated yet.
topology::DraClaim PendingTwoGpus() {
  topology::DraClaim pending;
  pending.namespace_name = "acme";
  pending.name = "pending";
  topology::DraRequest two;
  two.name = "gpus";
  two.device_class = "gpu.nvidia.com";
  two.count = 2;
  pending.requests.push_back(two);
  return pending;
}

TEST(ClaimBudgetReviewTest, TheSnapshotIsAskedForABudgetsClaimsByKey) {
  const topology::Policy policy = AcmePolicy();
  topology::ClusterData data;
  topology::DraClaim claim;
  claim.namespace_name = "acme";
  claim.name = "train.v2";  // a claim's name may hold dots; a namespace's may not
  data.dra_claims.push_back(claim);
  data.namespace_labels["acme"] = {};
  const topology::ClusterSnapshot snapshot =
      topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
  EXPECT_TRUE(webhook::SnapshotHoldsClaim(snapshot, "acme.train.v2"));
  EXPECT_FALSE(webhook::SnapshotHoldsClaim(snapshot, "acme.train"));
  EXPECT_FALSE(webhook::SnapshotHoldsClaim(snapshot, "acme"));
  EXPECT_FALSE(webhook::SnapshotHoldsClaim(snapshot, "bank.train.v2"));
}

TEST(ClaimBudgetReviewTest, FarFromTheQuotaOneWriteAdmitsManyClaims) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy);
  SharedRecord record;
  ClaimBudgets budgets("a");
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(Admitted(absl::StrCat("c-", i), policy, snapshot, record.Context(budgets, kNow)));
  }
  // The first write reserves c-0 and a budget of min(99 / 4, 128) = 24; c-1 .. c-19 come from it.
  EXPECT_EQ(record.writes, 1);
  EXPECT_EQ(record.data.at("budget.a"), webhook::EncodeReservation({Gpus(24), kNow}));
  // After kBudgetSeconds the next claim goes to the record, which then holds every claim.
  EXPECT_TRUE(
      Admitted("late", policy, snapshot, record.Context(budgets, kNow + webhook::kBudgetSeconds)));
  EXPECT_EQ(record.writes, 2);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(record.data.count(absl::StrCat("acme.c-", i)), 1u) << i;
}

TEST(ClaimBudgetReviewTest, RefilledAheadNoClaimButTheFirstWaitsForTheRecord) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy);
  SharedRecord record;
  ClaimBudgets budgets("a");
  std::vector<std::pair<std::string, QuotaUsage>> asked;
  auto context = [&](bool on_loop, bool* stopped) {
    webhook::ClaimQuotaContext c = record.Context(budgets, kNow);
    if (on_loop) c.stopped_for_io = stopped;
    c.refill_ahead = [&](const std::string& tenant, const QuotaUsage& shape) {
      asked.emplace_back(tenant, shape);
    };
    return c;
  };
  bool stopped = false;
  Admitted("c-0", policy, snapshot, context(true, &stopped));  // the outcome is discarded
  EXPECT_TRUE(stopped) << "no budget yet: the first claim needs the record";
  EXPECT_EQ(record.writes, 0);
  ASSERT_TRUE(Admitted("c-0", policy, snapshot, context(false, nullptr)));
  ASSERT_EQ(record.writes, 1);
  // Each refill asked for runs at once, as the refill thread would, between two claims.
  for (int i = 1; i < 50; ++i) {
    stopped = false;
    EXPECT_TRUE(Admitted(absl::StrCat("c-", i), policy, snapshot, context(true, &stopped))) << i;
    EXPECT_FALSE(stopped) << "claim " << i << " waited for the record";
    for (const auto& [tenant, shape] : asked) {
      EXPECT_EQ(tenant, "acme");
      EXPECT_EQ(shape, Gpus(1));
      ASSERT_TRUE(
          webhook::RefillClaimBudget(snapshot, policy, tenant, shape, context(false, nullptr))
              .ok());
    }
    asked.clear();
  }
  EXPECT_GT(record.writes, 2) << "budgets were refilled";
  EXPECT_LT(record.writes, 20) << "far fewer writes than claims";
  // The record holds every claim admitted so far, each under its own key, or the budget that
  // admitted it since the last refill; with the budget, within the quota.
  int64_t reserved = 0;
  for (const auto& [key, text] : record.data) {
    absl::StatusOr<webhook::ClaimReservation> r = webhook::DecodeReservation(text);
    ASSERT_TRUE(r.ok()) << key;
    reserved += r->usage.gpus;
  }
  EXPECT_LE(reserved, 100);
  EXPECT_GE(reserved, 50 - static_cast<int64_t>(budgets.Close("acme").size()));
}

// Whether a review on a loop of acme's claim "second" stopped for a worker, with a budget open
// and `held` allocated claims in acme's namespace besides.
bool StoppedOnALoop(const topology::Policy& policy, int held) {
  const topology::ClusterSnapshot snapshot = OneNode(policy, held);
  EXPECT_EQ(webhook::ClaimsInTenantNamespaces(snapshot, policy, "acme"), static_cast<size_t>(held));
  SharedRecord record;
  ClaimBudgets budgets("a");
  EXPECT_TRUE(Admitted("first", policy, snapshot, record.Context(budgets, kNow)));
  EXPECT_TRUE(budgets.HasOpenBudget("acme", kNow));
  bool stopped = false;
  webhook::ClaimQuotaContext on_loop = record.Context(budgets, kNow);
  on_loop.stopped_for_io = &stopped;
  Admitted("second", policy, snapshot, on_loop);
  return stopped;
}

// A quota that limits memory reads every claim of the tenant: past the limit a worker does.
TEST(ClaimBudgetReviewTest, OnALoopATenantWithManyClaimsIsCountedOnAWorker) {
  const topology::Policy policy = AcmePolicy("{gpus: 100, gpuMemory: 10000Gi}");
  for (const int held : {static_cast<int>(webhook::kMostClaimsCountedOnALoop),
                         static_cast<int>(webhook::kMostClaimsCountedOnALoop) + 1}) {
    EXPECT_EQ(StoppedOnALoop(policy, held),
              held > static_cast<int>(webhook::kMostClaimsCountedOnALoop))
        << held;
  }
}

// One that does not reads only the pending claims: many allocated ones stay on the loop.
TEST(ClaimBudgetReviewTest, OnALoopAllocatedClaimsAloneNeverSendAQuotaWithoutMemoryToAWorker) {
  const topology::Policy policy = AcmePolicy();
  EXPECT_FALSE(StoppedOnALoop(policy, static_cast<int>(webhook::kMostClaimsCountedOnALoop) + 1));
}

TEST(ClaimBudgetReviewTest, OnALoopAClaimShapeNotCountedYetIsCountedOnAWorker) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy);
  SharedRecord record;
  ClaimBudgets budgets("a");
  webhook::ClaimCountCache counts;
  ASSERT_TRUE(Admitted("first", policy, snapshot, record.Context(budgets, kNow)));
  ASSERT_TRUE(budgets.HasOpenBudget("acme", kNow)) << "the budget is open: only the count is left";
  bool stopped = false;
  // The outcome is discarded.
  Admitted("second", policy, snapshot, record.CountingContext(budgets, kNow, counts, &stopped));
  EXPECT_TRUE(stopped) << "the shape was never counted: a worker counts it";
  EXPECT_EQ(record.writes, 1) << "the stopped review wrote nothing";
  ASSERT_TRUE(Admitted("second", policy, snapshot, record.Context(budgets, kNow)));
  // Counted (on a worker, I/O allowed): the next claim of that shape stays on the loop.
  ASSERT_TRUE(
      Admitted("third", policy, snapshot, record.CountingContext(budgets, kNow, counts, nullptr)));
  stopped = false;
  EXPECT_TRUE(Admitted("fourth", policy, snapshot,
                       record.CountingContext(budgets, kNow, counts, &stopped)));
  EXPECT_FALSE(stopped);
}

TEST(ClaimBudgetReviewTest, OnALoopAPendingClaimOfAShapeNotCountedYetIsCountedOnAWorker) {
  const topology::Policy policy = AcmePolicy();
  // Not allocated yet, and shaped unlike the claims reviewed below.
  const topology::DraClaim pending = PendingTwoGpus();
  const topology::ClusterSnapshot snapshot = OneNode(policy, 0, {pending});
  SharedRecord record;
  ClaimBudgets budgets("a");
  webhook::ClaimCountCache counts;
  // A budget is open and the reviewed claims' shape is counted; the pending claim's is not.
  ASSERT_TRUE(Admitted("first", policy, snapshot, record.Context(budgets, kNow)));
  ASSERT_TRUE(budgets.HasOpenBudget("acme", kNow));
  topology::DraClaim reviewed_shape;  // as Admitted's claims decode
  topology::DraRequest one;
  one.name = "gpu";
  one.device_class = "gpu.nvidia.com";
  reviewed_shape.requests.push_back(one);
  counts.Count(reviewed_shape, snapshot.dra());
  ASSERT_FALSE(counts.Cached(pending, snapshot.dra()));
  bool stopped = false;
  // The outcome is discarded.
  Admitted("second", policy, snapshot, record.CountingContext(budgets, kNow, counts, &stopped));
  EXPECT_TRUE(stopped) << "the budget check would count the pending claim's shape on the loop";
  EXPECT_EQ(record.writes, 1) << "the stopped review wrote nothing";
  ASSERT_TRUE(
      Admitted("second", policy, snapshot, record.CountingContext(budgets, kNow, counts, nullptr)));
  EXPECT_TRUE(counts.Cached(pending, snapshot.dra())) << "the worker's budget check counted it";
  stopped = false;
  EXPECT_TRUE(
      Admitted("third", policy, snapshot, record.CountingContext(budgets, kNow, counts, &stopped)));
  EXPECT_FALSE(stopped);
}

// A quota without memory: the budget's count of what the tenant holds reads only the pending
// claims (an allocated one adds nothing TenantUsage does not hold), and sums what reading every
// claim sums.
TEST(ClaimBudgetReviewTest, WithoutMemoryOnlyThePendingClaimsAreRead) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy, 3, {PendingTwoGpus()});
  absl::flat_hash_set<std::string> seen;
  const std::optional<topology::QuotaUsage> every_claim =
      webhook::ObservedClaimHeld(snapshot, policy, "acme", &seen, {}, /*without_memory=*/true);
  const std::optional<topology::QuotaUsage> pending_only =
      webhook::ObservedClaimHeld(snapshot, policy, "acme", nullptr, {}, /*without_memory=*/true);
  ASSERT_TRUE(every_claim && pending_only);
  EXPECT_EQ(seen.size(), 4u) << "with the keys asked for, every claim is read";
  EXPECT_EQ(pending_only->gpus, 2) << "the pending claim at its bound";
  EXPECT_EQ(*pending_only, *every_claim);
}

TEST(ClaimBudgetReviewTest, TwoReplicasNeverAdmitPastTheQuotaBetweenThem) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy);
  SharedRecord record;
  ClaimBudgets a("a"), b("b");
  int admitted = 0;
  // The claims are never seen by the snapshot: the record and the budgets alone count them.
  for (int i = 0; i < 300; ++i) {
    ClaimBudgets& replica = i % 3 == 0 ? b : a;  // uneven, so that budgets are left unspent
    if (Admitted(absl::StrCat("c-", i), policy, snapshot, record.Context(replica, kNow))) {
      ++admitted;
    }
  }
  EXPECT_LE(admitted, 100);
  EXPECT_GE(admitted, 90) << "budgets near the quota are small, so little is left unspent";
  EXPECT_LT(record.writes, admitted) << "some claims came from budgets";
}

// Claims that arrive while a refill's write is under way are admitted on the loop from what is
// left of the old budget, with no write of their own, and the other replica's writes meanwhile
// make the refill decide again. After every step the record covers each claim a replica admitted
// and did not write (its budget entry holds at least as many), and the two never pass the quota.
TEST(ClaimBudgetReviewTest, ClaimsAdmittedWhileARefillIsWrittenStayCovered) {
  const topology::Policy policy = AcmePolicy();
  const topology::ClusterSnapshot snapshot = OneNode(policy);
  SharedRecord record;
  ClaimBudgets a("a"), b("b");
  std::map<std::string, std::vector<std::string>> admitted;  // claim keys, by budget entry
  bool refill_asked = false;
  int next = 0;
  // Admitted, refused, or nullopt when a review on a loop stopped for a worker.
  auto claim = [&](ClaimBudgets& replica, bool on_loop) -> std::optional<bool> {
    const std::string name = absl::StrCat("c-", next++);
    bool stopped = false;
    webhook::ClaimQuotaContext c = record.Context(replica, kNow);
    if (on_loop) c.stopped_for_io = &stopped;
    c.refill_ahead = [&](const std::string&, const QuotaUsage&) {
      if (&replica == &a) refill_asked = true;
    };
    const bool ok = Admitted(name, policy, snapshot, c);
    if (stopped) return std::nullopt;
    if (ok) admitted[replica.record_key()].push_back(absl::StrCat("acme.", name));
    return ok;
  };
  auto covered = [&] {
    int64_t total = 0;
    for (const auto& [owner, keys] : admitted) {
      int64_t unwritten = 0;
      for (const std::string& key : keys) unwritten += record.data.count(key) ? 0 : 1;
      int64_t entry = 0;
      if (auto it = record.data.find(owner); it != record.data.end()) {
        entry = webhook::DecodeReservation(it->second)->usage.gpus;
      }
      EXPECT_LE(unwritten, entry) << owner << " admitted claims the record does not cover";
      total += static_cast<int64_t>(keys.size());
    }
    EXPECT_LE(total, 100);
    return total;
  };
  ASSERT_EQ(claim(a, false), true);  // no budget yet: through the record, which opens one
  while (!refill_asked) ASSERT_EQ(claim(a, true), true);
  covered();
  // The refill's write is under way: a admits on its loop, b's first claim writes the record.
  const int writes_before = record.writes;
  record.during_write = [&] {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(claim(a, true), true) << "from what is left, no worker";
    EXPECT_EQ(claim(b, false), true);
    covered();
  };
  ASSERT_TRUE(
      webhook::RefillClaimBudget(snapshot, policy, "acme", Gpus(1), record.Context(a, kNow)).ok());
  EXPECT_EQ(record.writes, writes_before + 2) << "b's write, then the refill decided again";
  EXPECT_TRUE(a.HasOpenBudget("acme", kNow));
  covered();
  // On to the quota: each refill meets claims of both replicas while it is written.
  for (int round = 0; round < 200; ++round) {
    refill_asked = false;
    claim(round % 4 == 0 ? b : a, round % 2 == 0);
    if (refill_asked) {
      record.during_write = [&] {
        claim(a, true);
        claim(b, false);
      };
      webhook::RefillClaimBudget(snapshot, policy, "acme", Gpus(1), record.Context(a, kNow))
          .IgnoreError();
      record.during_write = nullptr;
    }
    covered();
  }
  const int64_t total = covered();
  EXPECT_GE(total, 90) << "near the quota budgets are small, so little is left unspent";
}

}  // namespace
}  // namespace claim_budget_test
