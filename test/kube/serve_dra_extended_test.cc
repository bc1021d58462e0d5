// DRA extended resources through the binary: on a cluster file with two DRA-only nodes (no
// nvidia.com/gpu allocatable), one whose H100 is free and one whose H100 an allocated claim
// holds, and the gpu.nvidia.com class mapping nvidia.com/gpu, a pod asking nvidia.com/gpu: 1
// passes filter on the free node only, the other failing with the reason; prioritize scores
// the node that fits; `explain` on the same pod names the same reason.
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace serve_dra_extended_test {
namespace {

using testing_support::ParseOrDie;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kExtendedPolicy[] = R"(tiers:
  - name: trusted
    modes: [exclusive, mig]
tenants:
  - name: team-a
    tier: trusted
    namespaces: [team-a]
unknownTenant: deny
)";

constexpr char kBusyReason[] =
    "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)";

std::string ExtendedClusterFile() {
  return absl::StrCat(GT_TESTDATA_DIR, "/dra/cluster-extended-resources.json");
}

// The pending pod of the cluster file, as ExtenderArgs carry it (names only).
std::string ExtendedArgs() {
  return R"({"Pod":{"metadata":{"name":"wants-gpu","namespace":"team-a",)"
         R"("uid":"p0000000-0000-4000-8000-000000000002"},)"
         R"("spec":{"containers":[{"name":"main","image":"x",)"
         R"("resources":{"limits":{"nvidia.com/gpu":"1"}}}]},"status":{"phase":"Pending"}},)"
         R"("Nodes":null,"NodeNames":["dra-busy","dra-free"]})";
}

TEST(ServeDraExtendedTest, FilterCountsTheNodesFreeDevicesOfTheMappedClass) {
  TempDir dir;
  std::ofstream(dir.File("policy.yaml")) << kExtendedPolicy;
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--cluster-file", ExtendedClusterFile(), "--policy", dir.File("policy.yaml")},
      dir.File("serve.log"));
  ASSERT_TRUE(serve.ok()) << serve.status();

  ServeProcess::Response filter = (*serve)->Post("/extender/filter", ExtendedArgs());
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document doc = ParseOrDie(filter.body);
  ASSERT_TRUE(doc.HasMember("NodeNames") && doc["NodeNames"].IsArray()) << filter.body;
  ASSERT_EQ(doc["NodeNames"].Size(), 1u) << filter.body;
  EXPECT_EQ(std::string(doc["NodeNames"][0].GetString()), "dra-free");
  ASSERT_TRUE(doc.HasMember("FailedNodes") && doc["FailedNodes"].HasMember("dra-busy"))
      << filter.body;
  EXPECT_TRUE(absl::StrContains(doc["FailedNodes"]["dra-busy"].GetString(), kBusyReason))
      << filter.body;
  EXPECT_FALSE(doc.HasMember("FailedAndUnresolvableNodes") &&
               doc["FailedAndUnresolvableNodes"].IsObject() &&
               doc["FailedAndUnresolvableNodes"].HasMember("dra-busy"))
      << "claims may be released, so the busy node is not unresolvable: " << filter.body;

  ServeProcess::Response prioritize = (*serve)->Post("/extender/prioritize", ExtendedArgs());
  ASSERT_EQ(prioritize.status, 200) << prioritize.body;
  rapidjson::Document scores = ParseOrDie(prioritize.body);
  ASSERT_TRUE(scores.IsArray()) << prioritize.body;
  int free_score = -1, busy_score = -1;
  for (const auto& host : scores.GetArray()) {
    const std::string name = host["Host"].GetString();
    if (name == "dra-free") free_score = host["Score"].GetInt();
    if (name == "dra-busy") busy_score = host["Score"].GetInt();
  }
  EXPECT_GT(free_score, 0) << prioritize.body;
  EXPECT_EQ(busy_score, 0) << prioritize.body;
}

TEST(ServeDraExtendedTest, ExplainNamesTheReason) {
  TempDir dir;
  std::ofstream(dir.File("policy.yaml")) << kExtendedPolicy;
  testing_support::CommandResult run = testing_support::RunShell(absl::StrCat(
      testing_support::ShellQuote(GT_BINARY), " explain --cluster-file ",
      testing_support::ShellQuote(ExtendedClusterFile()), " --policy ",
      testing_support::ShellQuote(dir.File("policy.yaml")), " --pod team-a/wants-gpu"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "demand  nvidia.com/gpu=1\n")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, absl::StrCat("unschedulable      0  ", kBusyReason, "\n")))
      << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "1 of 2 nodes can take the pod\n")) << run.out;
}

}  // namespace
}  // namespace serve_dra_extended_test
