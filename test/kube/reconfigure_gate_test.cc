// The MIG reconfiguration gate (kube/reconfigure_gate.h) over the in-memory Api, with
// mig-manager played by the OnStep callback (it rewrites the Node the way mig-manager and the
// device plugin would, right after the gate labels it): the steps in order, the patches it makes,
// the rollback when mig-manager reports failure, a dry run that writes nothing, and a precheck
// that refuses before anything changes. reconfigure_test drives the binary end to end against
// the HTTPS emulation and a simulated mig-manager.
#include "kube/reconfigure_gate.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/support/in_memory_api.h"
#include "wire/mig_parted_codec.h"

namespace kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_support::InMemoryApi;
using topology::GateStep;

constexpr char kGateNodePath[] = "/api/v1/nodes/mig-a";
constexpr char kGatePodsOnNode[] = "/api/v1/pods?fieldSelector=spec.nodeName%3Dmig-a";

constexpr char kConfigs[] = R"(version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
)";

// One H100 under `config`, as mig-manager leaves it (`state`), offering `allocatable`.
std::string Node(const std::string& config, const std::string& state,
                 const std::string& allocatable, bool unschedulable = false) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"mig-a","uid":"uid-mig-a",)",
      R"("labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"1",)",
      R"("nvidia.com/mig.strategy":"mixed","nvidia.com/mig.config":")", config, R"(")",
      state.empty() ? "" : absl::StrCat(R"(,"nvidia.com/mig.config.state":")", state, R"(")"),
      R"(}},"spec":{"unschedulable":)", unschedulable ? "true" : "false",
      R"(},"status":{"allocatable":{)", allocatable, "}}}");
}

constexpr char kSevenSmall[] = R"("nvidia.com/mig-1g.10gb":"7")";
constexpr char kTwoLarge[] = R"("nvidia.com/mig-3g.40gb":"2","nvidia.com/mig-1g.10gb":"0")";

constexpr char kOnePod[] = R"({"kind":"PodList","items":[{"metadata":{"name":"train",
  "namespace":"acme","uid":"u1"},"spec":{"nodeName":"mig-a","containers":[{"name":"c",
  "resources":{"limits":{"nvidia.com/mig-1g.10gb":"1"}}}]},"status":{"phase":"Running"}}]})";
constexpr char kNoPods[] = R"({"kind":"PodList","items":[]})";

class ReconfigureGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.SetObject(kGateNodePath, Node("all-1g.10gb", "success", kSevenSmall));
    absl::StatusOr<topology::MigPartedFile> configs = wire::ParseMigPartedConfig(kConfigs);
    ASSERT_TRUE(configs.ok()) << configs.status();
    options_.node = "mig-a";
    options_.target = "all-3g.40gb";
    options_.configs = *configs;
    options_.timeout = absl::Seconds(5);
    options_.settle = absl::Seconds(5);
    // The pod list: read by the precheck, the traffic check and the drain; the drain's second
    // read finds the node empty.
    for (const char* list : {kOnePod, kOnePod, kOnePod, kNoPods}) {
      api_.Reply("GET", kGatePodsOnNode, 200, list);
    }
  }

  // mig-manager's part: after `step`, the Node becomes `node`.
  GateReport RunWith(GateStep step, const std::string& node) {
    ReconfigureGate gate(api_, common::BuiltinCatalog(), Clock::Real());
    gate.OnStep([&](const StepRecord& r) {
      steps_.push_back(std::string(topology::StepName(r.step)));
      if (r.step == step && r.ok) api_.SetObject(kGateNodePath, node);
    });
    return gate.Run(options_);
  }

  std::vector<std::string> PatchBodies() const {
    std::vector<std::string> out;
    for (const InMemoryApi::Call& c : api_.Calls("PATCH", kGateNodePath)) out.push_back(c.body);
    return out;
  }

  InMemoryApi api_;
  GateOptions options_;
  std::vector<std::string> steps_;
};

TEST_F(ReconfigureGateTest, CordonsDrainsAppliesValidatesAndUncordons) {
  GateReport report = RunWith(GateStep::kApply, Node("all-3g.40gb", "success", kTwoLarge, true));
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.previous_config, "all-1g.10gb");
  EXPECT_THAT(report.evictions, ElementsAre("acme/train"));
  EXPECT_THAT(steps_, ElementsAre("precheck", "cordon", "traffic-check", "drain", "apply",
                                  "wait-mig-manager", "validate", "smoke", "uncordon"));
  EXPECT_EQ(api_.Calls("POST", "/api/v1/namespaces/acme/pods/train/eviction").size(), 1u);
  // Cordon, the config label (and the old state label removed), uncordon (null removes it, as
  // kubectl uncordon does).
  std::vector<std::string> patches = PatchBodies();
  ASSERT_EQ(patches.size(), 3u);
  EXPECT_THAT(patches[0], HasSubstr(R"("unschedulable":true)"));
  EXPECT_THAT(patches[1], HasSubstr(R"("nvidia.com/mig.config":"all-3g.40gb")"));
  EXPECT_THAT(patches[1], HasSubstr(R"("nvidia.com/mig.config.state":null)"));
  EXPECT_THAT(patches[2], HasSubstr(R"("unschedulable":null)"));
  EXPECT_FALSE(report.left_cordoned);
  EXPECT_THAT(report.outcome, HasSubstr("reconfigured: nvidia.com/mig.config=all-3g.40gb"));
  // An Event on the Node per step.
  EXPECT_EQ(api_.Calls("POST", "/api/v1/namespaces/default/events").size(), steps_.size());
}

TEST_F(ReconfigureGateTest, AFailureAfterApplyRollsBackToThePreviousConfig) {
  ReconfigureGate gate(api_, common::BuiltinCatalog(), Clock::Real());
  gate.OnStep([&](const StepRecord& r) {
    steps_.push_back(std::string(topology::StepName(r.step)));
    if (r.step == GateStep::kApply) {
      api_.SetObject(kGateNodePath, Node("all-3g.40gb", "failed", kSevenSmall, true));
    } else if (r.step == GateStep::kRollbackApply) {
      api_.SetObject(kGateNodePath, Node("all-1g.10gb", "success", kSevenSmall, true));
    }
  });
  GateReport report = gate.Run(options_);
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.failed_step, GateStep::kWaitForMigManager);
  EXPECT_THAT(report.error, HasSubstr("mig-manager reported nvidia.com/mig.config.state=failed"));
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.rollback_ok);
  EXPECT_THAT(steps_, ElementsAre("precheck", "cordon", "traffic-check", "drain", "apply",
                                  "wait-mig-manager", "rollback-apply", "rollback-wait",
                                  "rollback-validate", "rollback-uncordon"));
  EXPECT_THAT(PatchBodies().back(), HasSubstr(R"("unschedulable":null)"));
  EXPECT_THAT(report.outcome, HasSubstr("rolled back to all-1g.10gb"));
}

TEST_F(ReconfigureGateTest, ADryRunReadsAndWritesNothing) {
  options_.dry_run = true;
  GateReport report = RunWith(GateStep::kApply, "");
  EXPECT_TRUE(report.ok) << report.error;
  EXPECT_THAT(steps_, ElementsAre("precheck"));
  EXPECT_THAT(report.evictions, ElementsAre("acme/train"));  // what it would drain
  EXPECT_THAT(report.geometry_after, ElementsAre("GPU 0: 2x 3g.40gb"));
  EXPECT_TRUE(api_.Calls("PATCH", "/").empty());
  EXPECT_TRUE(api_.Calls("POST", "/").empty());
  EXPECT_EQ(report.outcome, "dry run: nothing was changed");
}

TEST_F(ReconfigureGateTest, APrecheckRefusalChangesNothing) {
  options_.target = "all-7g.80gb";  // not in the mig-parted config
  GateReport report = RunWith(GateStep::kApply, "");
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.failed_step, GateStep::kPrecheck);
  EXPECT_THAT(report.error, HasSubstr("--to all-7g.80gb: no such config"));
  EXPECT_TRUE(api_.Calls("PATCH", "/").empty());
  EXPECT_THAT(report.outcome, HasSubstr("failed before anything was applied"));

  // A node mid-reconfiguration is refused too: there is no settled config to roll back to.
  api_.SetObject(kGateNodePath, Node("all-1g.10gb", "pending", kSevenSmall));
  options_.target = "all-3g.40gb";
  report = RunWith(GateStep::kApply, "");
  EXPECT_EQ(report.failed_step, GateStep::kPrecheck);
  EXPECT_THAT(report.error, HasSubstr("is mid-reconfiguration"));
}

}  // namespace
}  // namespace kube
