// agent/node_agent: one round against a fake kubelet (real gRPC on a unix socket) and an
// in-memory kube-apiserver. The GPU pods bound here get their devices and the Node its GPUs; a
// second round writes nothing; a kubelet that is absent or not a kubelet is counted and writes
// nothing, never a crash.
#include "agent/node_agent.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_kubelet.h"
#include "test/support/in_memory_api.h"
#include "topology/wellknown.h"
#include "wire/device_annotations.h"
#include "wire/k8s_codec.h"

namespace agent {
namespace {

std::string AgentSocket(const std::string& name) {
  return "/tmp/gt-node-agent-" + std::to_string(getpid()) + "-" + name + ".sock";
}

constexpr char kNodePath[] = "/api/v1/nodes/gpu-a";
constexpr char kPodsOnNode[] = "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-a";

std::string PodPath(const std::string& ns, const std::string& name) {
  return absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name);
}

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing_support::FakeKubelet>> k =
        testing_support::FakeKubelet::Start(AgentSocket("ok"));
    ASSERT_TRUE(k.ok()) << k.status();
    kubelet_ = *std::move(k);
    kubelet_->SetPods({
        {"acme", "llm", {{"server", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}}}}},
        {"research", "notebook", {{"main", {{"nvidia.com/gpu.shared", {"GPU-b::3"}}}}}},
        {"web", "frontend", {}},
    });
    kubelet_->SetAllocatable({{"nvidia.com/gpu.shared", {"GPU-a::0", "GPU-b::3"}},
                              {"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}});
    api_.SetObject(kNodePath, R"({"metadata":{"name":"gpu-a"}})");
    for (auto [ns, name] : {std::pair{"acme", "llm"}, std::pair{"research", "notebook"},
                            std::pair{"web", "frontend"}}) {
      api_.SetObject(PodPath(ns, name),
                     absl::StrCat(R"({"metadata":{"namespace":")", ns, R"(","name":")", name,
                                  R"(","uid":"uid-)", name, R"("},"spec":{"nodeName":"gpu-a"}})"));
    }
  }

  // The in-memory store has no lists: the node's pod list, as the store holds the pods now.
  void ScriptPodList() {
    std::string items;
    for (auto [ns, name] : {std::pair{"acme", "llm"}, std::pair{"research", "notebook"},
                            std::pair{"web", "frontend"}}) {
      absl::StrAppend(&items, items.empty() ? "" : ",", *api_.Object(PodPath(ns, name)));
    }
    api_.Reply("GET", kPodsOnNode, 200, absl::StrCat(R"({"items":[)", items, "]}"));
  }

  std::optional<std::string> AnnotationOf(const std::string& path, absl::string_view key) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(*api_.Object(path));
    return doc.ok() ? wire::AnnotationOf(&*doc, key) : std::nullopt;
  }

  testing_support::InMemoryApi api_;
  std::unique_ptr<testing_support::FakeKubelet> kubelet_;
};

TEST_F(NodeAgentTest, GpuPodsAndTheNodeAreAnnotatedOnceAndThenLeftAlone) {
  PodResourcesClient client(kubelet_->socket_path());
  NodeAgent node_agent(api_, client, {"gpu-a", absl::Seconds(5)});
  ScriptPodList();
  ASSERT_TRUE(node_agent.RunOnce().ok());
  EXPECT_EQ(node_agent.pod_writes(), 2u);
  EXPECT_EQ(node_agent.node_writes(), 1u);
  std::optional<std::string> llm =
      AnnotationOf(PodPath("acme", "llm"), topology::kPodDevicesAnnotation);
  ASSERT_TRUE(llm.has_value());
  absl::StatusOr<wire::PodDevicesAnnotation> parsed = wire::DecodePodDevices(*llm);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->node, "gpu-a");
  ASSERT_EQ(parsed->containers.size(), 1u);
  EXPECT_EQ(parsed->containers[0].resources[0].ids, std::vector<std::string>{"MIG-5c1d"});
  EXPECT_FALSE(
      AnnotationOf(PodPath("web", "frontend"), topology::kPodDevicesAnnotation).has_value());
  // The Node carries the agent's record of both reports, by UID: what serve believes.
  EXPECT_EQ(AnnotationOf(kNodePath, topology::kNodeDevicesAnnotation),
            std::optional<std::string>(
                R"({"gpus":[{"id":"GPU-a"},{"id":"GPU-b"}],"unplacedMig":["MIG-5c1d"],)"
                R"("pods":{"uid-llm":{"nvidia.com/mig-3g.40gb":["MIG-5c1d"]},)"
                R"("uid-notebook":{"nvidia.com/gpu.shared":["GPU-b::3"]}}})"));

  api_.ClearCalls();
  ScriptPodList();
  ASSERT_TRUE(node_agent.RunOnce().ok());
  EXPECT_TRUE(api_.Calls("PATCH", "/").empty()) << "the second round wrote again";
  EXPECT_EQ(node_agent.pod_writes(), 2u);

  // The kubelet no longer lists the notebook (it ended): its annotation goes, and only its,
  // and so does its record on the Node.
  kubelet_->SetPods({{"acme", "llm", {{"server", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d"}}}}}}});
  ScriptPodList();
  ASSERT_TRUE(node_agent.RunOnce().ok());
  EXPECT_EQ(api_.Calls("PATCH", "/").size(), 2u);
  EXPECT_EQ(AnnotationOf(kNodePath, topology::kNodeDevicesAnnotation),
            std::optional<std::string>(
                R"({"gpus":[{"id":"GPU-a"},{"id":"GPU-b"}],"unplacedMig":["MIG-5c1d"],)"
                R"("pods":{"uid-llm":{"nvidia.com/mig-3g.40gb":["MIG-5c1d"]}}})"));
  EXPECT_EQ(AnnotationOf(PodPath("research", "notebook"), topology::kPodDevicesAnnotation),
            std::nullopt);
  EXPECT_TRUE(AnnotationOf(PodPath("acme", "llm"), topology::kPodDevicesAnnotation).has_value());
  api_.ClearCalls();
  ScriptPodList();
  ASSERT_TRUE(node_agent.RunOnce().ok());
  EXPECT_TRUE(api_.Calls("PATCH", "/").empty()) << "the removal was written again";
}

TEST(NodeAgentKubeletTest, AKubeletThatCannotBeReadIsCountedAndNothingIsWritten) {
  testing_support::InMemoryApi api;
  unlink(AgentSocket("absent").c_str());
  uint64_t errors = 0;
  for (const char* name : {"absent", "garbage", "silent"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<testing_support::NotAKubelet> other;
    if (std::string(name) != "absent") {
      other = *testing_support::NotAKubelet::Start(
          AgentSocket(name), std::string(name) == "garbage"
                                 ? testing_support::NotAKubelet::Behaviour::kGarbage
                                 : testing_support::NotAKubelet::Behaviour::kSilent);
    }
    PodResourcesClient client(AgentSocket(name));
    NodeAgent node_agent(api, client, {"gpu-a", absl::Milliseconds(500)});
    absl::Status s = node_agent.RunOnce();
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(absl::StrContains(s.message(), AgentSocket(name))) << s;
    EXPECT_EQ(node_agent.kubelet_errors(), 1u);
    errors += node_agent.kubelet_errors();
    std::string text;
    common::MetricsText out(text);
    node_agent.Collect(out);
    EXPECT_TRUE(absl::StrContains(text, R"(gpu_tenancy_agent_errors_total{source="kubelet"} 1)"))
        << text;
  }
  EXPECT_EQ(errors, 3u);
  EXPECT_TRUE(api.Calls().empty()) << "kube-apiserver was called without the kubelet's answer";
}

}  // namespace
}  // namespace agent
