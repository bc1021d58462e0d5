// DRA claims under fair sharing, at admission: a claim within its tenant's guarantee is
// admitted, one above it borrows only capacity no other tenant is owed, and one that would take
// what another tenant's waiting pods are owed is denied, though within the tenant's limit.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace claim_fair_share_test {
namespace {

// acme and bank share four DRA GPUs; acme is guaranteed 1, bank 2, each may hold 4.
constexpr char kClaimSharePolicy[] = R"(tiers:
  - {name: training, modes: [exclusive, mig]}
tenants:
  - name: acme
    tier: training
    namespaces: [acme]
    guaranteed: {gpus: 1}
    limit: {gpus: 4}
  - name: bank
    tier: training
    namespaces: [bank]
    guaranteed: {gpus: 2}
    limit: {gpus: 4}
unknownTenant: deny
pools:
  - {name: gpu, mode: exclusive}
)";

// Four DRA GPUs on node-a, nothing allocated; bank has a pod waiting for two GPUs.
topology::ClusterSnapshot SharedGpus(const topology::Policy& policy) {
  topology::ClusterData data;
  std::vector<topology::DraDevice> devices;
  for (int i = 0; i < 4; ++i) {
    devices.push_back(testing_dra::NvidiaDevice("node-a", absl::StrCat("gpu-", i)));
  }
  data.dra_slices.push_back(testing_dra::NodeSlice("node-a", devices));
  data.dra_classes.push_back(
      {"gpu.nvidia.com",
       {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
       ""});
  data.namespace_labels["acme"] = {};
  data.namespace_labels["bank"] = {};
  topology::PodFacts waiting;
  waiting.uid = "uid-bank-train";
  waiting.namespace_name = "bank";
  waiting.name = "train";
  waiting.phase = "Pending";
  topology::ContainerFacts main;
  main.name = "main";
  main.limits.emplace("nvidia.com/gpu", topology::Quantity::FromUnits(2));
  main.requests = main.limits;
  waiting.containers.push_back(main);
  data.pods.push_back(waiting);
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

rapidjson::Document ShareGpuClaim(const std::string& name, int count) {
  return webhook_test::Yaml(
      absl::StrCat("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: ", name,
                   ", namespace: acme}\nspec:\n  devices:\n    requests:\n    - name: gpu\n",
                   "      exactly: {deviceClassName: gpu.nvidia.com, count: ", count, "}\n"));
}

webhook_test::Reply ReviewShareClaim(const rapidjson::Value& claim, const topology::Policy& policy,
                                     const topology::ClusterSnapshot& snapshot) {
  webhook_test::ReviewOptions o;
  o.ns = "acme";
  o.group = "resource.k8s.io";
  o.kind = "ResourceClaim";
  o.resource = "resourceclaims";
  return webhook_test::Decode(webhook::Review(webhook_test::MakeReview(claim, o),
                                              webhook::ReviewKind::kValidate, policy, snapshot,
                                              webhook::ClaimQuotaContext{}));
}

TEST(ClaimFairShareTest, AClaimBorrowsOnlyWhatNoOtherTenantIsOwed) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kClaimSharePolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const topology::ClusterSnapshot snapshot = SharedGpus(*policy);

  // Within acme's guarantee.
  webhook_test::Reply one = ReviewShareClaim(ShareGpuClaim("one", 1), *policy, snapshot);
  EXPECT_TRUE(one.allowed) << one.message;
  // One above it, from the two GPUs bank is not owed.
  webhook_test::Reply two = ReviewShareClaim(ShareGpuClaim("two", 2), *policy, snapshot);
  EXPECT_TRUE(two.allowed) << two.message;
  // Two above it: one of them is owed to bank's waiting pod. Within acme's limit of 4, still.
  webhook_test::Reply three = ReviewShareClaim(ShareGpuClaim("three", 3), *policy, snapshot);
  EXPECT_FALSE(three.allowed);
  EXPECT_EQ(three.message,
            "[tenant-quota] tenant acme would borrow nvidia.com/gpu (3 requested, 2 above its "
            "guarantee of 1), but of the 4 free in the cluster 2 are owed to other tenants' "
            "pending pods");
  // Above the limit: the quota's own reason.
  webhook_test::Reply five = ReviewShareClaim(ShareGpuClaim("five", 5), *policy, snapshot);
  EXPECT_FALSE(five.allowed);
}

}  // namespace
}  // namespace claim_fair_share_test
