// Fair sharing's model: the policy keys and their load-time checks, the weighted fair share of a
// cluster checked against a brute-force search, and how a request stands against its tenant's
// guarantee (guaranteed, borrowed, owed to others, over a group's limit).
#include "topology/fair_share.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

namespace topology {
namespace {

// Three tenants: vision and speech in the group research, batch on its own; guarantees 4/4/0,
// limits 8/8/8, weights 1/1/2.
constexpr absl::string_view kSharePolicy = R"(
tiers:
  - name: trusted
    modes: [exclusive]
tenants:
  - name: vision
    tier: trusted
    namespaces: [vision]
    group: research
    guaranteed: {gpus: 4}
    limit: {gpus: 8}
    weight: 1
  - name: speech
    tier: trusted
    namespaces: [speech]
    group: research
    guaranteed: {gpus: 4}
    limit: {gpus: 8}
    weight: 1
  - name: batch
    tier: trusted
    namespaces: [batch]
    guaranteed: {gpus: 0}
    limit: {gpus: 8}
    weight: 2
groups:
  - name: research
pools:
  - name: gpu-exclusive
    mode: exclusive
)";

Policy SharePolicy(absl::string_view extra = "") {
  absl::StatusOr<Policy> policy = common::LoadPolicy(absl::StrCat(kSharePolicy, extra));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : Policy::AllowAll();
}

std::string ShareNode(const std::string& name, int gpus) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
                      R"(","labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3",)",
                      R"("nvidia.com/gpu.memory":"81559","gpu-tenancy.io/pool":"gpu-exclusive"}},)",
                      R"("status":{"allocatable":{"cpu":"32","nvidia.com/gpu":")", gpus, R"("}}})");
}

// A one-GPU pod in `ns`, on `node` ("" for pending), created at second `second`.
std::string SharePod(const std::string& ns, const std::string& name, const std::string& node,
                     int second = 0) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":")", ns,
      R"(","uid":"uid-)", ns, "-", name, R"(","creationTimestamp":"2026-01-01T00:00:)",
      absl::Dec(second, absl::kZeroPad2), R"(Z"},"spec":{)",
      node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)"),
      R"("containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},)",
      R"("status":{"phase":")", node.empty() ? "Pending" : "Running", R"("}})");
}

// Three nodes of four GPUs (12 in all); `pending[i]` one-GPU pods waiting for vision, speech
// and batch, and `held[i]` running.
ClusterSnapshot ShareCluster(const Policy& policy, const std::vector<int>& pending,
                             const std::vector<int>& held = {0, 0, 0}) {
  std::vector<std::string> items = {ShareNode("node-a", 4), ShareNode("node-b", 4),
                                    ShareNode("node-c", 4)};
  const char* kNamespaces[] = {"vision", "speech", "batch"};
  int placed = 0;
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < pending[t]; ++i) {
      items.push_back(SharePod(kNamespaces[t], absl::StrCat("wait-", i), ""));
    }
    for (int i = 0; i < held[t]; ++i, ++placed) {
      items.push_back(SharePod(kNamespaces[t], absl::StrCat("run-", i),
                               absl::StrCat("node-", std::string(1, 'a' + placed / 4)), placed));
    }
  }
  absl::StatusOr<ClusterData> data = wire::ParseClusterText(absl::StrCat(
      R"({"apiVersion":"v1","kind":"List","items":[)", absl::StrJoin(items, ","), "]}"));
  EXPECT_TRUE(data.ok()) << data.status();
  return BuildSnapshot(data.ok() ? *data : ClusterData{}, common::BuiltinCatalog(), policy);
}

// Weighted max-min fairness by exhaustive search, on a grid of twelfths of a GPU: among every
// division of the capacity that gives each member at least its guarantee (up to its demand),
// never more than min(limit, demand), and leaves nothing idle that someone wants, the one whose
// top level (research against batch), then research's members (vision against speech), have
// the lexicographically largest sorted vector of (share - guarantee) / weight.
struct Want {
  double guaranteed, cap, weight;
};
std::vector<double> BruteForceFairShare(double capacity, const Want& vision, const Want& speech,
                                        const Want& batch) {
  constexpr int kSteps = 12;  // per GPU
  const int units = static_cast<int>(capacity * kSteps);
  const double want = std::min(capacity, vision.cap + speech.cap + batch.cap);
  auto excess = [](double x, const Want& w) {
    return (x - std::min(w.guaranteed, w.cap)) / w.weight;
  };
  auto leximin = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const Want research{vision.guaranteed + speech.guaranteed, vision.cap + speech.cap, 1};
  std::vector<double> best;
  std::vector<double> best_top, best_inner;
  for (int v = 0; v <= units; ++v) {
    for (int s = 0; v + s <= units; ++s) {
      const double xv = static_cast<double>(v) / kSteps;
      const double xs = static_cast<double>(s) / kSteps;
      const double xb = want - xv - xs;
      if (xb < -1e-9 || xv > vision.cap + 1e-9 || xs > speech.cap + 1e-9 || xb > batch.cap + 1e-9) {
        continue;
      }
      if (xv < std::min(vision.guaranteed, vision.cap) - 1e-9 ||
          xs < std::min(speech.guaranteed, speech.cap) - 1e-9 ||
          xb < std::min(batch.guaranteed, batch.cap) - 1e-9) {
        continue;
      }
      std::vector<double> top = leximin({excess(xv + xs, research), excess(xb, batch)});
      std::vector<double> inner = leximin({excess(xv, vision), excess(xs, speech)});
      if (best.empty() || top > best_top || (top == best_top && inner > best_inner)) {
        best = {xv, xs, xb};
        best_top = top;
        best_inner = inner;
      }
    }
  }
  return best;
}

struct ShareRow {
  std::string name;
  std::vector<int> pending;  // vision, speech, batch: one-GPU pods each
};

TEST(FairShareTest, WeightedFairShareMatchesABruteForceSearch) {
  const Policy policy = SharePolicy();
  const std::vector<ShareRow> rows = {
      {"everyone wants their limit", {8, 8, 8}},
      {"vision mostly idle", {2, 8, 8}},
      {"batch alone", {0, 0, 8}},
      {"research alone, unevenly", {8, 3, 0}},
      {"everyone wants a little", {3, 3, 3}},
      {"speech idle, the rest contend", {8, 0, 8}},
      {"nobody waits", {0, 0, 0}},
  };
  for (const ShareRow& row : rows) {
    SCOPED_TRACE(row.name);
    const ClusterSnapshot snapshot = ShareCluster(policy, row.pending);
    const FairShareLedger ledger = MakeLedger(snapshot, policy);
    ASSERT_EQ(ledger.capacity.at("nvidia.com/gpu"), 12);
    std::vector<Want> wants;
    const double guarantees[] = {4, 4, 0}, weights[] = {1, 1, 2};
    for (int t = 0; t < 3; ++t) {
      wants.push_back(
          {guarantees[t], std::min(8.0, static_cast<double>(row.pending[t])), weights[t]});
    }
    const std::vector<double> expected = BruteForceFairShare(12, wants[0], wants[1], wants[2]);
    ASSERT_EQ(expected.size(), 3u);
    const char* names[] = {"vision", "speech", "batch"};
    for (int t = 0; t < 3; ++t) {
      const TenantShare* share = ledger.Find(names[t]);
      ASSERT_NE(share, nullptr);
      EXPECT_NEAR(share->fair_share.at("nvidia.com/gpu"), expected[t], 1.0 / 12 + 1e-9) << names[t];
    }
  }
}

// Idle capacity goes by weight: batch (weight 2) gets twice what research gets beyond its
// guarantees, and research divides its part between vision and speech.
TEST(FairShareTest, IdleCapacityGoesByWeightDownTheGroups) {
  const Policy policy = SharePolicy();
  const FairShareLedger ledger = MakeLedger(ShareCluster(policy, {8, 8, 8}), policy);
  // research is guaranteed 8 of 12; the 4 left go 1:2 to research and batch.
  EXPECT_NEAR(ledger.Find("batch")->fair_share.at("nvidia.com/gpu"), 8.0 / 3, 1e-9);
  EXPECT_NEAR(ledger.Find("vision")->fair_share.at("nvidia.com/gpu"), 4 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(ledger.Find("speech")->fair_share.at("nvidia.com/gpu"), 4 + 2.0 / 3, 1e-9);
}

TEST(FairShareTest, DivideFairlyHonoursBasesCapsAndWeights) {
  // Bases first, then the rest by weight until caps.
  std::vector<double> shares = DivideFairly(10, {{2, 10, 1}, {0, 10, 3}});
  EXPECT_NEAR(shares[0], 4, 1e-9);
  EXPECT_NEAR(shares[1], 6, 1e-9);
  // A claimant at its cap leaves the rest to the others.
  shares = DivideFairly(10, {{0, 1, 1}, {0, 10, 1}});
  EXPECT_NEAR(shares[0], 1, 1e-9);
  EXPECT_NEAR(shares[1], 9, 1e-9);
  // Not enough for the bases: pro rata.
  shares = DivideFairly(3, {{4, 8, 1}, {2, 8, 1}});
  EXPECT_NEAR(shares[0], 2, 1e-9);
  EXPECT_NEAR(shares[1], 1, 1e-9);
  // Less wanted than there is: each gets its cap.
  shares = DivideFairly(10, {{0, 2, 1}, {1, 3, 5}});
  EXPECT_NEAR(shares[0], 2, 1e-9);
  EXPECT_NEAR(shares[1], 3, 1e-9);
}

TEST(FairShareTest, HeldBorrowedAndLent) {
  const Policy policy = SharePolicy();
  // vision runs 2 (under its guarantee), speech 4, batch 6 (all borrowed); 12 of 12 in use.
  const FairShareLedger ledger = MakeLedger(ShareCluster(policy, {0, 0, 0}, {2, 4, 6}), policy);
  const TenantShare& vision = *ledger.Find("vision");
  const TenantShare& batch = *ledger.Find("batch");
  EXPECT_EQ(vision.Held("nvidia.com/gpu"), 2);
  EXPECT_EQ(batch.Held("nvidia.com/gpu"), 6);
  EXPECT_EQ(batch.borrowed.at("nvidia.com/gpu"), 6);
  EXPECT_FALSE(vision.borrowed.contains("nvidia.com/gpu"));
  // 4 GPUs are nobody's guarantee; batch's other 2 come out of vision's unused 2.
  EXPECT_NEAR(vision.lent.at("nvidia.com/gpu"), 2, 1e-9);
  EXPECT_FALSE(batch.lent.contains("nvidia.com/gpu"));
}

TEST(FairShareTest, ARequestIsGuaranteedBorrowedOrRefusedWhenOwed) {
  const Policy policy = SharePolicy();
  QuotaUsage one;
  one.gpus = 1;
  one.gpu_pods = 1;
  {
    // 4 free; vision waits for 2 of its unused guarantee: batch may borrow 2, not 3.
    const ClusterSnapshot snapshot = ShareCluster(policy, {2, 0, 0}, {2, 4, 2});
    const FairShareLedger ledger = MakeLedger(snapshot, policy);
    const QuotaUsage batch_held = TenantUsage(snapshot, policy, "batch");
    ShareVerdict v = ClassifyRequest(ledger, policy, "batch", batch_held, one);
    EXPECT_EQ(v.kind, ShareKind::kBorrowed);
    EXPECT_EQ(v.Reason("batch"),
              "borrowed: nvidia.com/gpu 3 above tenant batch's guarantee of 0, from 4 free (2 "
              "owed to other tenants)");
    QuotaUsage three = one;
    three.gpus = 3;
    v = ClassifyRequest(ledger, policy, "batch", batch_held, three);
    EXPECT_EQ(v.kind, ShareKind::kOwed);
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.Reason("batch"),
              "tenant batch would borrow nvidia.com/gpu (3 requested, 5 above its guarantee of "
              "0), but of the 4 free in the cluster 2 are owed to other tenants' pending pods");
    // vision is within its guarantee.
    v = ClassifyRequest(ledger, policy, "vision", TenantUsage(snapshot, policy, "vision"), one);
    EXPECT_EQ(v.kind, ShareKind::kGuaranteed);
  }
  {
    // A group limit counts every member.
    const Policy limited = SharePolicy("");
    Policy policy_with_limit = limited;
    policy_with_limit.groups[0].limit.gpus = 9;
    const ClusterSnapshot snapshot = ShareCluster(policy_with_limit, {0, 0, 0}, {5, 4, 0});
    const FairShareLedger ledger = MakeLedger(snapshot, policy_with_limit);
    ShareVerdict v = ClassifyRequest(ledger, policy_with_limit, "speech",
                                     TenantUsage(snapshot, policy_with_limit, "speech"), one);
    EXPECT_EQ(v.kind, ShareKind::kGroupLimit);
    EXPECT_EQ(v.Reason("speech"),
              "group research limit: nvidia.com/gpu 9 of 9 held by its tenants, 1 requested");
  }
}

// A tenant's borrowed pods are its newest beyond its guarantee.
TEST(FairShareTest, BorrowedPodsAreTheNewestBeyondTheGuarantee) {
  const Policy policy = SharePolicy();
  const ClusterSnapshot snapshot = ShareCluster(policy, {0, 0, 0}, {6, 0, 2});
  const BorrowedPods borrowed = FindBorrowedPods(snapshot, policy, MakeLedger(snapshot, policy));
  std::vector<std::string> uids;
  for (const auto& [uid, pod] : borrowed) uids.push_back(uid);
  std::sort(uids.begin(), uids.end());
  EXPECT_EQ(uids, (std::vector<std::string>{"uid-batch-run-0", "uid-batch-run-1",
                                            "uid-vision-run-4", "uid-vision-run-5"}));
}

TEST(FairSharePolicyTest, WithoutTheNewKeysNothingChanges) {
  absl::StatusOr<Policy> policy = common::LoadPolicy(R"(
tiers: [{name: trusted, modes: [exclusive]}]
tenants:
  - {name: acme, tier: trusted, namespaces: [acme], quota: {gpus: 2}}
)");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_FALSE(policy->FairSharing());
  EXPECT_FALSE(policy->tenants[0].fair_share.has_value());
  EXPECT_EQ(policy->tenants[0].quota.gpus, 2);
}

TEST(FairSharePolicyTest, TheLimitIsTheHardCap) {
  const Policy policy = SharePolicy();
  EXPECT_TRUE(policy.FairSharing());
  EXPECT_EQ(policy.FindTenant("vision")->quota.gpus, 8);
  EXPECT_EQ(policy.FindTenant("vision")->fair_share->guaranteed.gpus, 4);
  EXPECT_EQ(policy.FindTenant("batch")->fair_share->weight, 2);
}

TEST(FairSharePolicyTest, LoadErrorsNameTheGroup) {
  struct Case {
    std::string yaml;  // appended to kSharePolicy's tenants, with the groups replaced
    std::string error;
  };
  auto load = [](absl::string_view groups) {
    std::string text(kSharePolicy);
    text.replace(text.find("groups:\n  - name: research\n"),
                 std::string("groups:\n  - name: research\n").size(), std::string(groups));
    return common::LoadPolicy(text);
  };
  const std::vector<Case> cases = {
      {"groups:\n  - name: research\n    guaranteed: {gpus: 6}\n",
       "groups[0]: group \"research\" overcommits its guaranteed: its members' guarantees of "
       "nvidia.com/gpu add up to 8 (vision 4, speech 4), above the group's guaranteed of 6"},
      {"groups:\n  - name: research\n    parent: dept\n  - name: dept\n    limit: {gpus: 7}\n",
       "groups[1]: group \"dept\" overcommits its limit: its members' guarantees of "
       "nvidia.com/gpu add up to 8 (research 8), above the group's limit of 7"},
      {"groups:\n  - name: research\n    parent: nowhere\n",
       "groups[0].parent: group \"research\" names parent \"nowhere\", which is not defined"},
      {"groups:\n  - name: research\n    parent: dept\n  - name: dept\n    parent: research\n",
       "groups[0].parent: group \"research\" is its own ancestor"},
      {"groups:\n  - name: research\nfairSharing:\n  capacity: {gpus: 6}\n",
       "fairSharing.capacity: the top level's guarantees of nvidia.com/gpu add up to 8 (research "
       "8), above the cluster's capacity of 6"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    absl::StatusOr<Policy> policy = load(c.yaml);
    ASSERT_FALSE(policy.ok());
    EXPECT_NE(policy.status().message().find(c.error), std::string::npos)
        << policy.status().message();
  }
  // A tenant naming a group that does not exist, and quota beside the new keys.
  std::string text(kSharePolicy);
  text.replace(text.find("group: research"), 15, "group: nowhere");
  absl::StatusOr<Policy> policy = common::LoadPolicy(text);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(
      policy.status().message().find(
          "tenants[0].group: tenant \"vision\" names group \"nowhere\", which is not defined"),
      std::string::npos)
      << policy.status().message();
  text = std::string(kSharePolicy);
  text.replace(text.find("    weight: 2\n"), 0, "    quota: {gpus: 1}\n");
  policy = common::LoadPolicy(text);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find("states quota beside guaranteed"), std::string::npos)
      << policy.status().message();
}

}  // namespace
}  // namespace topology
