// DynamicMIG through the binary: on a cluster file (test/testdata/dra/cluster-dynamic-mig.json)
// holding NVIDIA's partitionable publication of one H100 (the whole GPU and every MIG placement,
// drawing on the GPU's memory-slice counters, recorded from kube-scheduler v1.36.2) with a
// 3g.40gb on slices 0-3 and a 1g.10gb on slice 4 allocated, /debug/allocations from `serve`,
// `explain`, and the DRA extended-resource fit (the extender's filter over HTTPS) agree with the
// counters: the whole GPU and every placement touching slices 0-4 are blocked everywhere, and
// exactly the 1g.10gb placements on slices 5 and 6 can still be cut. The cluster file's classes
// mig-1g.10gb.nvidia.com and mig-3g.40gb.nvidia.com back nvidia.com/mig-1g.10gb and
// nvidia.com/mig-3g.40gb, the names the device plugin used, so pods that ask for them by name
// are counted on the placements.
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace dynamic_mig_test {
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

// A names-only ExtenderArgs for a pending pod of namespace team asking `count` of `resource`.
std::string FilterRequest(const std::string& resource, int count) {
  return absl::StrCat(
      R"({"Pod":{"metadata":{"name":"asks","namespace":"team","uid":"p-asks"},)",
      R"("spec":{"containers":[{"name":"main","image":"x","resources":{"limits":{")", resource,
      R"(":")", count, R"("}}}]},"status":{"phase":"Pending"}},)",
      R"("Nodes":null,"NodeNames":["dm-node"]})");
}

class DynamicMigTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_.File("policy.yaml")) << kTeamPolicy; }
  std::string Policy() const { return dir_.File("policy.yaml"); }

  // `serve` on the cluster file, and its inventory's one partitioned GPU.
  void StartServe() {
    absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
        {"--cluster-file", DynamicMigCluster(), "--policy", Policy()}, dir_.File("serve.log"));
    ASSERT_TRUE(serve.ok()) << serve.status();
    serve_ = *std::move(serve);
    ServeProcess::Response inventory = serve_->Get("/debug/allocations");
    ASSERT_EQ(inventory.status, 200) << inventory.body;
    inventory_ = ParseOrDie(inventory.body);
    ASSERT_TRUE(inventory_.HasMember("partitionedGpus")) << inventory.body;
    ASSERT_EQ(inventory_["partitionedGpus"].Size(), 1u) << inventory.body;
  }
  const rapidjson::Value& Gpu() const { return inventory_["partitionedGpus"][0]; }

  testing_support::CommandResult Explain(const std::string& pod) const {
    return testing_support::RunShell(absl::StrCat(testing_support::ShellQuote(GT_BINARY),
                                                  " explain --cluster-file '", DynamicMigCluster(),
                                                  "' --policy '", Policy(), "' --pod team/", pod));
  }

  TempDir dir_;
  std::unique_ptr<ServeProcess> serve_;
  rapidjson::Document inventory_;
};

TEST_F(DynamicMigTest, TheInventoryShowsEachPlacementAsASliceOfItsGpu) {
  ASSERT_NO_FATAL_FAILURE(StartServe());
  const rapidjson::Value& gpu = Gpu();
  EXPECT_STREQ(gpu["node"].GetString(), "dm-node");
  EXPECT_STREQ(gpu["driver"].GetString(), "gpu.nvidia.com");
  EXPECT_STREQ(gpu["pool"].GetString(), "dm-node");
  EXPECT_STREQ(gpu["counterSet"].GetString(), "gpu-0-counter-set");
  ASSERT_EQ(gpu["held"].Size(), 2u);
  const rapidjson::Value& small = gpu["held"][0];  // by device name: 1g10gb before 3g40gb
  EXPECT_STREQ(small["device"].GetString(), "gpu-0-mig-1g10gb-19-4");
  EXPECT_STREQ(small["migProfile"].GetString(), "1g.10gb");
  EXPECT_STREQ(small["claim"].GetString(), "team/small");
  EXPECT_STREQ(small["tenant"].GetString(), "team");
  ASSERT_EQ(small["memorySlices"].Size(), 1u);
  EXPECT_EQ(small["memorySlices"][0].GetInt(), 4);
  const rapidjson::Value& big = gpu["held"][1];
  EXPECT_STREQ(big["device"].GetString(), "gpu-0-mig-3g40gb-9-0");
  EXPECT_STREQ(big["claim"].GetString(), "team/big");
  ASSERT_EQ(big["memorySlices"].Size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(big["memorySlices"][i].GetInt(), i);
  EXPECT_EQ(Names(gpu["canStillCut"], "device"),
            (std::set<std::string>{"gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6"}));
  EXPECT_EQ(Names(gpu["blocked"], nullptr),
            (std::set<std::string>{"gpu-0", "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1",
                                   "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3",
                                   "gpu-0-mig-3g40gb-9-4"}));

  // The claim lists its device as a slice of the same GPU.
  bool listed = false;
  for (const auto& tenant : inventory_["tenants"].GetArray()) {
    if (std::string(tenant["tenant"].GetString()) != "team" || !tenant.HasMember("claims")) {
      continue;
    }
    for (const auto& claim : tenant["claims"].GetArray()) {
      if (std::string(claim["name"].GetString()) != "big") continue;
      const rapidjson::Value& device = claim["devices"][0];
      EXPECT_STREQ(device["pool"].GetString(), "dm-node");
      EXPECT_STREQ(device["partitionOf"].GetString(), "gpu-0-counter-set");
      EXPECT_EQ(device["memorySlices"].Size(), 4u);
      listed = true;
    }
  }
  EXPECT_TRUE(listed);
}

// The filter fits a pod asking a DRA extended resource exactly when the inventory has that many
// placements of the class still to cut: two 1g.10gb, no 3g.40gb, not the whole GPU.
TEST_F(DynamicMigTest, TheExtendedResourceFitCountsWhatTheInventoryCanStillCut) {
  ASSERT_NO_FATAL_FAILURE(StartServe());
  std::map<std::string, int> cuttable;  // by MIG profile; "" the whole GPU
  for (const auto& d : Gpu()["canStillCut"].GetArray()) {
    ++cuttable[d.HasMember("migProfile") ? d["migProfile"].GetString() : ""];
  }
  EXPECT_EQ(cuttable, (std::map<std::string, int>{{"1g.10gb", 2}}));

  struct Row {
    std::string resource;
    std::string cut_as;  // the profile the class's devices have; "" the whole GPU
    int count;
    std::string refusal;  // the reason's tail when refused
  };
  const std::vector<Row> rows = {
      {"nvidia.com/gpu", "", 1, "class gpu.nvidia.com (0 of 1 free)"},
      {"nvidia.com/mig-3g.40gb", "3g.40gb", 1, "class mig-3g.40gb.nvidia.com (0 of 2 free)"},
      {"nvidia.com/mig-1g.10gb", "1g.10gb", 1, ""},
      {"nvidia.com/mig-1g.10gb", "1g.10gb", 2, ""},
      {"nvidia.com/mig-1g.10gb", "1g.10gb", 3,
       "requested 3, DRA devices of class mig-1g.10gb.nvidia.com have 2 of 7 free"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat(row.resource, " x", row.count));
    ServeProcess::Response filter =
        serve_->Post("/extender/filter", FilterRequest(row.resource, row.count));
    ASSERT_EQ(filter.status, 200) << filter.body;
    rapidjson::Document answer = ParseOrDie(filter.body);
    const bool fits = answer["NodeNames"].Size() == 1;
    EXPECT_EQ(fits, row.count <= cuttable[row.cut_as]) << filter.body;
    EXPECT_EQ(fits, row.refusal.empty()) << filter.body;
    if (!fits) {
      ASSERT_TRUE(answer["FailedNodes"].HasMember("dm-node")) << filter.body;
      EXPECT_TRUE(absl::StrContains(answer["FailedNodes"]["dm-node"].GetString(), row.refusal))
          << filter.body;
    }
  }
}

TEST_F(DynamicMigTest, ExplainAgreesWithTheCounters) {
  // The second 3g.40gb: the other one holds slices 0-3 and the 1g.10gb slice 4.
  testing_support::CommandResult big2 = Explain("wants-3g");
  ASSERT_EQ(big2.exit_code, 0) << big2.out << big2.err;
  EXPECT_TRUE(absl::StrContains(big2.out,
                                "dm-node  no       r (mig.nvidia.com): 1 wanted, 0 free match; 1 "
                                "held by claims; 1 blocked by the counters held devices use"))
      << big2.out;
  // The whole GPU, which kube-scheduler's allocator refused too.
  testing_support::CommandResult whole = Explain("wants-whole");
  EXPECT_TRUE(absl::StrContains(whole.out,
                                "dm-node  no       r (gpu.nvidia.com): 1 wanted, 0 free match; 1 "
                                "blocked by the counters held devices use"))
      << whole.out;
  // A 1g.10gb: slices 5 and 6 are still free.
  testing_support::CommandResult small2 = Explain("wants-1g");
  EXPECT_TRUE(
      absl::StrContains(small2.out, "dm-node  yes      r (mig.nvidia.com): 1 wanted, 2 free match"))
      << small2.out;
  // The same through the extended resources the classes back.
  testing_support::CommandResult gpu = Explain("wants-gpu");
  EXPECT_TRUE(absl::StrContains(
      gpu.out, "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)"))
      << gpu.out;
  testing_support::CommandResult big_ext = Explain("wants-3g-ext");
  EXPECT_TRUE(absl::StrContains(big_ext.out,
                                "dm-node  unschedulable      0  no free nvidia.com/mig-3g.40gb on "
                                "DRA devices of class mig-3g.40gb.nvidia.com (0 of 2 free)"))
      << big_ext.out;
  testing_support::CommandResult small_ext = Explain("wants-1g-ext");
  EXPECT_TRUE(absl::StrContains(small_ext.out, "dm-node  fits")) << small_ext.out;
  EXPECT_TRUE(absl::StrContains(small_ext.out, "1 of 1 nodes can take the pod")) << small_ext.out;
}

}  // namespace
}  // namespace dynamic_mig_test
