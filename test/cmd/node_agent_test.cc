// gpu-tenancy node-agent, the binary: against a fake kubelet (real gRPC on a unix socket) and the
// fake kube-apiserver over HTTPS. A MIG pod, a whole-GPU pod and a time-slice replica pod get
// their devices, the Node its GPUs; a second run writes nothing; a pod the kubelet no longer
// lists loses its annotation; a kubelet socket that is absent
// or answers garbage exits 1 with the socket named, and writes nothing. Running (not --once)
// against an absent socket, it keeps going: each failed round is logged and counted on its
// metrics port, which also answers the liveness probe, and SIGTERM ends it cleanly.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "test/support/apiserver_objects.h"
#include "test/support/fake_apiserver.h"
#include "test/support/fake_kubelet.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"
#include "topology/wellknown.h"
#include "wire/device_annotations.h"
#include "wire/k8s_codec.h"

namespace {

using namespace std::chrono_literals;
using testing_support::CommandResult;
using testing_support::FakeApiServer;
using testing_support::FakeKubelet;
using testing_support::Resource;
using testing_support::RunShell;
using testing_support::ShellQuote;

std::string BoundPod(const std::string& ns, const std::string& name) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"(","namespace":")", ns, R"(","uid":"uid-)", name,
                      R"("},"spec":{"nodeName":"gpu-a","containers":[{"name":"main"}]}})");
}

class NodeAgentBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"acme", "research"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    ASSERT_TRUE(
        api_->AddNode(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a"}})").ok());
    ASSERT_TRUE(api_->AddPod(BoundPod("acme", "llm")).ok());
    ASSERT_TRUE(api_->AddPod(BoundPod("research", "train")).ok());
    ASSERT_TRUE(api_->AddPod(BoundPod("research", "notebook")).ok());
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    socket_ = "/tmp/gt-agent-bin-" + std::to_string(getpid()) + ".sock";
    absl::StatusOr<std::unique_ptr<FakeKubelet>> kubelet = FakeKubelet::Start(socket_);
    ASSERT_TRUE(kubelet.ok()) << kubelet.status();
    kubelet_ = *std::move(kubelet);
    kubelet_->SetPods({
        {"acme", "llm", {{"main", {{"nvidia.com/mig-3g.40gb", {"MIG-GPU-a1/2/0"}}}}}},
        {"research", "train", {{"main", {{"nvidia.com/gpu", {"GPU-b2"}}}}}},
        {"research", "notebook", {{"main", {{"nvidia.com/gpu.shared", {"GPU-c3::5"}}}}}},
    });
    kubelet_->SetAllocatable({{"nvidia.com/mig-3g.40gb", {"MIG-GPU-a1/2/0", "MIG-GPU-a1/1/0"}},
                              {"nvidia.com/gpu", {"GPU-b2"}},
                              {"nvidia.com/gpu.shared", {"GPU-c3::4", "GPU-c3::5"}}});
  }

  CommandResult Run(const std::string& socket) {
    return RunShell(absl::StrCat(GT_BINARY, " node-agent --once --node gpu-a --kubeconfig ",
                                 ShellQuote(dir_.File("kubeconfig")),
                                 " --kubelet-timeout 1s --pod-resources-socket ",
                                 ShellQuote(socket)));
  }

  std::string Annotation(Resource resource, const std::string& ns, const std::string& name,
                         absl::string_view key) {
    absl::StatusOr<rapidjson::Document> doc =
        common::ParseJson(api_->GetObject(resource, ns, name));
    if (!doc.ok()) return "";
    return wire::AnnotationOf(&*doc, key).value_or("");
  }

  std::string PodDevices(const std::string& ns, const std::string& name) {
    return Annotation(Resource::kPods, ns, name, topology::kPodDevicesAnnotation);
  }

  testing_support::TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::string socket_;
};

TEST_F(NodeAgentBinaryTest, AnnotatesEachGpuPodAndTheNodeThenWritesNothingMore) {
  CommandResult first = Run(socket_);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (auto [ns, name, id] :
       {std::tuple{"acme", "llm", "MIG-GPU-a1/2/0"}, std::tuple{"research", "train", "GPU-b2"},
        std::tuple{"research", "notebook", "GPU-c3::5"}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<wire::PodDevicesAnnotation> devices =
        wire::DecodePodDevices(PodDevices(ns, name));
    ASSERT_TRUE(devices.ok()) << devices.status();
    EXPECT_EQ(devices->node, "gpu-a");
    ASSERT_EQ(devices->containers.size(), 1u);
    EXPECT_EQ(devices->containers[0].resources[0].ids, std::vector<std::string>{id});
  }
  // The Node: its GPUs, and the agent's record of each report under the pod's UID.
  absl::StatusOr<topology::NodeGpus> node = wire::DecodeNodeGpus(
      Annotation(Resource::kNodes, "", "gpu-a", topology::kNodeDevicesAnnotation));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpus,
            (std::vector<topology::NodeGpu>{
                {"GPU-a1", {"MIG-GPU-a1/2/0", "MIG-GPU-a1/1/0"}}, {"GPU-b2", {}}, {"GPU-c3", {}}}));
  ASSERT_EQ(node->pods.size(), 3u);
  for (auto [ns, name] : {std::pair{"acme", "llm"}, std::pair{"research", "train"},
                          std::pair{"research", "notebook"}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<rapidjson::Document> pod =
        common::ParseJson(api_->GetObject(Resource::kPods, ns, name));
    ASSERT_TRUE(pod.ok());
    const topology::PodDeviceRecord* record =
        node->FindPod(common::StringOr((*pod)["metadata"], "uid"));
    ASSERT_NE(record, nullptr);
    absl::StatusOr<wire::PodDevicesAnnotation> devices =
        wire::DecodePodDevices(PodDevices(ns, name));
    ASSERT_TRUE(devices.ok());
    EXPECT_EQ(record->resources, topology::RecordOf(devices->containers));
  }

  const int64_t patches = api_->CountRequests("PATCH", "/api/v1/");
  EXPECT_EQ(patches, 4);  // three pods, then the Node
  CommandResult second = Run(socket_);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(api_->CountRequests("PATCH", "/api/v1/"), patches) << "the second run wrote again";

  // train ended: the kubelet no longer lists it, so its annotation goes, and only its, and so
  // does its record on the Node.
  const std::string notebook = PodDevices("research", "notebook");
  kubelet_->SetPods({
      {"acme", "llm", {{"main", {{"nvidia.com/mig-3g.40gb", {"MIG-GPU-a1/2/0"}}}}}},
      {"research", "notebook", {{"main", {{"nvidia.com/gpu.shared", {"GPU-c3::5"}}}}}},
  });
  CommandResult third = Run(socket_);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(api_->CountRequests("PATCH", "/api/v1/"), patches + 2);
  EXPECT_EQ(PodDevices("research", "train"), "");
  EXPECT_EQ(PodDevices("research", "notebook"), notebook);
}

TEST_F(NodeAgentBinaryTest, AKubeletThatCannotBeReadExitsOneNamingTheSocket) {
  const std::string absent = socket_ + ".absent";
  unlink(absent.c_str());
  CommandResult r = Run(absent);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, absent)) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "does not exist")) << r.err;

  const std::string garbage = socket_ + ".garbage";
  absl::StatusOr<std::unique_ptr<testing_support::NotAKubelet>> other =
      testing_support::NotAKubelet::Start(garbage,
                                          testing_support::NotAKubelet::Behaviour::kGarbage);
  ASSERT_TRUE(other.ok()) << other.status();
  r = Run(garbage);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, garbage)) << r.err;
  EXPECT_EQ(api_->CountRequests("PATCH", "/"), 0);
}

TEST_F(NodeAgentBinaryTest, RunningItCountsFailedRoundsOnItsMetricsPort) {
  const std::string absent = socket_ + ".absent";
  unlink(absent.c_str());
  const std::string log = dir_.File("agent.log");
  CommandResult run;
  std::thread agent([&] {
    run = RunShell(absl::StrCat(
        "timeout -s TERM --preserve-status 4 ", GT_BINARY, " node-agent --node gpu-a --kubeconfig ",
        ShellQuote(dir_.File("kubeconfig")), " --interval 1s --pod-resources-socket ",
        ShellQuote(absent), " --metrics-listen 127.0.0.1:0 2>", ShellQuote(log)));
  });
  int port = 0;
  std::string metrics;
  const std::regex port_re("metrics_port=\"?([0-9]+)");
  for (auto deadline = std::chrono::steady_clock::now() + 3s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(50ms)) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (port == 0 && std::regex_search(text, m, port_re)) port = std::stoi(m[1]);
    if (port == 0) continue;
    httplib::Client client("127.0.0.1", port);
    EXPECT_EQ(client.Get("/healthz")->status, 200);
    if (auto r = client.Get("/metrics")) metrics = r->body;
    if (testing_support::SampleValue(metrics,
                                     R"(gpu_tenancy_agent_errors_total{source="kubelet"})") >= 2) {
      break;
    }
  }
  agent.join();
  EXPECT_EQ(run.exit_code, 0) << "SIGTERM should end it cleanly";
  ASSERT_NE(port, 0) << "no metrics port in the log";
  EXPECT_GE(
      testing_support::SampleValue(metrics, R"(gpu_tenancy_agent_errors_total{source="kubelet"})"),
      2)
      << metrics;
  EXPECT_EQ(testing_support::PromtoolProblems(metrics), "");
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(absl::StrContains(text, "does not exist")) << text;
  EXPECT_EQ(api_->CountRequests("PATCH", "/"), 0);
}

// Flags that used to be ignored are refused before the agent starts, naming them.
TEST(NodeAgentCommandTest, IgnoredFlagsAreRefusedNamingThem) {
  for (const auto& [args, error] : std::vector<std::pair<std::string, std::string>>{
           {"--context prod",
            "error: --context needs --kubeconfig (the in-cluster service "
            "account has no contexts)"},
           {"gpu-b", "error: unexpected argument \"gpu-b\""},
           {"--log-level loud",
            "error: --log-level takes debug, info, warn or error, not \"loud\""},
       }) {
    SCOPED_TRACE(args);
    CommandResult r = RunShell(absl::StrCat(ShellQuote(GT_BINARY),
                                            " node-agent --once --node gpu-a --metrics-listen off ",
                                            args, " </dev/null"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.substr(0, r.err.find('\n')), error) << r.err;
  }
}

}  // namespace
