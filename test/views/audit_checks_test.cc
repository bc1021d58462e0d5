#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/views/audit_fixture.h"
#include "topology/mig_parted.h"
#include "views/audit.h"

namespace views {
namespace {

using testing::AuditDemoPolicy;
using testing::AuditModel;
using testing::ExclusiveNode;
using testing::GpuNode;
using testing::GpuPod;
using testing::MigNode;
using testing::SharedNode;

const testing::Resources kMigGeometry = {{"nvidia.com/mig-3g.40gb", "1"},
                                         {"nvidia.com/mig-2g.20gb", "1"},
                                         {"nvidia.com/mig-1g.10gb", "2"}};

topology::MigPartedFile TenancyLayout() {
  topology::MigPartedEntry entry;
  entry.mig_enabled = true;
  entry.mig_devices = {{"3g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 2}};
  topology::MigPartedFile file;
  file.layouts.push_back({"tenancy-3-2-1-1", {entry}});
  return file;
}

// A node whose agent has reported its GPUs.
topology::NodeFacts Reported(topology::NodeFacts node) {
  node.reported_gpus = topology::NodeGpus{{{"GPU-0", {}}}, {}, {}};
  return node;
}

// The two entries `gpu-tenancy scheduler-config` writes: one filters and preempts for the GPU
// names, one with no names answers every preemption.
std::vector<SchedulerExtender> ShippedExtenders(std::vector<std::string> managed) {
  const std::string url = "https://gpu-tenancy-extender.gpu-tenancy-system.svc:8443/extender";
  return {{url, true, true, std::move(managed)}, {url, false, true, {}}};
}

// `pod` carrying a report of `gpu` on `node`, and the node's agent recording `recorded` for it
// (nothing when empty).
topology::PodFacts WithReport(topology::PodFacts pod, const std::string& gpu) {
  pod.device_report =
      topology::DeviceReport{pod.node_name, {{"main", {{"nvidia.com/gpu", {gpu}}}}}};
  return pod;
}
topology::NodeFacts Recording(topology::NodeFacts node, const std::string& uid,
                              const std::string& gpu) {
  node.reported_gpus = topology::NodeGpus{{{"GPU-0", {}}, {"GPU-1", {}}}, {}, {}};
  if (!gpu.empty()) node.reported_gpus->pods.push_back({uid, {{"nvidia.com/gpu", {gpu}}}});
  return node;
}

// The fair-sharing scenario's policy (test/testdata/fair_share): vision and speech guaranteed
// 4 GPUs each.
void FairSharePolicy(topology::Policy& policy) {
  std::ifstream in(std::string(GT_TESTDATA_DIR) + "/fair_share/policy.yaml");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<topology::Policy> loaded = common::LoadPolicy(text.str());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  policy = *std::move(loaded);
}

struct CheckCase {
  std::string name;
  std::string check;
  std::vector<topology::NodeFacts> nodes;
  std::vector<topology::PodFacts> pods;
  std::function<void(topology::Policy&)> edit_policy;  // may be null
  std::function<void(AuditInputs&)> edit_inputs;       // may be null
  CheckStatus want;
  std::vector<std::string> objects;  // the findings' objects, in order
  bool site_mig_parted = false;      // the state's catalog carries the site's mig-parted config
};

CheckResult RunOne(const std::string& id, const AuditInputs& in) {
  for (const AuditCheck& c : AuditChecks()) {
    if (c.id == id) return c.run(in);
  }
  ADD_FAILURE() << "no check " << id;
  return {};
}

TEST(AuditChecksTest, EachItemPassesAndFails) {
  // The site's mig-parted config comes with the state's catalog (CheckCase::site_mig_parted).
  const topology::Catalog with_file = common::BuiltinCatalog().WithMigParted(
      std::make_shared<const topology::MigPartedFile>(TenancyLayout()));
  const std::vector<CheckCase> cases = {
      {"untrusted tenant on MIG passes",
       "untrusted-isolation",
       {MigNode("mig", 1, kMigGeometry)},
       {GpuPod("acme", "llm", "mig", {{"nvidia.com/mig-3g.40gb", "1"}})},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"untrusted tenant on a time-sliced replica fails",
       "untrusted-isolation",
       {SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-timeslice")},
       {GpuPod("acme", "chat", "ts", {{"nvidia.com/gpu.shared", "1"}}),
        GpuPod("research", "nb", "ts", {{"nvidia.com/gpu.shared", "1"}})},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"pod/acme/chat"}},
      {"MIG pool on H100 passes",
       "mig-pools-on-mig-gpus",
       {MigNode("mig", 1, kMigGeometry)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"MIG pool on an L4 fails",
       "mig-pools-on-mig-gpus",
       {GpuNode("l4", {{"nvidia.com/gpu.product", "NVIDIA-L4"}, {"gpu-tenancy.io/pool", "gpu-mig"}},
                {{"nvidia.com/gpu", "1"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/l4"}},
      {"renamed time-slicing passes",
       "separate-resource-names",
       {SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-timeslice"),
        ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"time-slicing not renamed fails",
       "separate-resource-names",
       {SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu", "4"}}, "gpu-timeslice",
                   "NVIDIA-A100-SXM4-40GB-SHARED")},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/ts"}},
      {"shared replicas in the exclusive pool fail",
       "separate-resource-names",
       {SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-exclusive")},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/ts"}},
      {"without failRequestsGreaterThanOne fails",
       "separate-resource-names",
       {SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-timeslice")},
       {},
       [](topology::Policy& p) { p.fail_requests_greater_than_one = false; },
       nullptr,
       CheckStatus::kFail,
       {"policy"}},
      {"MPS alone passes",
       "mps-timeslice-separate",
       {SharedNode("mps", "mps", 1, {{"nvidia.com/gpu.shared", "4"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"MPS beside time-sliced MIG fails",
       "mps-timeslice-separate",
       {SharedNode("mps", "mps", 1,
                   {{"nvidia.com/gpu.shared", "4"}, {"nvidia.com/mig-1g.10gb.shared", "4"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mps"}},
      {"MPS on a MIG node fails",
       "mps-timeslice-separate",
       {SharedNode("mps", "mps", 1,
                   {{"nvidia.com/gpu.shared", "4"}, {"nvidia.com/mig-1g.10gb", "7"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mps"}},
      {"MIG geometry as configured passes",
       "mig-config-applied",
       {MigNode("mig", 1, kMigGeometry)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {},
       /*site_mig_parted=*/true},
      {"MIG geometry drifted fails",
       "mig-config-applied",
       {MigNode("mig", 1, {{"nvidia.com/mig-1g.10gb", "7"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mig"},
       /*site_mig_parted=*/true},
      {"MIG node pending fails",
       "mig-config-applied",
       {MigNode("mig", 1, kMigGeometry, "pending")},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mig"},
       /*site_mig_parted=*/true},
      {"MIG config neither the mig-parted file nor NVIDIA's defaults know only warns",
       "mig-config-applied",
       {MigNode("mig", 1, kMigGeometry, "success", {{"nvidia.com/mig.config", "custom"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kWarn,
       {},
       /*site_mig_parted=*/true},
      {"NVIDIA's default config as cut passes without a mig-parted config",
       "mig-config-applied",
       {MigNode("mig", 2, {{"nvidia.com/mig-1g.10gb", "14"}}, "success",
                {{"nvidia.com/mig.config", "all-1g.10gb"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"drift from NVIDIA's default config fails without a mig-parted config",
       "mig-config-applied",
       {MigNode("mig", 2, {{"nvidia.com/mig-1g.10gb", "11"}}, "success",
                {{"nvidia.com/mig.config", "all-1g.10gb"}}),
        MigNode("mig-custom", 1, kMigGeometry)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mig"}},
      {"device plugin paused while mig-manager reports success fails",
       "mig-config-applied",
       {MigNode("mig", 1, kMigGeometry, "success",
                {{"nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/mig"},
       /*site_mig_parted=*/true},
      {"no MIG node passes without a mig-parted config",
       "mig-config-applied",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"without a mig-parted config only warns",
       "mig-config-applied",
       {MigNode("mig", 1, kMigGeometry)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kWarn,
       {}},
      {"no canary asked passes",
       "canary-slice-free",
       {MigNode("mig", 1, {{"nvidia.com/mig-1g.10gb", "1"}})},
       {GpuPod("acme", "a", "mig", {{"nvidia.com/mig-1g.10gb", "1"}})},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"canary slice free passes",
       "canary-slice-free",
       {MigNode("mig", 1, {{"nvidia.com/mig-1g.10gb", "2"}})},
       {GpuPod("acme", "a", "mig", {{"nvidia.com/mig-1g.10gb", "1"}})},
       [](topology::Policy& p) {
         p.canary = topology::Canary{"1g.10gb", 1};
       },
       nullptr,
       CheckStatus::kPass,
       {}},
      {"canary slice taken fails",
       "canary-slice-free",
       {MigNode("mig", 1, {{"nvidia.com/mig-1g.10gb", "1"}})},
       {GpuPod("acme", "a", "mig", {{"nvidia.com/mig-1g.10gb", "1"}})},
       [](topology::Policy& p) {
         p.canary = topology::Canary{"1g.10gb", 1};
       },
       nullptr,
       CheckStatus::kFail,
       {"node/mig"}},
      {"wiring not given warns",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kWarn,
       {}},
      {"wiring covering every name passes",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1),
        SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-timeslice")},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.wiring.extenders = ShippedExtenders({"nvidia.com/gpu", "nvidia.com/gpu.shared"});
         in.wiring.validating_webhook = in.wiring.mutating_webhook = true;
       },
       CheckStatus::kPass,
       {}},
      {"an extender entry managing GPU names without preemptVerb fails",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.wiring.extenders = ShippedExtenders({"nvidia.com/gpu"});
         (*in.wiring.extenders)[0].preempt = false;
         in.wiring.validating_webhook = in.wiring.mutating_webhook = true;
       },
       CheckStatus::kFail,
       {"extenders/0"}},
      {"no entry asked about every preemption fails",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.wiring.extenders = ShippedExtenders({"nvidia.com/gpu"});
         in.wiring.extenders->pop_back();
         in.wiring.validating_webhook = in.wiring.mutating_webhook = true;
       },
       CheckStatus::kFail,
       {"extenders"}},
      {"webhooks unreadable warn, naming why",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.wiring.extenders = ShippedExtenders({"nvidia.com/gpu"});
         in.wiring.webhooks_unseen = "listing validatingwebhookconfigurations: HTTP 403";
       },
       CheckStatus::kWarn,
       {}},
      {"a name the extender does not manage and a missing webhook fail",
       "scheduler-webhook-wiring",
       {ExclusiveNode("excl", 1),
        SharedNode("ts", "time-slicing", 1, {{"nvidia.com/gpu.shared", "4"}}, "gpu-timeslice")},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.wiring.extenders = ShippedExtenders({"nvidia.com/gpu"});
         in.wiring.validating_webhook = true;
         in.wiring.mutating_webhook = false;
       },
       CheckStatus::kFail,
       {"resource/nvidia.com/gpu.shared", "mutatingwebhookconfiguration"}},
      {"escape hatches not inspected warn",
       "device-escape-hatches",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kWarn,
       {}},
      {"escape hatch of a device-access tier passes",
       "device-escape-hatches",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.escape_hatches = {{{"gpu-ops", "pod/gpu-ops/debug", "container \"x\" is privileged"}}};
       },
       CheckStatus::kPass,
       {}},
      {"escape hatch of an untrusted tenant fails",
       "device-escape-hatches",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.escape_hatches = {{{"gpu-ops", "pod/gpu-ops/debug", "container \"x\" is privileged"},
                               {"acme", "resourceclaim/acme/all", "request \"g\" asks for admin"}}};
       },
       CheckStatus::kFail,
       {"resourceclaim/acme/all"}},
      {"reports the agents recorded pass",
       "device-reports-from-agent",
       {Recording(ExclusiveNode("excl", 2), "acme-llm", "GPU-0")},
       {WithReport(GpuPod("acme", "llm", "excl", {{"nvidia.com/gpu", "1"}}), "GPU-0")},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"a report the agent did not write fails, whatever the namespace",
       "device-reports-from-agent",
       {Recording(ExclusiveNode("excl", 2), "acme-llm", "GPU-0")},
       {WithReport(GpuPod("acme", "llm", "excl", {{"nvidia.com/gpu", "1"}}), "GPU-1"),
        WithReport(GpuPod("kube-system", "probe", "excl", {{"nvidia.com/gpu", "1"}}), "GPU-1")},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"pod/acme/llm", "pod/kube-system/probe"}},
      {"no node agent anywhere warns",
       "gpu-metrics-attributable",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kWarn,
       {"node/excl"}},
      {"node agent and DCGM everywhere pass",
       "gpu-metrics-attributable",
       {Reported(GpuNode("excl", {{"nvidia.com/gpu.deploy.dcgm-exporter", "true"}},
                         {{"nvidia.com/gpu", "1"}}))},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"node agent on some nodes only fails",
       "gpu-metrics-attributable",
       {Reported(GpuNode("excl", {{"nvidia.com/gpu.deploy.dcgm-exporter", "true"}},
                         {{"nvidia.com/gpu", "1"}})),
        GpuNode("other", {{"nvidia.com/gpu.deploy.dcgm-exporter", "true"}},
                {{"nvidia.com/gpu", "1"}})},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/other"}},
      {"node agent without DCGM fails",
       "gpu-metrics-attributable",
       {Reported(ExclusiveNode("excl", 1))},
       {},
       nullptr,
       nullptr,
       CheckStatus::kFail,
       {"node/excl"}},
      // The contract guard's findings are the caller's to make (guard/contract.h).
      {"no contract findings passes",
       "contract-held",
       {},
       {},
       nullptr,
       [](AuditInputs& in) { in.contract = std::vector<views::ContractFinding>{}; },
       CheckStatus::kPass,
       {}},
      {"a contract finding fails",
       "contract-held",
       {},
       {},
       nullptr,
       [](AuditInputs& in) {
         in.contract = std::vector<views::ContractFinding>{
             {"pod/acme/sneaky", "acme", "tier-shared", "[tier-shared] ..."}};
       },
       CheckStatus::kFail,
       {"pod/acme/sneaky"}},
      {"not judged warns", "contract-held", {}, {}, nullptr, nullptr, CheckStatus::kWarn, {}},
      {"no fair sharing passes",
       "fair-share-guarantees-fit",
       {ExclusiveNode("excl", 1)},
       {},
       nullptr,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"guarantees of 4 + 4 GPUs on 8 pass",
       "fair-share-guarantees-fit",
       {ExclusiveNode("excl-a", 4), ExclusiveNode("excl-b", 4)},
       {},
       FairSharePolicy,
       nullptr,
       CheckStatus::kPass,
       {}},
      {"guarantees of 4 + 4 GPUs on 4 fail",
       "fair-share-guarantees-fit",
       {ExclusiveNode("excl-a", 4)},
       {},
       FairSharePolicy,
       nullptr,
       CheckStatus::kFail,
       {"policy"}},
  };
  std::set<std::string> covered_pass, covered_fail;
  for (const CheckCase& c : cases) {
    SCOPED_TRACE(c.name);
    topology::Policy policy = AuditDemoPolicy();
    if (c.edit_policy) c.edit_policy(policy);
    AuditModel model(c.nodes, c.pods, policy);
    if (c.site_mig_parted) model.state->catalog = &with_file;
    AuditInputs in = model.Inputs();
    if (c.edit_inputs) c.edit_inputs(in);
    CheckResult r = RunOne(c.check, in);
    EXPECT_EQ(StatusName(r.status), StatusName(c.want)) << r.detail;
    std::vector<std::string> objects;
    for (const CheckFinding& f : r.findings) objects.push_back(f.object);
    EXPECT_EQ(objects, c.objects);
    if (r.status == CheckStatus::kFail) {
      EXPECT_FALSE(r.fix.empty());
      covered_fail.insert(c.check);
    } else if (r.status == CheckStatus::kPass) {
      covered_pass.insert(c.check);
    }
  }
  // Every item of the table has a passing and a failing case.
  for (const AuditCheck& check : AuditChecks()) {
    EXPECT_TRUE(covered_pass.count(std::string(check.id))) << check.id << " never passes";
    EXPECT_TRUE(covered_fail.count(std::string(check.id))) << check.id << " never fails";
  }
}

// An item that cannot inspect something says what and why, not just that it did not.
TEST(AuditChecksTest, UninspectedPartsNameTheirReason) {
  AuditModel model({ExclusiveNode("excl", 1)}, {});
  AuditInputs in = model.Inputs();
  in.escape_hatches_unseen = "listing pods: HTTP 403: pods is forbidden";
  in.wiring.webhooks_unseen = "listing validatingwebhookconfigurations: HTTP 403";
  CheckResult hatches = RunOne("device-escape-hatches", in);
  EXPECT_EQ(hatches.status, CheckStatus::kWarn);
  EXPECT_EQ(hatches.detail,
            "pod and claim specs not inspected: listing pods: HTTP 403: pods is forbidden");
  CheckResult wiring = RunOne("scheduler-webhook-wiring", in);
  EXPECT_EQ(wiring.status, CheckStatus::kWarn);
  EXPECT_EQ(wiring.detail,
            "not inspected: the scheduler configuration (not given) and the webhook "
            "configurations (listing validatingwebhookconfigurations: HTTP 403)");
  EXPECT_THAT(wiring.fix, ::testing::HasSubstr("not an object kube-apiserver serves"));
}

// The MIG item says which config a drifted node was compared with and what differs, and names
// each node it could not compare and why.
TEST(AuditChecksTest, MigGeometryNamesTheConfigAndWhatWasNotCompared) {
  AuditModel drifted({MigNode("mig-a", 2, {{"nvidia.com/mig-1g.10gb", "11"}}, "success",
                              {{"nvidia.com/mig.config", "all-1g.10gb"}})},
                     {});
  CheckResult fail = RunOne("mig-config-applied", drifted.Inputs());
  EXPECT_EQ(fail.status, CheckStatus::kFail);
  ASSERT_EQ(fail.findings.size(), 1u);
  EXPECT_EQ(fail.findings[0].problem,
            "geometry differs from config all-1g.10gb (NVIDIA's default): "
            "nvidia.com/mig-1g.10gb: expected 14, node shows 11; mig-manager re-cuts it when it "
            "next runs");

  AuditModel custom({MigNode("mig-b", 1, kMigGeometry)}, {});
  CheckResult warn = RunOne("mig-config-applied", custom.Inputs());
  EXPECT_EQ(warn.status, CheckStatus::kWarn);
  EXPECT_EQ(warn.detail,
            "every MIG node is settled; geometry not compared on node/mig-b "
            "(nvidia.com/mig.config=tenancy-3-2-1-1: no mig-parted config given, and "
            "tenancy-3-2-1-1 is not one of NVIDIA's default mig-parted configs)");
  EXPECT_EQ(warn.fix, "pass the mig-parted config that defines these names (--mig-parted-config)");
}

}  // namespace
}  // namespace views
