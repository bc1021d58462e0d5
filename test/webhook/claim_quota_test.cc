// DRA claim quotas at admission: the pure decision on a tenant's usage record (reservations
// counted until the snapshot sees the claim, stale and unreadable ones dropped, a retried
// admission replacing its own), the record's encoding, and Review with a record kept in memory:
// denied over quota, allowed and reserved under it, a dry run reserving nothing, and the
// snapshot alone without a record.
#include "webhook/claim_quota.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace claim_quota_test {
namespace {

using webhook::ClaimQuotaDecision;
using webhook::ClaimQuotaInput;
using webhook::ClaimReservation;
using webhook::RecordData;

topology::QuotaUsage Gpus(int64_t n) {
  topology::QuotaUsage u;
  u.gpus = n;
  return u;
}

std::string Reserved(int64_t gpus, int64_t at) {
  return webhook::EncodeReservation({Gpus(gpus), at});
}

constexpr int64_t kNow = 1'800'000'000;

struct DecideCase {
  std::string name;
  RecordData record;
  std::vector<std::string> observed;  // claim keys the snapshot sees
  int64_t observed_gpus = 0;
  int64_t requested = 1;
  bool admit = true;
  std::vector<std::string> written_keys;  // when admitted
};

TEST(ClaimQuotaDecideTest, ReservationsCountUntilTheSnapshotSeesTheClaim) {
  const std::vector<DecideCase> cases = {
      {"empty record, under quota", {}, {}, 0, 1, true, {"acme.new"}},
      {"two reservations and one more fits",
       {{"acme.a", Reserved(1, kNow)}, {"acme.b", Reserved(1, kNow - 5)}},
       {},
       0,
       1,
       true,
       {"acme.a", "acme.b", "acme.new"}},
      {"two reservations and two more do not",
       {{"acme.a", Reserved(1, kNow)}, {"acme.b", Reserved(1, kNow)}},
       {},
       0,
       2,
       false,
       {}},
      {"a claim the snapshot sees is counted once (from the snapshot)",
       {{"acme.a", Reserved(1, kNow)}, {"acme.b", Reserved(1, kNow)}},
       {"acme.a"},
       1,
       1,
       true,
       {"acme.a", "acme.b", "acme.new"}},
      {"the snapshot's own holdings count", {{"acme.a", Reserved(1, kNow)}}, {}, 2, 1, false, {}},
      {"a stale reservation is dropped and not counted",
       {{"acme.old", Reserved(3, kNow - webhook::kReservationGraceSeconds - 1)},
        {"acme.a", Reserved(1, kNow)}},
       {},
       0,
       2,
       true,
       {"acme.a", "acme.new"}},
      {"an unreadable entry is dropped",
       {{"acme.bad", "gpus=lots"}, {"acme.a", Reserved(1, kNow)}},
       {},
       0,
       1,
       true,
       {"acme.a", "acme.new"}},
      {"the same claim admitted again replaces its reservation",
       {{"acme.new", Reserved(2, kNow)}, {"acme.a", Reserved(1, kNow)}},
       {},
       0,
       2,
       true,
       {"acme.a", "acme.new"}},
  };
  topology::TenantQuota quota;
  quota.gpus = 3;
  for (const DecideCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::flat_hash_set<std::string> seen(c.observed.begin(), c.observed.end());
    ClaimQuotaInput in;
    in.quota = &quota;
    in.observed = Gpus(c.observed_gpus);
    in.observed_claims = &seen;
    in.key = "acme.new";
    in.requested = Gpus(c.requested);
    in.now_unix = kNow;
    ClaimQuotaDecision d = webhook::DecideClaimQuota(in, c.record);
    EXPECT_EQ(d.admit, c.admit);
    ASSERT_EQ(d.write.has_value(), c.admit) << "a denial writes nothing";
    if (!d.write) continue;
    std::vector<std::string> keys;
    for (const auto& [key, value] : *d.write) keys.push_back(key);
    EXPECT_EQ(keys, c.written_keys);
    EXPECT_EQ(d.write->at("acme.new"), Reserved(c.requested, kNow));
  }
}

TEST(ClaimQuotaDecideTest, ReservationsRoundTrip) {
  ClaimReservation r;
  r.admitted_unix = 42;
  r.usage.gpus = 1;
  r.usage.mig_instances["3g.40gb"] = 2;
  r.usage.mig_compute_slices = 6;
  r.usage.gpu_memory_mib = 81920;
  const std::string text = webhook::EncodeReservation(r);
  EXPECT_EQ(text, "t=42 gpus=1 mig/3g.40gb=2 slices=6 memMi=81920");
  absl::StatusOr<ClaimReservation> back = webhook::DecodeReservation(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(webhook::DecodeReservation("gpus=1").ok()) << "no admission time";
  EXPECT_FALSE(webhook::DecodeReservation("t=1 cows=2").ok());
  EXPECT_EQ(webhook::UsageRecordName("Team_A"), "gpu-tenancy-usage-team-a");
  EXPECT_EQ(webhook::ClaimKey("acme", "train-gpu-x7"), "acme.train-gpu-x7");
}

constexpr char kClaimQuotaPolicy[] = R"(tiers:
  - {name: training, modes: [exclusive, mig]}
tenants:
  - name: acme
    tier: training
    namespaces: [acme]
    quota: {gpus: 2}
  - {name: bank, tier: training, namespaces: [bank]}
unknownTenant: deny
quotaEnforcement: admission
pools:
  - {name: gpu, mode: exclusive}
)";

topology::ClusterSnapshot NodeOfGpus(const topology::Policy& policy, int gpus) {
  topology::ClusterData data;
  std::vector<topology::DraDevice> devices;
  for (int i = 0; i < gpus; ++i) {
    devices.push_back(testing_dra::NvidiaDevice("node-a", absl::StrCat("gpu-", i)));
  }
  data.dra_slices.push_back(testing_dra::NodeSlice("node-a", devices));
  data.dra_classes.push_back(
      {"gpu.nvidia.com",
       {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
       ""});
  data.namespace_labels["acme"] = {};
  data.namespace_labels["bank"] = {};
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

topology::ClusterSnapshot FourGpus(const topology::Policy& policy) { return NodeOfGpus(policy, 4); }

rapidjson::Document GpuClaim(const std::string& ns, const std::string& name, int count) {
  return webhook_test::Yaml(
      absl::StrCat("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: ", name,
                   ", namespace: ", ns, "}\nspec:\n  devices:\n    requests:\n    - name: gpu\n",
                   "      exactly: {deviceClassName: gpu.nvidia.com, count: ", count, "}\n"));
}

// A record kept in memory, as kube/usage_record.h keeps it in a ConfigMap.
struct MemoryRecords {
  std::map<std::string, RecordData> records;
  int writes = 0;

  webhook::ClaimQuotaContext Context() {
    webhook::ClaimQuotaContext c;
    c.now_unix = kNow;
    c.update = [this](const std::string& name, const auto& decide, bool dry_run) {
      std::optional<RecordData> next = decide(records[name]);
      if (next && !dry_run) {
        records[name] = *next;
        ++writes;
      }
      return absl::OkStatus();
    };
    return c;
  }
};

webhook_test::Reply ReviewClaim(const rapidjson::Value& claim, const std::string& ns,
                                const topology::Policy& policy,
                                const topology::ClusterSnapshot& snapshot,
                                const webhook::ClaimQuotaContext& context, bool dry_run = false) {
  webhook_test::ReviewOptions o;
  o.ns = ns;
  o.group = "resource.k8s.io";
  o.kind = "ResourceClaim";
  o.resource = "resourceclaims";
  o.dry_run = dry_run;
  return webhook_test::Decode(webhook::Review(webhook_test::MakeReview(claim, o),
                                              webhook::ReviewKind::kValidate, policy, snapshot,
                                              context));
}

TEST(ClaimQuotaReviewTest, OverQuotaIsDeniedUnderIsReservedDryRunWritesNothing) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kClaimQuotaPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const topology::ClusterSnapshot snapshot = FourGpus(*policy);
  MemoryRecords records;

  webhook_test::Reply first =
      ReviewClaim(GpuClaim("acme", "one", 1), "acme", *policy, snapshot, records.Context());
  EXPECT_TRUE(first.allowed) << first.message;
  EXPECT_EQ(records.records["gpu-tenancy-usage-acme"].count("acme.one"), 1u);

  // A dry run gets the verdict and leaves the record alone.
  webhook_test::Reply dry = ReviewClaim(GpuClaim("acme", "two", 2), "acme", *policy, snapshot,
                                        records.Context(), /*dry_run=*/true);
  EXPECT_FALSE(dry.allowed);
  EXPECT_EQ(dry.message,
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 1 of 2 held, 2 requested");
  dry = ReviewClaim(GpuClaim("acme", "two", 1), "acme", *policy, snapshot, records.Context(),
                    /*dry_run=*/true);
  EXPECT_TRUE(dry.allowed) << dry.message;
  EXPECT_EQ(records.writes, 1);

  webhook_test::Reply second =
      ReviewClaim(GpuClaim("acme", "two", 1), "acme", *policy, snapshot, records.Context());
  EXPECT_TRUE(second.allowed) << second.message;
  webhook_test::Reply third =
      ReviewClaim(GpuClaim("acme", "three", 1), "acme", *policy, snapshot, records.Context());
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.message,
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 2 of 2 held, 1 requested");
  EXPECT_EQ(records.writes, 2);

  // Another tenant has no quota: nothing is reserved for it.
  webhook_test::Reply bank =
      ReviewClaim(GpuClaim("bank", "big", 4), "bank", *policy, snapshot, records.Context());
  EXPECT_TRUE(bank.allowed) << bank.message;
  EXPECT_EQ(records.writes, 2);

  // Without a record (serve --demo / --cluster-file) the snapshot alone is counted: it holds
  // nothing, so only a claim larger than the quota is refused.
  EXPECT_TRUE(ReviewClaim(GpuClaim("acme", "four", 2), "acme", *policy, snapshot, {}).allowed);
  EXPECT_FALSE(ReviewClaim(GpuClaim("acme", "five", 3), "acme", *policy, snapshot, {}).allowed);
}

TEST(ClaimQuotaReviewTest, DeniedAlsoWhenPodQuotasAreEnforcedAtScheduling) {
  // quotaEnforcement: scheduling leaves an over-quota pod Pending; nothing leaves a claim
  // pending, since the DRA allocator never checks a quota: it is refused here.
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kClaimQuotaPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  policy->quota_enforcement = topology::QuotaEnforcement::kScheduling;
  const topology::ClusterSnapshot snapshot = FourGpus(*policy);
  MemoryRecords records;
  webhook_test::Reply r =
      ReviewClaim(GpuClaim("acme", "big", 3), "acme", *policy, snapshot, records.Context());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.message, "[tenant-quota] tenant acme quota: nvidia.com/gpu 0 of 2 held, 3 requested");
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(records.writes, 0) << "a denied claim reserves nothing";
}

TEST(ClaimQuotaReviewTest, AnUnboundedRequestIsCountedAtItsWorstCaseAndSaysSo) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kClaimQuotaPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const topology::ClusterSnapshot snapshot = FourGpus(*policy);
  rapidjson::Document all = webhook_test::Yaml(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: all, namespace: "
      "acme}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: "
      "{deviceClassName: gpu.nvidia.com, allocationMode: All}\n");
  webhook_test::Reply r = ReviewClaim(all, "acme", *policy, snapshot, {});
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.message,
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 0 of 2 held, 4 requested (counted "
            "at its worst case: request gpu: allocationMode All, counted as every matching device "
            "of the node with the most)");
}

TEST(ClaimQuotaReviewTest, RememberedCountsFollowTheDevicesAndTheRequests) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kClaimQuotaPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  rapidjson::Document all = webhook_test::Yaml(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: all, namespace: "
      "acme}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: "
      "{deviceClassName: gpu.nvidia.com, allocationMode: All}\n");
  webhook::ClaimCountCache counts;
  webhook::ClaimQuotaContext context;
  context.counts = &counts;
  auto requested = [&](const topology::ClusterSnapshot& snapshot, const rapidjson::Value& claim) {
    const std::string message = ReviewClaim(claim, "acme", *policy, snapshot, context).message;
    const size_t at = message.find(" held, ");
    return at == std::string::npos ? message : message.substr(at + 7, 11);
  };
  const topology::ClusterSnapshot four = NodeOfGpus(*policy, 4);
  EXPECT_EQ(requested(four, all), "4 requested");
  EXPECT_EQ(requested(four, all), "4 requested");
  // Another request shape on the same devices is counted for itself.
  EXPECT_EQ(requested(four, GpuClaim("acme", "three", 3)), "3 requested");
  // New devices: what was remembered of the old ones no longer counts.
  const topology::ClusterSnapshot six = NodeOfGpus(*policy, 6);
  EXPECT_EQ(requested(six, all), "6 requested");
  EXPECT_EQ(requested(four, all), "4 requested");
}

}  // namespace
}  // namespace claim_quota_test
