// Pods whose DRA claims use an NVIDIA GPU device class are GPU pods for the pod rules: the
// captured kube-apiserver reviews of a pod naming a ResourceClaim (05) and one naming a
// ResourceClaimTemplate (09), against a snapshot that holds that claim and that template.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/pod_rules.h"
#include "webhook/review.h"
#include "wire/dra_codec.h"

namespace pod_claims_test {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using webhook::ReviewKind;
using webhook_test::Decode;
using webhook_test::Reply;

constexpr char kPolicy[] = R"(tiers:
  - {name: inference, modes: [mig]}
tenants:
  - {name: team-a, tier: inference, namespaces: [team-a]}
unknownTenant: deny
pools:
  - name: gpu-mig
    mode: mig
    taint: {key: gpu-tenancy.io/pool, value: gpu-mig, effect: NoSchedule}
)";

topology::Policy PolicyOrFail(const std::string& yaml) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(yaml);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy();
}

// The claim of list-resourceclaims.v1.json (team-a/tenant-a-inference, mig.nvidia.com) and the
// template of the captured template review (team-a/whole-gpu, gpu.nvidia.com or mig.nvidia.com).
topology::ClusterSnapshot SnapshotWithClaims(const topology::Policy& policy) {
  topology::ClusterData data;
  absl::StatusOr<wire::DraObjects> claims =
      wire::ParseDraList(JsonOrFail(Testdata("dra/list-resourceclaims.v1.json")));
  EXPECT_TRUE(claims.ok()) << claims.status();
  if (claims.ok()) data.dra_claims = claims->claims;
  rapidjson::Document review =
      JsonOrFail(Testdata("dra/03-mutate-ResourceClaimTemplate.CREATE.json"));
  const rapidjson::Value* object = webhook_test::At(review, "/request/object");
  EXPECT_NE(object, nullptr);
  if (object) {
    absl::StatusOr<topology::DraClaim> t = wire::ParseResourceClaimTemplate(*object);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) data.dra_claim_templates.push_back(*std::move(t));
  }
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

Reply RunCaptured(const std::string& fixture, ReviewKind kind, const topology::Policy& policy,
                  const topology::ClusterSnapshot& snapshot) {
  return Decode(webhook::Review(Testdata(fixture), kind, policy, snapshot));
}

TEST(PodClaimsTest, GpuClaimUsesResolvesClaimsAndTemplates) {
  topology::Policy policy = PolicyOrFail(kPolicy);
  topology::ClusterSnapshot snapshot = SnapshotWithClaims(policy);
  topology::PodFacts pod;
  pod.namespace_name = "team-a";
  pod.resource_claims = {{"gpu", "tenant-a-inference", ""},
                         {"whole", "", "whole-gpu"},
                         {"made", "p-whole-x1", "whole-gpu"},  // the made claim is not known
                         {"other", "", "missing"}};
  EXPECT_EQ(webhook::GpuClaimUses(pod, snapshot.dra(), {}),
            (std::vector<std::string>{
                "claim \"gpu\" (ResourceClaim tenant-a-inference, device class mig.nvidia.com)",
                "claim \"whole\" (ResourceClaimTemplate whole-gpu, device class gpu.nvidia.com)"}));
  pod.namespace_name = "team-b";  // claims live in the pod's namespace
  EXPECT_TRUE(webhook::GpuClaimUses(pod, snapshot.dra(), {}).empty());
}

TEST(PodClaimsTest, UnknownTenantIsDeniedForAClaimPod) {
  topology::Policy policy = PolicyOrFail(R"(tiers: [{name: t, modes: [mig]}]
tenants: [{name: other, tier: t, namespaces: [other]}]
unknownTenant: deny
)");
  topology::ClusterSnapshot with_claims = SnapshotWithClaims(policy);
  for (const char* fixture : {"dra/05-mutate-Pod.CREATE.json", "dra/09-mutate-Pod.CREATE.json"}) {
    SCOPED_TRACE(fixture);
    Reply r = RunCaptured(fixture, ReviewKind::kValidate, policy, with_claims);
    EXPECT_FALSE(r.allowed);
    EXPECT_TRUE(absl::StartsWith(r.message,
                                 "[unknown-tenant] namespace \"team-a\" belongs to no tenant and "
                                 "the policy denies GPUs to unknown tenants, but the pod uses "
                                 "claim \"gpu\" (Resource"))
        << r.message;
    // Without the claims in the state the pod looks CPU-only.
    Reply blind = RunCaptured(fixture, ReviewKind::kValidate, policy,
                              topology::BuildSnapshot({}, common::BuiltinCatalog(), policy));
    EXPECT_TRUE(blind.allowed) << blind.message;
  }
}

TEST(PodClaimsTest, ClaimPodGetsThePoolAffinityAndToleration) {
  topology::Policy policy = PolicyOrFail(kPolicy);
  topology::ClusterSnapshot with_claims = SnapshotWithClaims(policy);
  Reply r = RunCaptured("dra/05-mutate-Pod.CREATE.json", ReviewKind::kMutate, policy, with_claims);
  ASSERT_TRUE(r.has_patch);
  const std::string patch = common::ToJson(r.patch);
  EXPECT_NE(patch.find("\"path\":\"/spec/affinity\""), std::string::npos) << patch;
  EXPECT_NE(patch.find("\"values\":[\"gpu-mig\"]"), std::string::npos) << patch;
  EXPECT_NE(patch.find("\"path\":\"/spec/tolerations/-\""), std::string::npos) << patch;

  Reply blind = RunCaptured("dra/05-mutate-Pod.CREATE.json", ReviewKind::kMutate, policy,
                            topology::BuildSnapshot({}, common::BuiltinCatalog(), policy));
  const std::string labels_only = blind.has_patch ? common::ToJson(blind.patch) : "";
  EXPECT_EQ(labels_only.find("/spec/affinity"), std::string::npos) << labels_only;
}

}  // namespace pod_claims_test
