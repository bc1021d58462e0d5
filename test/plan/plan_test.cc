// Whole plans: the worked example (cmd/demo/plan-example.yaml) and inconsistent inputs.
#include "plan/plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan_input.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using plan::testing::ExpectEveryLayoutValid;
using plan::testing::HighWater;
using plan::testing::Node;
using plan::testing::Workload;
using ::testing::HasSubstr;

using ::testing::UnorderedElementsAre;

std::vector<std::string> Cut(const GpuPlan& g) {
  std::vector<std::string> out;
  for (const PlannedInstance& i : g.instances) out.push_back(i.profile->name);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<Plan> PlanFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return absl::NotFoundError(path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  absl::StatusOr<PlanInput> input = common::ParsePlanInput(text);
  if (!input.ok()) return input.status();
  return MakePlan(*input, Cat());
}

TEST(MakePlanTest, WorkedExample) {
  absl::StatusOr<Plan> plan = PlanFile(GT_SOURCE_DIR "/cmd/demo/plan-example.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->gpus_used, 4);
  EXPECT_EQ(plan->baseline_gpus, 7);
  EXPECT_EQ(plan->baseline_replica_gpus, 16);
  EXPECT_EQ(plan->lower_bound, 4);
  ExpectEveryLayoutValid(*plan);
  std::vector<std::vector<std::string>> cuts;
  int exclusive = 0;
  for (const GpuPlan& g : plan->gpus) {
    if (g.use == GpuUse::kMig) cuts.push_back(Cut(g));
    if (g.use == GpuUse::kExclusive) {
      ++exclusive;
      ASSERT_EQ(g.clients.size(), 1u);
      EXPECT_EQ(plan->workloads[g.clients[0].workload].spec.name, "nightly-finetune");
    }
  }
  std::vector<std::string> zone_card = {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"};
  EXPECT_THAT(cuts,
              UnorderedElementsAre(zone_card, zone_card, std::vector<std::string>(7, "1g.10gb")));
  EXPECT_EQ(exclusive, 1);
  // Mirrored replicas sit in different zones; the embedding pool shares one card.
  std::map<std::string, std::vector<std::string>> zones;
  std::set<std::string> embed_cards;
  for (const GpuPlan& g : plan->gpus) {
    for (const PlannedInstance& i : g.instances) {
      const WorkloadPlan& w = plan->workloads[i.holder.workload];
      if (w.spec.mirrored) zones[w.spec.name].push_back(g.zone);
      if (w.spec.name == "embed-pool") embed_cards.insert(absl::StrCat(g.node, "/", g.index));
    }
  }
  for (const auto& [name, z] : zones) {
    SCOPED_TRACE(name);
    EXPECT_THAT(z, UnorderedElementsAre("a", "b"));
  }
  EXPECT_EQ(embed_cards.size(), 1u);
  // Sizes land where the example says, from both sizing paths.
  std::map<std::string, std::string> profiles;
  for (const WorkloadPlan& w : plan->workloads) {
    profiles[w.spec.name] = w.profile ? w.profile->name : std::string(MechanismName(w.mechanism));
  }
  EXPECT_EQ(profiles["acme-chat"], "3g.40gb");    // model description
  EXPECT_EQ(profiles["bank-assist"], "2g.20gb");  // high-water mark
  EXPECT_EQ(profiles["cobalt-code"], "1g.10gb");
  EXPECT_EQ(profiles["delta-classify"], "1g.10gb");
  EXPECT_EQ(profiles["nightly-finetune"], "exclusive");
}

TEST(MakePlanTest, InputErrors) {
  WorkloadSpec w = Workload("w", "t", Trust::kTrusted, Latency::kSla, HighWater(kGiB));
  PlanInput in;
  in.fleet = {Node("l4", "L4", 1)};  // not in the catalog and no memory given
  in.workloads = {w};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("give its memory"));

  in.fleet = {Node("n", "H100-80GB", 1), Node("n", "H100-80GB", 1)};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("listed twice"));

  in.fleet = {Node("n", "H100-80GB", 2)};
  WorkloadSpec other = Workload("x", "t", Trust::kUntrusted, Latency::kSla, HighWater(kGiB));
  in.workloads = {w, other};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("disagree on trust"));

  WorkloadSpec mirrored = w;
  mirrored.mirrored = true;
  in.workloads = {mirrored};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("fewer than two zones"));

  in.fleet = {Node("n", "H200-141GB", 1)};
  in.workloads = {w};
  absl::Status s = MakePlan(in, Cat()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("workload \"w\": cannot size a MIG profile on H200-141GB"));

  in.fleet = {Node("n", "H100-80GB", 1)};
  WorkloadSpec pinned = w;
  pinned.gpu = "B200-180GB";
  in.workloads = {pinned};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("not in the fleet"));
}

}  // namespace
}  // namespace plan
