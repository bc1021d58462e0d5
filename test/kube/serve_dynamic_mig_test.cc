// DynamicMIG through the binary: on a cluster file holding NVIDIA's partitionable publication of
// one H100 (the whole GPU and every MIG placement, drawing on the GPU's memory-slice counters,
// recorded from kube-scheduler v1.36.2) with a 3g.40gb on slices 0-3 and a 1g.10gb on slice 4
// allocated, /debug/allocations, `explain` and the DRA extended-resource fit agree with the
// counters: the whole GPU and every placement touching slices 0-4 are blocked, the 1g.10gb
// placements on slices 5 and 6 can still be cut.
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace serve_dynamic_mig_test {
namespace {

using testing_support::ParseOrDie;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kTeamPolicy[] = R"(tiers:
  - name: trusted
    modes: [exclusive, mig]
tenants:
  - name: team
    tier: trusted
    namespaces: [team]
unknownTenant: deny
)";

std::string DynamicMigCluster() {
  return absl::StrCat(GT_TESTDATA_DIR, "/dra/cluster-dynamic-mig.json");
}

std::set<std::string> Names(const rapidjson::Value& list, const char* key) {
  std::set<std::string> out;
  for (const auto& item : list.GetArray()) {
    out.insert(key == nullptr ? item.GetString() : item[key].GetString());
  }
  return out;
}

class ServeDynamicMigTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_.File("policy.yaml")) << kTeamPolicy; }
  std::string Policy() const { return dir_.File("policy.yaml"); }
  TempDir dir_;
};

TEST_F(ServeDynamicMigTest, TheInventoryShowsEachPlacementAsASliceOfItsGpu) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--cluster-file", DynamicMigCluster(), "--policy", Policy()}, dir_.File("serve.log"));
  ASSERT_TRUE(serve.ok()) << serve.status();
  ServeProcess::Response inventory = (*serve)->Get("/debug/allocations");
  ASSERT_EQ(inventory.status, 200) << inventory.body;
  rapidjson::Document doc = ParseOrDie(inventory.body);
  ASSERT_TRUE(doc.HasMember("partitionedGpus")) << inventory.body;
  const rapidjson::Value& gpus = doc["partitionedGpus"];
  ASSERT_EQ(gpus.Size(), 1u) << inventory.body;
  const rapidjson::Value& gpu = gpus[0];
  EXPECT_STREQ(gpu["node"].GetString(), "dm-node");
  EXPECT_STREQ(gpu["counterSet"].GetString(), "gpu-0-counter-set");
  ASSERT_EQ(gpu["held"].Size(), 2u) << inventory.body;
  const rapidjson::Value& small = gpu["held"][0];  // by device name: 1g10gb before 3g40gb
  EXPECT_STREQ(small["device"].GetString(), "gpu-0-mig-1g10gb-19-4");
  EXPECT_STREQ(small["migProfile"].GetString(), "1g.10gb");
  EXPECT_STREQ(small["claim"].GetString(), "team/small");
  EXPECT_STREQ(small["tenant"].GetString(), "team");
  const rapidjson::Value& big = gpu["held"][1];
  EXPECT_STREQ(big["device"].GetString(), "gpu-0-mig-3g40gb-9-0");
  ASSERT_EQ(big["memorySlices"].Size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(big["memorySlices"][i].GetInt(), i);
  EXPECT_EQ(Names(gpu["canStillCut"], "device"),
            (std::set<std::string>{"gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6"}))
      << inventory.body;
  const std::set<std::string> blocked = Names(gpu["blocked"], nullptr);
  EXPECT_TRUE(blocked.contains("gpu-0")) << "the whole GPU, while placements are held";
  EXPECT_TRUE(blocked.contains("gpu-0-mig-3g40gb-9-4")) << "slice 4 is held";
  EXPECT_TRUE(blocked.contains("gpu-0-mig-1g10gb-19-0")) << "slice 0 is held";

  // The claim lists its device as a slice of the same GPU.
  bool listed = false;
  for (const auto& tenant : doc["tenants"].GetArray()) {
    if (std::string(tenant["tenant"].GetString()) != "team" || !tenant.HasMember("claims")) {
      continue;
    }
    for (const auto& claim : tenant["claims"].GetArray()) {
      if (std::string(claim["name"].GetString()) != "big") continue;
      const rapidjson::Value& device = claim["devices"][0];
      EXPECT_STREQ(device["partitionOf"].GetString(), "gpu-0-counter-set");
      EXPECT_EQ(device["memorySlices"].Size(), 4u);
      listed = true;
    }
  }
  EXPECT_TRUE(listed) << inventory.body;

  // The DRA extended-resource fit: nvidia.com/gpu maps to whole GPUs, and the only one is
  // blocked.
  ServeProcess::Response filter = (*serve)->Post(
      "/extender/filter",
      R"({"Pod":{"metadata":{"name":"wants-gpu","namespace":"team","uid":"p-wants-gpu"},)"
      R"("spec":{"containers":[{"name":"main","image":"x",)"
      R"("resources":{"limits":{"nvidia.com/gpu":"1"}}}]},"status":{"phase":"Pending"}},)"
      R"("Nodes":null,"NodeNames":["dm-node"]})");
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document answer = ParseOrDie(filter.body);
  EXPECT_EQ(answer["NodeNames"].Size(), 0u) << filter.body;
  ASSERT_TRUE(answer["FailedNodes"].HasMember("dm-node")) << filter.body;
  EXPECT_TRUE(absl::StrContains(answer["FailedNodes"]["dm-node"].GetString(), "(0 of 1 free)"))
      << filter.body;
}

TEST_F(ServeDynamicMigTest, ExplainAgreesWithTheCounters) {
  auto explain = [&](const std::string& pod) {
    return testing_support::RunShell(absl::StrCat(testing_support::ShellQuote(GT_BINARY),
                                                  " explain --cluster-file '", DynamicMigCluster(),
                                                  "' --policy '", Policy(), "' --pod team/", pod));
  };
  // The second 3g.40gb: the other one holds slices 0-3 and the 1g.10gb slice 4.
  testing_support::CommandResult big2 = explain("wants-3g");
  ASSERT_EQ(big2.exit_code, 0) << big2.out << big2.err;
  EXPECT_TRUE(absl::StrContains(big2.out,
                                "dm-node  no       r (mig.nvidia.com): 1 wanted, 0 free match; 1 "
                                "held by claims; 1 blocked by the counters held devices use"))
      << big2.out;
  // The whole GPU, which kube-scheduler's allocator refused too.
  testing_support::CommandResult whole = explain("wants-whole");
  EXPECT_TRUE(absl::StrContains(whole.out,
                                "dm-node  no       r (gpu.nvidia.com): 1 wanted, 0 free match; 1 "
                                "blocked by the counters held devices use"))
      << whole.out;
  // A 1g.10gb: slices 5 and 6 are still free.
  testing_support::CommandResult small2 = explain("wants-1g");
  EXPECT_TRUE(
      absl::StrContains(small2.out, "dm-node  yes      r (mig.nvidia.com): 1 wanted, 2 free match"))
      << small2.out;
  testing_support::CommandResult gpu = explain("wants-gpu");
  EXPECT_TRUE(absl::StrContains(
      gpu.out, "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)"))
      << gpu.out;
}

}  // namespace
}  // namespace serve_dynamic_mig_test
