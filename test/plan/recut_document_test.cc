// What `plan --from-cluster` and explain print of a re-cut proposal (plan/recut_document.h), on
// the recut fleet (test/plan/recut_fleet.h): the mig-parted config per re-cut node, the text
// with what each re-cut serves, drains and runs, the reasons a pod is unserved, and explain's
// one line. plan_recut_test checks the same through the binary's JSON and YAML.
#include "plan/recut_document.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/mig_recut.h"
#include "test/plan/recut_fleet.h"

namespace plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

TEST(RecutDocumentTest, NamesAndDrainsInWords) {
  EXPECT_EQ(RecutConfigName("mig-b"), "gpu-tenancy-recut-mig-b");
  RecutNode idle;
  EXPECT_EQ(DrainText(idle), "no GPU pods");
  RecutNode busy;
  busy.drained_pods = 2;
  busy.drained_tenants = {"bank"};
  EXPECT_EQ(DrainText(busy), "2 GPU pods of 1 tenant");
  busy.drained_pods = 1;
  busy.drained_tenants = {"bank", "research"};
  EXPECT_EQ(DrainText(busy), "1 GPU pod of 2 tenants");
}

TEST(RecutDocumentTest, OneMigPartedConfigPerReCutNode) {
  testing::RecutFleet fleet;
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, fleet.data.pods);
  RecutProposal proposal = ProposeRecuts(in.problem);
  ASSERT_EQ(proposal.recuts.size(), 1u);
  std::vector<MigPartedConfig> configs = RecutMigPartedConfigs(in, proposal);
  ASSERT_EQ(configs.size(), 1u);
  EXPECT_EQ(configs[0].name, "gpu-tenancy-recut-one-pod");
  ASSERT_EQ(configs[0].entries.size(), 1u);
  const MigPartedEntry& gpu0 = configs[0].entries[0];
  EXPECT_THAT(gpu0.devices, ElementsAre(0));
  EXPECT_TRUE(gpu0.mig_enabled);
  EXPECT_THAT(gpu0.mig_devices,
              ElementsAre(Pair("3g.40gb", 1), Pair("2g.20gb", 1), Pair("1g.10gb", 2)));
  EXPECT_THAT(DescribeRecut(proposal.recuts[0]),
              ElementsAre("GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"));
}

TEST(RecutDocumentTest, TextSaysWhatEachReCutServesDrainsAndRuns) {
  testing::RecutFleet fleet;
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, fleet.data.pods);
  RecutProposal proposal = ProposeRecuts(in.problem);
  absl::StatusOr<std::string> text = RecutText(in, proposal);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text,
              HasSubstr("pending MIG pods: 2 (0 fit now, 2 served by 1 re-cut, 0 unserved)"));
  EXPECT_THAT(*text, HasSubstr("re-cut one-pod from all-1g.10gb to gpu-tenancy-recut-one-pod\n"));
  EXPECT_THAT(*text, HasSubstr("  serves  acme/wants-3g, research/wants-2g\n"));
  EXPECT_THAT(*text, HasSubstr("  drains  1 GPU pod of 1 tenant (bank)\n"));
  EXPECT_THAT(*text, HasSubstr("  run     gpu-tenancy reconfigure one-pod --to "
                               "gpu-tenancy-recut-one-pod --mig-parted-config recut.yaml\n"));
  EXPECT_THAT(*text, HasSubstr("gpu-tenancy-recut-one-pod:"));  // the config itself follows
  EXPECT_THAT(*text, Not(HasSubstr("no re-cut serves")));

  EXPECT_EQ(RecutAdvice(in, proposal),
            "fits if one-pod is re-cut to gpu-tenancy-recut-one-pod [GPU 0: 1x 3g.40gb + 1x "
            "2g.20gb + 2x 1g.10gb] (drains 1 GPU pod of 1 tenant)");
}

TEST(RecutDocumentTest, UnservedPodsSayWhyAndGetNoAdvice) {
  testing::RecutFleet fleet;
  RecutInput in = RecutInputFromCluster(fleet.snapshot, fleet.policy, fleet.data.pods);
  for (RecutPod& pod : in.problem.pods) pod.nodes.clear();  // as if no tier allowed a node
  RecutProposal proposal = ProposeRecuts(in.problem);
  ASSERT_EQ(proposal.unserved.size(), 2u);
  absl::StatusOr<std::string> text = RecutText(in, proposal);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("no re-cut serves:\n  acme/wants-3g: no MIG node its tier and "
                               "quota let it use could offer it\n"));
  EXPECT_THAT(*text, Not(HasSubstr("mig-parted config")));
  EXPECT_EQ(RecutAdvice(in, proposal), "");
}

}  // namespace
}  // namespace plan
