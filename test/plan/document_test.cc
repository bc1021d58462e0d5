// The plan document: what each workload's pods and claims ask for, and the memory annotation
// taken from the input (the policy's name) rather than a fixed one.
#include "plan/document.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Cat;
using plan::testing::HighWater;
using plan::testing::Node;
using plan::testing::Workload;
using ::testing::HasSubstr;

TEST(BuildDocumentTest, PodsAndClaimsPerMechanism) {
  struct Row {
    std::string name;
    WorkloadSpec workload;
    std::string resource;
    std::string claim;
    bool annotated;
  };
  WorkloadSpec training =
      Workload("train", "lab", Trust::kTrusted, Latency::kBestEffort, HighWater(60 * kGiB));
  training.training = true;
  WorkloadSpec shared =
      Workload("notebook", "lab", Trust::kTrusted, Latency::kBestEffort, HighWater(4 * kGiB));
  shared.gpu = "L4";
  const std::vector<Row> rows = {
      {"MIG instance per pod",
       Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB)),
       "nvidia.com/mig-1g.10gb", "chat-gpu", false},
      {"whole GPUs per pod", training, "nvidia.com/gpu", "train-gpu", false},
      {"a shared GPU declares its memory", shared, "nvidia.com/gpu.shared", "notebook-shared-gpu",
       true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    PlanInput in;
    in.fleet = {Node("h100", "H100-80GB", 1), Node("l4", "L4", 1, "", 23034)};
    in.workloads = {row.workload};
    absl::StatusOr<Plan> made = MakePlan(in, Cat());
    ASSERT_TRUE(made.ok()) << made.status();
    PlanDocument doc = BuildDocument(*std::move(made));
    ASSERT_EQ(doc.pods.size(), 1u);
    EXPECT_EQ(doc.pods[0].resource, row.resource);
    EXPECT_EQ(doc.pods[0].memory_annotation.has_value(), row.annotated);
    ASSERT_EQ(doc.claims.size(), 1u);
    EXPECT_EQ(doc.claims[0].name, row.claim);
    EXPECT_EQ(doc.claims[0].shared(), row.annotated);
  }
}

TEST(BuildDocumentTest, MemoryAnnotationIsThePolicys) {
  PlanInput in;
  in.fleet = {Node("l4", "L4", 1, "", 23034)};
  in.workloads = {
      Workload("notebook", "lab", Trust::kTrusted, Latency::kBestEffort, HighWater(4 * kGiB))};
  in.memory_annotation = "example.com/gpu-memory";
  absl::StatusOr<Plan> made = MakePlan(in, Cat());
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_THAT(made->workloads[0].rounding, HasSubstr("declared with example.com/gpu-memory"));
  PlanDocument doc = BuildDocument(*std::move(made));
  ASSERT_EQ(doc.pods.size(), 1u);
  ASSERT_TRUE(doc.pods[0].memory_annotation.has_value());
  EXPECT_EQ(doc.pods[0].memory_annotation->first, "example.com/gpu-memory");
  EXPECT_EQ(doc.pods[0].memory_annotation->second, "4506Mi");
}

}  // namespace
}  // namespace plan
