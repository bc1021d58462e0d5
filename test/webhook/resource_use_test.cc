// How the webhook classifies pod resource names (resource_use.cc).
#include <string>

#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/pod_rules.h"

namespace {

using webhook_test::TestPolicy;

TEST(PodRulesTest, ClassifiesResources) {
  topology::Policy policy = TestPolicy();
  using webhook::ResourceUse;
  struct Case {
    std::string resource;
    ResourceUse use;
  } cases[] = {
      {"nvidia.com/gpu", ResourceUse::kWholeGpu},
      {"nvidia.com/gpu.shared", ResourceUse::kShared},
      {"example.com/vgpu", ResourceUse::kShared},
      {"nvidia.com/mig-3g.40gb", ResourceUse::kMig},
      {"nvidia.com/mig-1g.10gb.shared", ResourceUse::kMigShared},
      {"nvidia.com/gpu.memory", ResourceUse::kMemory},
      {"nvidia.com/gpumem", ResourceUse::kMemory},
      {"nvidia.com/gpu.mps", ResourceUse::kMps},
      {"nvidia.com/gpucores", ResourceUse::kOtherGpu},
      {"cpu", ResourceUse::kNotGpu},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.resource);
    EXPECT_EQ(webhook::ClassifyPodResource(c.resource, policy), c.use);
  }
  EXPECT_EQ(webhook::MigProfileOf("nvidia.com/mig-1g.10gb.shared"), "1g.10gb");
  EXPECT_EQ(webhook::MigProfileOf("nvidia.com/gpu"), "");
}

}  // namespace
