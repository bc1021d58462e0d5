// One workload's decisions through MakePlan: whole GPUs when no profile holds it, the maxGpus
// limit, and a VM boundary reported, not placed.
#include "plan/workload_decision.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/plan.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using plan::testing::HighWater;
using plan::testing::OneH100;
using plan::testing::Workload;
using ::testing::HasSubstr;

TEST(MakePlanTest, InfeasibleWholeGpuNamesTheWorkload) {
  WorkloadSpec w =
      Workload("huge-llm", "acme", Trust::kUntrusted, Latency::kSla, HighWater(200 * kGiB));
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("\"huge-llm\""));
  EXPECT_THAT(plan.status().message(), HasSubstr("maxGpus is 1"));
  EXPECT_THAT(plan.status().message(), HasSubstr("maxGpus: 3"));
}

TEST(MakePlanTest, WholeCardWhenNoProfileHoldsIt) {
  WorkloadSpec w = Workload("mid", "acme", Trust::kUntrusted, Latency::kSla, HighWater(45 * kGiB));
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kExclusive);
  EXPECT_THAT(plan->workloads[0].rounding, HasSubstr("-> 1 whole H100-80GB"));
}

TEST(MakePlanTest, VmBoundaryIsReportedNotPlaced) {
  WorkloadSpec w =
      Workload("regulated", "bank", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB));
  w.vm_boundary = true;
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kVmBoundary);
  EXPECT_EQ(plan->gpus_used, 0);
  EXPECT_EQ(plan->baseline_gpus, 0);
  EXPECT_THAT(plan->workloads[0].warnings[0], HasSubstr("licensed per concurrent vGPU"));
}

}  // namespace
}  // namespace plan
