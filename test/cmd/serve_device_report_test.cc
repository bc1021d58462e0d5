// The node agent's reports through `serve` on a live cluster (the kube-apiserver emulation):
// two time-sliced nodes of two 80 GiB GPUs each, where the agent says on which GPU each replica
// runs. ts-x holds 60 GiB on its first GPU; ts-y 50 GiB on each. A 40 GiB pod fits ts-x (its
// second GPU is empty) and bind promises it that GPU; ts-y has 60 GiB free in all but 30 on
// either GPU, so the pod is refused there. Without the reports each node's memory is one pool
// and both fit, as before the agent; when the reports arrive by watch, the refusal follows.
// The inventory lists each tenant's device IDs (MIG UUIDs for the MIG tenants), the physical
// GPUs with their tenants, and the one pod whose report contradicts bind's promise. A cluster
// file with the same objects is read the same way by serve and explain.
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace serve_device_report_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kMigA[] = "MIG-0b5e5b3a-61c4-5e8e-9f2a-1c7d3e9a0001";
constexpr char kMigB[] = "MIG-0b5e5b3a-61c4-5e8e-9f2a-1c7d3e9a0002";

std::string Gpu(const std::string& node, int index) {
  return absl::StrCat("GPU-", node, "-0000-4000-8000-00000000000", index);
}

std::string Quoted(const std::string& json) {  // a JSON string holding `json`
  std::string out = "\"";
  for (char c : json) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct PodSpec {
  std::string ns, name, node, resource, memory, gpu_index, device;
};

const std::vector<PodSpec>& BoundPods() {
  static const auto* pods = new std::vector<PodSpec>{
      {"research", "n1", "ts-x", "nvidia.com/gpu.shared", "60Gi", "", Gpu("ts-x", 0) + "::0"},
      {"research", "n2", "ts-y", "nvidia.com/gpu.shared", "50Gi", "", Gpu("ts-y", 0) + "::1"},
      // bind promised GPU 0; the kubelet gave a replica of GPU 1.
      {"research", "n3", "ts-y", "nvidia.com/gpu.shared", "50Gi", "0", Gpu("ts-y", 1) + "::0"},
      {"acme", "llm", "mig-m", "nvidia.com/mig-3g.40gb", "", "", kMigA},
      {"bank-prod", "risk", "mig-m", "nvidia.com/mig-3g.40gb", "", "", kMigB},
  };
  return *pods;
}

// The agent's record of the reports it wrote on `node`'s pods, as its Node carries it.
std::string Records(const std::string& node) {
  std::string out;
  for (const PodSpec& p : BoundPods()) {
    if (p.node != node || p.device.empty()) continue;
    absl::StrAppend(&out, out.empty() ? "" : ",", R"("uid-)", p.name, R"(":{")", p.resource,
                    R"(":[")", p.device, R"("]})");
  }
  return absl::StrCat(R"("pods":{)", out, "}");
}

std::string NodeGpusAnnotation(const std::string& node) {
  return absl::StrCat(R"({"gpus":[{"id":")", Gpu(node, 0), R"(","mig":[]},{"id":")", Gpu(node, 1),
                      R"(","mig":[]}],"unplacedMig":[],)", Records(node), "}");
}

std::string TimeSlicedNode(const std::string& name, bool reported) {
  std::string annotations = reported
                                ? absl::StrCat(R"("annotations":{"gpu-tenancy.io/gpu-devices":)",
                                               Quoted(NodeGpusAnnotation(name)), "},")
                                : "";
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name, R"(",)", annotations,
      R"("labels":{"nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB","nvidia.com/gpu.count":"2",)"
      R"("nvidia.com/gpu.memory":"81920","nvidia.com/gpu.replicas":"4",)"
      R"("nvidia.com/gpu.sharing-strategy":"time-slicing","nvidia.com/mig.capable":"false",)"
      R"("gpu-tenancy.io/pool":"gpu-timeslice"}},)"
      R"("status":{"allocatable":{"cpu":"63","nvidia.com/gpu.shared":"8"}}})");
}

std::string MigNode(bool reported) {
  std::string annotations =
      reported ? absl::StrCat(R"("annotations":{"gpu-tenancy.io/gpu-devices":)",
                              Quoted(absl::StrCat(R"({"gpus":[],"unplacedMig":[")", kMigA, R"(",")",
                                                  kMigB, R"("],)", Records("mig-m"), "}")),
                              "},")
               : "";
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"mig-m",)", annotations,
      R"("labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/mig.strategy":"mixed",)"
      R"("nvidia.com/mig.config.state":"success","gpu-tenancy.io/pool":"gpu-mig"}},)"
      R"("status":{"allocatable":{"cpu":"31","nvidia.com/mig-3g.40gb":"2"}}})");
}

std::string DevicesAnnotation(const std::string& node, const std::string& resource,
                              const std::string& id) {
  return absl::StrCat(R"({"node":")", node, R"(","containers":[{"name":"main","devices":{")",
                      resource, R"(":[")", id, R"("]}}]})");
}

std::string PodJson(const PodSpec& p, bool reported) {
  std::string annotations;
  auto add = [&](const std::string& key, const std::string& quoted) {
    absl::StrAppend(&annotations, annotations.empty() ? "" : ",", "\"", key, "\":", quoted);
  };
  if (!p.memory.empty()) add("gpu-tenancy.io/gpu-memory", Quoted(p.memory));
  if (!p.gpu_index.empty()) add("gpu-tenancy.io/gpu-index", Quoted(p.gpu_index));
  if (reported && !p.device.empty()) {
    add("gpu-tenancy.io/devices", Quoted(DevicesAnnotation(p.node, p.resource, p.device)));
  }
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", p.name, R"(","namespace":")", p.ns,
      R"(","uid":"uid-)", p.name, R"(","annotations":{)", annotations, R"(}},)", R"("spec":{)",
      p.node.empty() ? "" : absl::StrCat(R"("nodeName":")", p.node, R"(",)"),
      R"("containers":[{"name":"main","image":"x","resources":{"limits":{")", p.resource,
      R"(":"1"}}}]},"status":{"phase":")", p.node.empty() ? "Pending" : "Running", R"("}})");
}

const PodSpec kAsks{"research", "asks", "", "nvidia.com/gpu.shared", "40Gi", "", ""};

class ServeDeviceReportTest : public ::testing::Test {
 protected:
  void Start(bool reported) {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"acme", "research"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    ASSERT_TRUE(api_->Add(Resource::kNamespaces,
                          R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bank-prod",)"
                          R"("labels":{"kubernetes.io/metadata.name":"bank-prod",)"
                          R"("gpu-tenancy.io/tenant":"bank"}}})")
                    .ok());
    for (const char* node : {"ts-x", "ts-y"}) {
      ASSERT_TRUE(api_->AddNode(TimeSlicedNode(node, reported)).ok());
    }
    ASSERT_TRUE(api_->AddNode(MigNode(reported)).ok());
    for (const PodSpec& p : BoundPods()) ASSERT_TRUE(api_->AddPod(PodJson(p, reported)).ok());
    ASSERT_TRUE(api_->AddPod(PodJson(kAsks, false)).ok());
    std::string kubeconfig = dir_.File("kubeconfig");
    std::ofstream(kubeconfig) << api_->Kubeconfig("    token: test-token");
    absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
        {"--kubeconfig", kubeconfig, "--policy",
         std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml", "--leader-elect", "false"},
        dir_.File("serve.log"));
    ASSERT_TRUE(serve.ok()) << serve.status();
    serve_ = *std::move(serve);
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (serve_->Get("/readyz").status != 200 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(serve_->Get("/readyz").status, 200) << "serve never synced";
  }

  // The time-sliced nodes the filter keeps for the 40 GiB pod, and ts-y's reason if refused.
  std::set<std::string> Kept(std::string* ts_y_reason = nullptr) {
    ServeProcess::Response r = serve_->Post(
        "/extender/filter",
        absl::StrCat(R"({"Pod":)", PodJson(kAsks, false), R"(,"NodeNames":["ts-x","ts-y"]})"));
    EXPECT_EQ(r.status, 200) << r.body;
    rapidjson::Document doc = ParseOrDie(r.body);
    std::set<std::string> kept;
    if (const common::JsonValue* names = common::FindNonNull(doc, "NodeNames")) {
      for (const auto& n : names->GetArray()) kept.insert(n.GetString());
    }
    for (const char* kind : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
      const common::JsonValue* failed = common::FindNonNull(doc, kind);
      if (failed && ts_y_reason && ts_y_reason->empty()) {
        *ts_y_reason = std::string(common::StringOr(*failed, "ts-y"));
      }
    }
    return kept;
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeDeviceReportTest, TheFitAndBindUseTheGpuTheAgentReported) {
  ASSERT_NO_FATAL_FAILURE(Start(/*reported=*/true));
  std::string reason;
  EXPECT_EQ(Kept(&reason), std::set<std::string>{"ts-x"});
  EXPECT_TRUE(absl::StrContains(reason, "largest free on one GPU 30720 MiB")) << reason;

  ServeProcess::Response bind = serve_->Post(
      "/extender/bind",
      R"({"PodName":"asks","PodNamespace":"research","PodUID":"uid-asks","Node":"ts-x"})");
  ASSERT_EQ(bind.status, 200) << bind.body;
  EXPECT_EQ(common::StringOr(ParseOrDie(bind.body), "Error"), "") << bind.body;
  rapidjson::Document pod = ParseOrDie(api_->GetObject(Resource::kPods, "research", "asks"));
  EXPECT_STREQ(pod["metadata"]["annotations"]["gpu-tenancy.io/gpu-index"].GetString(), "1");
}

TEST_F(ServeDeviceReportTest, TheInventoryNamesEachTenantsDevicesAndTheGpusTheyShare) {
  ASSERT_NO_FATAL_FAILURE(Start(/*reported=*/true));
  ServeProcess::Response r = serve_->Get("/debug/allocations");
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document inventory = ParseOrDie(r.body);
  std::map<std::string, std::set<std::string>> ids;
  for (const auto& t : inventory["tenants"].GetArray()) {
    for (const auto& id : t["deviceIds"].GetArray())
      ids[t["tenant"].GetString()].insert(id.GetString());
  }
  EXPECT_EQ(ids["acme"], std::set<std::string>{kMigA});
  EXPECT_EQ(ids["bank"], std::set<std::string>{kMigB});
  EXPECT_EQ(ids["research"], (std::set<std::string>{Gpu("ts-x", 0) + "::0", Gpu("ts-y", 0) + "::1",
                                                    Gpu("ts-y", 1) + "::0"}));

  std::set<std::string> gpus;
  for (const auto& g : inventory["physicalGpus"].GetArray()) {
    EXPECT_STREQ(g["sharing"].GetString(), "shared");
    ASSERT_EQ(g["tenants"].Size(), 1u);
    EXPECT_STREQ(g["tenants"][0].GetString(), "research");
    gpus.insert(g["id"].GetString());
  }
  // The MIG instances' GPUs are not in their IDs (nor, without NVML, anywhere).
  EXPECT_EQ(gpus, (std::set<std::string>{Gpu("ts-x", 0), Gpu("ts-y", 0), Gpu("ts-y", 1)}));

  ASSERT_EQ(inventory["disagreements"].Size(), 1u) << r.body;
  const auto& d = inventory["disagreements"][0];
  EXPECT_STREQ(d["name"].GetString(), "n3");
  EXPECT_STREQ(d["node"].GetString(), "ts-y");
  EXPECT_TRUE(absl::StrContains(d["reason"].GetString(), "bind chose shared GPU 0"))
      << d["reason"].GetString();

  std::string metrics = serve_->Get("/metrics").body;
  EXPECT_EQ(SampleValue(metrics, "gpu_tenancy_device_reports_disagreeing"), 1);
  EXPECT_EQ(SampleValue(metrics, absl::StrCat(R"(gpu_tenancy_gpu_tenants{UUID=")", Gpu("ts-y", 1),
                                              R"(",node="ts-y"})")),
            1);
  EXPECT_TRUE(absl::StrContains(
      metrics, absl::StrCat(R"(gpu_tenancy_device_tenant_info{tenant="bank",namespace="bank-prod",)"
                            R"(pod="risk",node="mig-m",resource="nvidia.com/mig-3g.40gb",device=")",
                            kMigB, R"(",sharing="mig"} 1)")))
      << metrics;
}

// A report the agent did not write changes nothing, whatever the namespace's labels: here n3's
// owner rewrites its annotation to put its 50 GiB on ts-y's first GPU (which would leave the
// second GPU empty and let the 40 GiB pod onto ts-y), in a namespace labelled for the webhook
// to skip. The agent's record on the Node stands; the inventory names the forgery.
TEST_F(ServeDeviceReportTest, AForgedReportChangesNothingWhateverTheNamespace) {
  ASSERT_NO_FATAL_FAILURE(Start(/*reported=*/true));
  ASSERT_TRUE(api_->Upsert(Resource::kNamespaces,
                           R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"research",)"
                           R"("labels":{"kubernetes.io/metadata.name":"research",)"
                           R"("gpu-tenancy.io/webhook":"disabled"}}})")
                  .ok());
  PodSpec forged = BoundPods()[2];
  ASSERT_EQ(forged.name, "n3");
  forged.device = Gpu("ts-y", 0) + "::3";
  ASSERT_TRUE(api_->UpsertPod(PodJson(forged, true)).ok());

  // Once the watch has delivered it, the inventory says it was passed over.
  std::string reason;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    rapidjson::Document inventory = ParseOrDie(serve_->Get("/debug/allocations").body);
    for (const auto& d : inventory["disagreements"].GetArray()) {
      if (std::string(d["name"].GetString()) == "n3") reason = d["reason"].GetString();
    }
    if (absl::StrContains(reason, "names other devices")) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(absl::StrContains(reason,
                                "its gpu-tenancy.io/devices names other devices than the node "
                                "agent of \"ts-y\" recorded for it: the agent did not write it"))
      << reason;
  // The fit is what the agent's record says: ts-y still has 30 GiB on either GPU.
  std::string ts_y;
  EXPECT_EQ(Kept(&ts_y), std::set<std::string>{"ts-x"});
  EXPECT_TRUE(absl::StrContains(ts_y, "largest free on one GPU 30720 MiB")) << ts_y;
  rapidjson::Document inventory = ParseOrDie(serve_->Get("/debug/allocations").body);
  std::set<std::string> research;
  for (const auto& t : inventory["tenants"].GetArray()) {
    if (std::string(t["tenant"].GetString()) != "research") continue;
    for (const auto& id : t["deviceIds"].GetArray()) research.insert(id.GetString());
  }
  EXPECT_EQ(research.count(Gpu("ts-y", 0) + "::3"), 0u) << "the forged ID is nobody's device";
  EXPECT_EQ(research.count(Gpu("ts-y", 1) + "::0"), 1u);
}

TEST_F(ServeDeviceReportTest, WithoutReportsEachNodeIsOnePoolUntilTheAgentsReportsArrive) {
  ASSERT_NO_FATAL_FAILURE(Start(/*reported=*/false));
  EXPECT_EQ(Kept(), (std::set<std::string>{"ts-x", "ts-y"}));
  EXPECT_EQ(SampleValue(serve_->Get("/metrics").body, "gpu_tenancy_device_reports_disagreeing"), 0);

  // The agent's writes, as watch events.
  ASSERT_TRUE(api_->UpsertNode(TimeSlicedNode("ts-y", true)).ok());
  for (const PodSpec& p : BoundPods()) {
    if (p.node != "ts-y") continue;
    ASSERT_TRUE(api_->UpsertPod(PodJson(p, true)).ok());
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (Kept() != std::set<std::string>{"ts-x"} && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(Kept(), std::set<std::string>{"ts-x"});
}

// The same fleet as a cluster file (test/testdata/agent/reported-fleet.json, with the pending
// pod research/asks): serve's inventory and filter, and explain, read the reports from it too.
TEST(ServeDeviceReportFileTest, AClusterFileCarryingTheReportsIsReadTheSameWay) {
  const std::string cluster = absl::StrCat(GT_TESTDATA_DIR, "/agent/reported-fleet.json");
  const std::string policy = std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml";
  TempDir dir;
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve =
      ServeProcess::Start({"--cluster-file", cluster, "--policy", policy}, dir.File("serve.log"));
  ASSERT_TRUE(serve.ok()) << serve.status();
  ServeProcess::Response r = (*serve)->Get("/debug/allocations");
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document inventory = ParseOrDie(r.body);
  std::map<std::string, std::vector<std::string>> ids;
  for (const auto& t : inventory["tenants"].GetArray()) {
    for (const auto& id : t["deviceIds"].GetArray()) {
      ids[t["tenant"].GetString()].push_back(id.GetString());
    }
  }
  EXPECT_EQ(ids["acme"], std::vector<std::string>{kMigA});
  EXPECT_EQ(ids["bank"], std::vector<std::string>{kMigB});

  ServeProcess::Response filter = (*serve)->Post(
      "/extender/filter",
      absl::StrCat(R"({"Pod":)", PodJson(kAsks, false), R"(,"NodeNames":["ts-x","ts-y"]})"));
  ASSERT_EQ(filter.status, 200) << filter.body;
  rapidjson::Document doc = ParseOrDie(filter.body);
  ASSERT_EQ(doc["NodeNames"].Size(), 1u) << filter.body;
  EXPECT_STREQ(doc["NodeNames"][0].GetString(), "ts-x");

  testing_support::CommandResult explain =
      testing_support::RunShell(absl::StrCat(GT_BINARY, " explain --cluster-file ", cluster,
                                             " --policy ", policy, " --pod research/asks"));
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_TRUE(absl::StrContains(explain.out, "largest free on one GPU 30720 MiB")) << explain.out;
}

}  // namespace
}  // namespace serve_device_report_test
