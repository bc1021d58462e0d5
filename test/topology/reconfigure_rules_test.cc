#include "topology/reconfigure_rules.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

TEST(ReconfigureRulesTest, GpuResourcesAreWholeGpusSharesAndMigInstances) {
  for (const char* yes : {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                          "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-3g.40gb.shared"}) {
    EXPECT_TRUE(IsGpuResource(yes)) << yes;
  }
  for (const char* no :
       {"cpu", "memory", "nvidia.com/mig-", "nvidia.com/gpumem", "example.com/gpu"}) {
    EXPECT_FALSE(IsGpuResource(no)) << no;
  }
}

TEST(ReconfigureRulesTest, TrafficMovedWhenTheRestAreReadyElsewhere) {
  struct Case {
    const char* name;
    int desired, on_node, ready_elsewhere;
    bool blocks;
  };
  for (const Case& c : std::vector<Case>{
           {"the other replicas are ready", 3, 1, 2, false},
           {"one of the others is not ready", 3, 1, 1, true},
           {"a single replica on this node", 1, 1, 0, true},
           {"a surge replica took over", 1, 1, 1, false},
           {"every replica on this node", 2, 2, 0, true},
           {"scaled to zero", 0, 1, 0, true},
       }) {
    SCOPED_TRACE(c.name);
    std::optional<std::string> why =
        TrafficBlocker({"ReplicaSet", "acme", "llm", c.desired, c.on_node, c.ready_elsewhere});
    EXPECT_EQ(why.has_value(), c.blocks);
  }
  EXPECT_EQ(*TrafficBlocker({"StatefulSet", "acme", "db", 1, 1, 0}),
            "StatefulSet acme/db: 0 of 1 replicas ready on other nodes (1 of its pods are on this "
            "node)");
}

TEST(ReconfigureRulesTest, OnlySuccessGoesOnAndOnlyPendingOrRebootingWait) {
  EXPECT_EQ(JudgeMigState("", false), MigStateVerdict::kKeepWaiting);
  EXPECT_EQ(JudgeMigState("pending", true), MigStateVerdict::kKeepWaiting);
  EXPECT_EQ(JudgeMigState("rebooting", true), MigStateVerdict::kKeepWaiting);
  EXPECT_EQ(JudgeMigState("success", true), MigStateVerdict::kSucceeded);
  EXPECT_EQ(JudgeMigState("failed", true), MigStateVerdict::kFailed);
  EXPECT_EQ(JudgeMigState("", true), MigStateVerdict::kFailed);
  EXPECT_EQ(StepName(GateStep::kWaitForMigManager), "wait-mig-manager");
  EXPECT_EQ(StepName(GateStep::kRollbackUncordon), "rollback-uncordon");
}

}  // namespace
}  // namespace topology
