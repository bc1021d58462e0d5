// `gpu-tenancy reconfigure` end to end: the real binary against the kube-apiserver emulation and
// a simulated mig-manager (test/support/mig_manager_sim.h). One H100 node with two GPUs, cut
// all-3g.40gb (four 3g.40gb), goes to all-1g.10gb (fourteen 1g.10gb); a GPU pod of a ReplicaSet
// must be evicted, a CPU pod must stay.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "test/support/apiserver_objects.h"
#include "test/support/fake_apiserver.h"
#include "test/support/mig_manager_sim.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using namespace std::chrono_literals;
using testing_support::CommandResult;
using testing_support::FakeApiServer;
using testing_support::MigManagerOutcome;
using testing_support::MigManagerSim;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::RunShell;
using testing_support::ShellQuote;
using testing_support::TempDir;

constexpr char kMigParted[] = R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  overfull:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "3g.40gb": 1
        "1g.10gb": 1
)";

std::string NodeJson(bool unschedulable) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a","labels":{)",
      R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"2",)",
      R"("nvidia.com/mig.strategy":"mixed","nvidia.com/mig.capable":"true",)",
      R"("nvidia.com/mig.config":"all-3g.40gb","nvidia.com/mig.config.state":"success",)",
      R"("nvidia.com/gpu.deploy.device-plugin":"true","nvidia.com/gpu.deploy.dcgm":"false"}},)",
      R"("spec":{)", unschedulable ? R"("unschedulable":true)" : "", "},",
      R"("status":{"capacity":{"cpu":"32","nvidia.com/mig-3g.40gb":"4"},)",
      R"("allocatable":{"cpu":"31","nvidia.com/mig-3g.40gb":"4"}}})");
}

// A Ready pod of ReplicaSet llm-rs (uid rs-1) on `node`; `gpu` says whether it asks for a GPU.
std::string PodJson(const std::string& name, const std::string& node, bool gpu,
                    const std::string& owner = "llm-rs") {
  std::string limits = gpu ? R"({"nvidia.com/mig-3g.40gb":"1"})" : R"({"cpu":"1"})";
  std::string owners =
      owner.empty()
          ? ""
          : absl::StrCat(R"(,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",)",
                         R"("name":")", owner, R"(","uid":"uid-)", owner,
                         R"(","controller":true}])");
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
      R"(","namespace":"acme","labels":{"app":")", gpu ? "llm" : "web", R"("})", owners,
      R"(},"spec":{"nodeName":")", node,
      R"(","containers":[{"name":"main","image":"x","resources":{"limits":)", limits,
      R"(,"requests":)", limits,
      R"(}}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})");
}

MigManagerOutcome Success(std::map<std::string, int64_t> allocatable) {
  MigManagerOutcome o;
  o.kind = MigManagerOutcome::Kind::kSuccess;
  o.allocatable = std::move(allocatable);
  return o;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class ReconfigureTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(/*cordoned=*/false); }

  void Build(bool cordoned) {
    sim_.reset();
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace("acme").ok());
    ASSERT_TRUE(api_->AddNode(NodeJson(cordoned)).ok());
    ASSERT_TRUE(
        api_->AddNode(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-b"}})").ok());
    ASSERT_TRUE(api_->Load(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{)"
                           R"("name":"llm-rs","namespace":"acme","uid":"uid-llm-rs"},)"
                           R"("spec":{"replicas":2}})")
                    .ok());
    ASSERT_TRUE(api_->AddPod(PodJson("llm-0", "gpu-a", true)).ok());
    ASSERT_TRUE(api_->AddPod(PodJson("llm-1", "gpu-b", true)).ok());
    ASSERT_TRUE(api_->AddPod(PodJson("web-0", "gpu-a", false, "")).ok());
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    std::ofstream(dir_.File("mig-parted.yaml")) << kMigParted;
    sim_ = std::make_unique<MigManagerSim>(*api_, "gpu-a", 100ms);
    sim_->SetOutcome("all-1g.10gb", Success({{"nvidia.com/mig-1g.10gb", 14}}));
    sim_->SetOutcome("all-3g.40gb", Success({{"nvidia.com/mig-3g.40gb", 4}}));
  }

  std::string Command(const std::string& flags) const {
    return absl::StrCat(GT_BINARY, " reconfigure gpu-a --kubeconfig ",
                        ShellQuote(dir_.File("kubeconfig")), " --mig-parted-config ",
                        ShellQuote(dir_.File("mig-parted.yaml")), " --audit-log ",
                        ShellQuote(dir_.File("audit.log")), " ", flags);
  }
  CommandResult Reconfigure(const std::string& flags) { return RunShell(Command(flags)); }

  rapidjson::Document Node() { return ParseOrDie(api_->GetObject(Resource::kNodes, "", "gpu-a")); }
  std::string Label(const std::string& key) {
    rapidjson::Document n = Node();
    const rapidjson::Value* meta = common::FindMember(n, "metadata");
    const rapidjson::Value* labels = meta ? common::FindMember(*meta, "labels") : nullptr;
    return labels ? std::string(common::StringOr(*labels, key)) : "";
  }
  bool Unschedulable() {
    rapidjson::Document n = Node();
    const rapidjson::Value* u = common::FindMember(*common::FindMember(n, "spec"), "unschedulable");
    return u != nullptr && u->IsBool() && u->GetBool();
  }
  int64_t Writes() const {
    return api_->CountRequests("POST", "") + api_->CountRequests("PATCH", "") +
           api_->CountRequests("PUT", "") + api_->CountRequests("DELETE", "");
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<MigManagerSim> sim_;
};

TEST_F(ReconfigureTest, ChangesTheGeometryDrainsGpuPodsAndUncordons) {
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-1g.10gb");
  EXPECT_EQ(Label("nvidia.com/mig.config.state"), "success");
  EXPECT_EQ(Label("nvidia.com/gpu.deploy.device-plugin"), "true");
  EXPECT_FALSE(Unschedulable());
  EXPECT_EQ(api_->GetObject(Resource::kPods, "acme", "llm-0"), "");  // evicted
  EXPECT_NE(api_->GetObject(Resource::kPods, "acme", "web-0"), "");  // no GPU: stays
  EXPECT_NE(api_->GetObject(Resource::kPods, "acme", "llm-1"), "");  // another node
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/acme/pods/llm-0/eviction"), 1);
  for (const char* step : {"precheck", "cordon", "traffic-check", "drain", "apply",
                           "wait-mig-manager", "validate", "smoke", "uncordon"}) {
    EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("ok    ", step))) << step << "\n" << r.out;
  }
  EXPECT_TRUE(absl::StrContains(r.out, "nvidia.com/mig-1g.10gb: 14")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "reconfigured: nvidia.com/mig.config=all-1g.10gb")) << r.out;
  // Every step is an Event on the Node and a line of the audit log.
  int node_events = 0;
  for (const std::string& e : api_->Events()) {
    if (absl::StrContains(e, R"("kind":"Node")") && absl::StrContains(e, "gpu-a")) ++node_events;
  }
  EXPECT_EQ(node_events, 9);
  std::string audit = ReadWhole(dir_.File("audit.log"));
  EXPECT_TRUE(absl::StrContains(audit, R"("action":"reconfigure","decision":"ok")")) << audit;
  EXPECT_TRUE(absl::StrContains(audit, R"("step":"drain")")) << audit;
  EXPECT_TRUE(absl::StrContains(audit, R"("durationMs":)")) << audit;
}

TEST_F(ReconfigureTest, SingleStrategyChecksTheGpuCountAndTheProductLabel) {
  ASSERT_TRUE(api_->MergePatch(Resource::kNodes, "", "gpu-a",
                               R"({"metadata":{"labels":{"nvidia.com/mig.strategy":"single",)"
                               R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"}},)"
                               R"("status":{"allocatable":{"nvidia.com/mig-3g.40gb":null,)"
                               R"("nvidia.com/gpu":"4"}}})")
                  .ok());
  MigManagerOutcome done = Success({{"nvidia.com/gpu", 14}});
  done.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"}};
  sim_->SetOutcome("all-1g.10gb", done);
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "nvidia.com/gpu: 14, "
                                "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"))
      << r.out;

  // GFD still says 3g.40gb: the product label is part of what the node must show.
  MigManagerOutcome stale = Success({{"nvidia.com/gpu", 4}});
  sim_->SetOutcome("all-3g.40gb", stale);
  r = Reconfigure("--to all-3g.40gb --timeout 10s --settle 300ms");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "nvidia.com/gpu.product: expected "
                                "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb, node shows "
                                "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"))
      << r.out;
}

TEST_F(ReconfigureTest, RetriesEvictionsABudgetRefusesUntilItIsRelaxed) {
  ASSERT_TRUE(api_->Load(R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{)"
                         R"("name":"llm-pdb","namespace":"acme"},"spec":{"selector":{)"
                         R"("matchLabels":{"app":"llm"}}},"status":{"disruptionsAllowed":0}})")
                  .ok());
  CommandResult r;
  std::thread run([&] { r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s"); });
  auto refused = [&] {
    for (const auto& req : api_->Requests()) {
      if (absl::EndsWith(req.path, "/eviction") && req.status == 429) return true;
    }
    return false;
  };
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!refused() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(refused());
  EXPECT_NE(api_->GetObject(Resource::kPods, "acme", "llm-0"), "");  // the budget holds it
  ASSERT_TRUE(api_->MergePatch(Resource::kPodDisruptionBudgets, "acme", "llm-pdb",
                               R"({"status":{"disruptionsAllowed":1}})")
                  .ok());
  run.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(api_->GetObject(Resource::kPods, "acme", "llm-0"), "");
  EXPECT_TRUE(absl::StrContains(r.out, "refusal(s) retried")) << r.out;
  EXPECT_GE(api_->CountRequests("POST", "/api/v1/namespaces/acme/pods/llm-0/eviction"), 2);
}

TEST_F(ReconfigureTest, ApiServerHiccupsWhileWaitingAreRetried) {
  sim_->SetOutcome("all-1g.10gb", Success({{"nvidia.com/mig-1g.10gb", 14}}));
  CommandResult r;
  std::thread run([&] { r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s"); });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (Label("nvidia.com/mig.config") != "all-1g.10gb" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  // mig-manager is busy for 100 ms: the next reads of the node fail as an overloaded server's.
  api_->InjectFailure("GET", "/api/v1/nodes/gpu-a", 503, 2);
  run.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int refused = 0;
  for (const auto& req : api_->Requests()) {
    if (req.path == "/api/v1/nodes/gpu-a" && req.status == 503) ++refused;
  }
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(Label("nvidia.com/mig.config.state"), "success");
}

TEST_F(ReconfigureTest, FailedStateRollsBackAndUncordons) {
  MigManagerOutcome failed;
  failed.kind = MigManagerOutcome::Kind::kFailed;
  sim_->SetOutcome("all-1g.10gb", failed);
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(
      r.out, "failed at wait-mig-manager: mig-manager reported nvidia.com/mig.config.state=failed"))
      << r.out;
  for (const char* step :
       {"rollback-apply", "rollback-wait", "rollback-validate", "rollback-uncordon"}) {
    EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("ok    ", step))) << step << "\n" << r.out;
  }
  EXPECT_TRUE(absl::StrContains(r.out, "rolled back to all-3g.40gb")) << r.out;
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-3g.40gb");
  EXPECT_EQ(Label("nvidia.com/mig.config.state"), "success");
  EXPECT_FALSE(Unschedulable());
  EXPECT_EQ(sim_->changes_seen(), 2);
}

TEST_F(ReconfigureTest, AllocatableMismatchRollsBack) {
  // mig-manager says success but the device plugin advertises half the instances.
  sim_->SetOutcome("all-1g.10gb", Success({{"nvidia.com/mig-1g.10gb", 7}}));
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 500ms -o json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  rapidjson::Document report = ParseOrDie(r.out);
  EXPECT_EQ(common::StringOr(report, "failedStep"), "validate");
  EXPECT_TRUE(absl::StrContains(common::StringOr(report, "error"),
                                "nvidia.com/mig-1g.10gb: expected 14, node shows 7"))
      << r.out;
  EXPECT_TRUE(report["rolledBack"].GetBool());
  EXPECT_TRUE(report["rollbackOk"].GetBool());
  EXPECT_FALSE(report["cordoned"].GetBool());
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-3g.40gb");
  EXPECT_FALSE(Unschedulable());
}

TEST_F(ReconfigureTest, TimeoutRollsBack) {
  MigManagerOutcome never;
  never.kind = MigManagerOutcome::Kind::kNever;
  sim_->SetOutcome("all-1g.10gb", never);
  auto start = std::chrono::steady_clock::now();
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 1s --settle 2s");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "failed at wait-mig-manager: timed out after 1.0s"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "last seen: pending")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "rolled back to all-3g.40gb")) << r.out;
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-3g.40gb");
  EXPECT_FALSE(Unschedulable());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
}

TEST_F(ReconfigureTest, RollbackThatDoesNotValidateLeavesTheNodeCordoned) {
  MigManagerOutcome failed;
  failed.kind = MigManagerOutcome::Kind::kFailed;
  sim_->SetOutcome("all-1g.10gb", failed);
  sim_->SetOutcome("all-3g.40gb", Success({{"nvidia.com/mig-3g.40gb", 2}}));
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 500ms");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "FAIL  rollback-validate")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "left cordoned")) << r.out;
  EXPECT_TRUE(Unschedulable());
}

TEST_F(ReconfigureTest, NodeCordonedBeforeStaysCordoned) {
  Build(/*cordoned=*/true);
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-1g.10gb");
  EXPECT_TRUE(Unschedulable());
  EXPECT_TRUE(absl::StrContains(r.out, "left cordoned: it was cordoned before")) << r.out;
  EXPECT_EQ(api_->CountRequests("PATCH", "/api/v1/nodes/gpu-a"), 1);  // the label only
}

TEST_F(ReconfigureTest, DryRunPrintsThePlanAndChangesNothing) {
  std::string before = api_->GetObject(Resource::kNodes, "", "gpu-a");
  CommandResult r = Reconfigure("--to all-1g.10gb --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Writes(), 0);
  EXPECT_EQ(api_->GetObject(Resource::kNodes, "", "gpu-a"), before);
  EXPECT_EQ(sim_->changes_seen(), 0);
  for (const char* line : {"GPU 0: 2x 3g.40gb", "GPU 1: 7x 1g.10gb", "nvidia.com/mig-1g.10gb: 14",
                           "GPU pods to evict:", "acme/llm-0", "dry run: nothing was changed"}) {
    EXPECT_TRUE(absl::StrContains(r.out, line)) << line << "\n" << r.out;
  }
  EXPECT_FALSE(absl::StrContains(r.out, "acme/web-0")) << r.out;
}

TEST_F(ReconfigureTest, ReadsTheConfigFromMigManagersConfigMap) {
  ASSERT_TRUE(api_->Load(absl::StrCat(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{)",
                                      R"("name":"default-mig-parted-config",)",
                                      R"("namespace":"gpu-operator"},"data":{"config.yaml":)",
                                      testing_support::apiserver::JsonString(kMigParted), "}}"))
                  .ok());
  CommandResult r = RunShell(absl::StrCat(GT_BINARY, " reconfigure gpu-a --kubeconfig ",
                                          ShellQuote(dir_.File("kubeconfig")),
                                          " --to all-1g.10gb --dry-run -o json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  rapidjson::Document report = ParseOrDie(r.out);
  EXPECT_EQ(report["expectedAllocatable"]["nvidia.com/mig-1g.10gb"].GetInt64(), 14);
  EXPECT_EQ(api_->CountRequests("GET",
                                "/api/v1/namespaces/gpu-operator/configmaps/"
                                "default-mig-parted-config"),
            1);
}

TEST_F(ReconfigureTest, TakesTheMigPartedSectionOfAPlan) {
  CommandResult plan =
      RunShell(absl::StrCat(GT_BINARY, " plan --input ",
                            ShellQuote(absl::StrCat(GT_SOURCE_DIR, "/cmd/demo/plan-example.yaml")),
                            " -o yaml > ", ShellQuote(dir_.File("plan.yaml"))));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  CommandResult r = RunShell(
      absl::StrCat(GT_BINARY, " reconfigure gpu-a --kubeconfig ",
                   ShellQuote(dir_.File("kubeconfig")), " --mig-parted-config ",
                   ShellQuote(dir_.File("plan.yaml")), " --to gpu-tenancy-h100-a --dry-run"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "GPU 1: 7x 1g.10gb")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "nvidia.com/mig-1g.10gb: 9")) << r.out;
}

TEST_F(ReconfigureTest, TrafficCheckNamesTheOwnerThatBlocks) {
  ASSERT_TRUE(api_->DeletePod("acme", "llm-1").ok());  // no replica elsewhere
  CommandResult r = Reconfigure("--to all-1g.10gb --timeout 500ms");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(
      r.out, "failed at traffic-check: traffic has not moved: ReplicaSet acme/llm-rs: 0 of 1"))
      << r.out;
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-3g.40gb");  // nothing applied
  EXPECT_TRUE(Unschedulable());                              // cordoned, and the report says so
  EXPECT_TRUE(absl::StrContains(r.out, "failed before anything was applied")) << r.out;
  EXPECT_NE(api_->GetObject(Resource::kPods, "acme", "llm-0"), "");
}

TEST_F(ReconfigureTest, SmokePodMustSucceedAndIsDeleted) {
  sim_->SetSmokePhase("Succeeded");
  CommandResult r =
      Reconfigure("--to all-1g.10gb --timeout 10s --settle 5s --smoke-image cuda-sample:12");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "with one nvidia.com/mig-1g.10gb is Succeeded")) << r.out;
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/default/pods"), 1);
  EXPECT_TRUE(api_->ListObjects(Resource::kPods, "default").empty());
}

TEST_F(ReconfigureTest, CtrlCStopsWaitingAndLeavesTheNodeCordoned) {
  MigManagerOutcome never;
  never.kind = MigManagerOutcome::Kind::kNever;
  sim_->SetOutcome("all-1g.10gb", never);
  std::string out_file = dir_.File("out.txt");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/bash", "bash", "-c",
          absl::StrCat("exec ", Command("--to all-1g.10gb --timeout 60s"), " > ",
                       ShellQuote(out_file), " 2>&1")
              .c_str(),
          nullptr);
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (Label("nvidia.com/mig.config.state") != "pending" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(Label("nvidia.com/mig.config.state"), "pending");
  std::this_thread::sleep_for(100ms);  // into the watch
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::string out = ReadWhole(out_file);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_TRUE(absl::StrContains(out, "interrupted during wait-mig-manager")) << out;
  EXPECT_TRUE(absl::StrContains(out,
                                "cordoned; to go back, run reconfigure gpu-a --to "
                                "all-3g.40gb"))
      << out;
  EXPECT_TRUE(Unschedulable());
  EXPECT_EQ(Label("nvidia.com/mig.config"), "all-1g.10gb");  // no rollback behind the user's back
}

// The (API group, resource, verb) a request needs, as RBAC names them.
struct Permission {
  std::string group, resource, verb;
  bool operator<(const Permission& o) const {
    return std::tie(group, resource, verb) < std::tie(o.group, o.resource, o.verb);
  }
};

Permission PermissionFor(const testing_support::RequestRecord& req) {
  std::vector<std::string> segs = absl::StrSplit(req.path, '/', absl::SkipEmpty());
  Permission p;
  size_t base = 2;  // /api/v1
  if (segs[0] == "apis") {
    p.group = segs[1];
    base = 3;
  }
  std::vector<std::string> rest(segs.begin() + base, segs.end());
  if (rest.size() >= 2 && rest[0] == "namespaces") rest.erase(rest.begin(), rest.begin() + 2);
  p.resource = rest[0];
  if (rest.size() == 3) p.resource = absl::StrCat(rest[0], "/", rest[2]);
  bool named = rest.size() >= 2;
  if (req.method == "GET") {
    p.verb = absl::StrContains(req.target, "watch=1") ? "watch" : named ? "get" : "list";
  } else if (req.method == "POST") {
    p.verb = "create";
  } else if (req.method == "PATCH") {
    p.verb = "patch";
  } else if (req.method == "PUT") {
    p.verb = "update";
  } else {
    p.verb = "delete";
  }
  return p;
}

TEST_F(ReconfigureTest, EveryCallItMakesIsGrantedByTheOperatorsClusterRole) {
  ASSERT_TRUE(api_->Load(absl::StrCat(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{)",
                                      R"("name":"mig","namespace":"gpu-operator"},"data":{)",
                                      R"("config.yaml":)",
                                      testing_support::apiserver::JsonString(kMigParted), "}}"))
                  .ok());
  sim_->SetSmokePhase("Succeeded");
  CommandResult r = RunShell(absl::StrCat(
      GT_BINARY, " reconfigure gpu-a --kubeconfig ", ShellQuote(dir_.File("kubeconfig")),
      " --mig-parted-configmap gpu-operator/mig --to all-1g.10gb --timeout 10s --settle 5s",
      " --smoke-image cuda-sample:12"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  absl::StatusOr<rapidjson::Document> role =
      common::YamlToJson(testing_support::ReadSource("manifests/reconfigure/clusterrole.yaml"));
  ASSERT_TRUE(role.ok()) << role.status();
  std::set<Permission> granted;
  for (const rapidjson::Value& rule : (*role)["rules"].GetArray()) {
    for (const rapidjson::Value& group : rule["apiGroups"].GetArray()) {
      for (const rapidjson::Value& resource : rule["resources"].GetArray()) {
        for (const rapidjson::Value& verb : rule["verbs"].GetArray()) {
          granted.insert({group.GetString(), resource.GetString(), verb.GetString()});
        }
      }
    }
  }
  std::set<Permission> used;
  for (const testing_support::RequestRecord& req : api_->Requests()) {
    used.insert(PermissionFor(req));
  }
  for (const Permission& p : used) {
    EXPECT_TRUE(granted.count(p)) << p.verb << " " << p.resource << " (group \"" << p.group
                                  << "\") is used but not granted";
  }
  // And nothing granted goes unused by this run, but for the other owner kind.
  for (const Permission& p : granted) {
    if (p.resource == "statefulsets") continue;
    EXPECT_TRUE(used.count(p)) << p.verb << " " << p.resource << " is granted but never used";
  }
}

TEST_F(ReconfigureTest, RefusesALayoutWithoutValidPlacements) {
  CommandResult r = Reconfigure("--to overfull --dry-run");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "failed at precheck: mig-configs.overfull[0]")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "no valid placement on H100-80GB")) << r.out;
}

TEST_F(ReconfigureTest, BadInputIsAUsageErrorNamingTheFlag) {
  struct Case {
    std::string flags;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"", "--to is required"},
           {"--to all-1g.10gb --timeout soon", "--timeout takes a duration such as 30m (1ms..24h)"},
           {"--to nope", "--to nope: no such config"},
           {"--to all-1g.10gb -o yaml", "-o must be text or json, not \"yaml\""},
           {"--to all-1g.10gb --smoke-namespace smoke", "--smoke-namespace needs --smoke-image"},
           {"--to all-1g.10gb --log-level loud",
            "--log-level takes debug, info, warn or error, not \"loud\""},
           {"--to all-1g.10gb --mig-parted-configmap ops/mig",
            "--mig-parted-config and --mig-parted-configmap exclude each other"},
       }) {
    SCOPED_TRACE(c.flags);
    CommandResult r = Reconfigure(c.flags);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.error)) << r.err;
  }
  std::ofstream(dir_.File("mig-parted.yaml"))
      << "version: v1\nmig-configs:\n  x:\n    - devices: 3\n";
  CommandResult r = Reconfigure("--to x");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "mig-configs.x[0].devices")) << r.err;
  EXPECT_EQ(Writes(), 0);
}

}  // namespace
