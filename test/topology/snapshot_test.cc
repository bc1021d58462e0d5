// MakePodContext: the per-pod context every node decision shares.
#include "topology/snapshot.h"

#include "gtest/gtest.h"
#include "test/topology/fleet_fixture.h"

namespace topology {
namespace {

using namespace testing_fleet;  // NOLINT: the fixture's small vocabulary

TEST(MakePodContextTest, TenantCanaryAndScoringOverride) {
  Policy policy = DemoLikePolicy();
  policy.canary = Canary{"1g.10gb", 1, "gpu-tenancy.io/canary"};
  PodFacts pod;
  pod.namespace_name = "acme";
  pod.name = "p";
  pod.labels["gpu-tenancy.io/canary"] = "true";
  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "spread";
  absl::StatusOr<PodContext> ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_EQ(ctx->policy, &policy);
  EXPECT_EQ(ctx->tenant.name, "acme");
  ASSERT_NE(ctx->tenant.tier, nullptr);
  EXPECT_EQ(ctx->tenant.tier->name, "untrusted");
  EXPECT_TRUE(ctx->canary);
  EXPECT_EQ(ctx->scoring, ScoringStrategy::kSpread);

  pod.labels["gpu-tenancy.io/canary"] = "yes";
  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "binpack";
  ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok());
  EXPECT_FALSE(ctx->canary);
  EXPECT_EQ(ctx->scoring, ScoringStrategy::kBinpack);

  pod.annotations["gpu-tenancy.io/scheduling-policy"] = "random";
  ctx = MakePodContext(pod, policy, {});
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ctx.status().message(),
      "annotation gpu-tenancy.io/scheduling-policy must be binpack or spread, got \"random\"");

  pod.namespace_name = "elsewhere";
  pod.annotations.clear();
  ctx = MakePodContext(pod, policy, {});
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->tenant.name, "unknown");
  EXPECT_TRUE(ctx->tenant.Denied());
  EXPECT_FALSE(ctx->scoring.has_value());
}

}  // namespace
}  // namespace topology
