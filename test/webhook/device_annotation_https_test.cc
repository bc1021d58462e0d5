// The device-annotation rule over real HTTPS: `serve --demo` is sent the AdmissionReviews
// kube-apiserver sends when someone writes a pod's devices annotation or a Node's gpu-devices
// annotation, with the userInfo a pod-bound ServiceAccount token gives the node agent.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::ServeProcess;
using testing_support::SharedServeSuite;

constexpr char kAgentUser[] = "system:serviceaccount:gpu-tenancy-system:gpu-tenancy-node-agent";
constexpr char kPodDevicesKey[] = "gpu-tenancy.io/devices";
constexpr char kNodeDevicesKey[] = "gpu-tenancy.io/gpu-devices";

std::string ToText(const rapidjson::Value& v) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  v.Accept(w);
  return out.GetString();
}

// request.userInfo: `username`, with the node-name extra of a pod-bound token when `node` is set.
rapidjson::Value UserInfo(const std::string& username, const std::string& node,
                          rapidjson::Document::AllocatorType& alloc) {
  rapidjson::Value user(rapidjson::kObjectType);
  user.AddMember("username", rapidjson::Value(username.c_str(), alloc), alloc);
  if (!node.empty()) {
    rapidjson::Value nodes(rapidjson::kArrayType);
    nodes.PushBack(rapidjson::Value(node.c_str(), alloc), alloc);
    rapidjson::Value extra(rapidjson::kObjectType);
    extra.AddMember("authentication.kubernetes.io/node-name", nodes, alloc);
    user.AddMember("extra", extra, alloc);
  }
  return user;
}

// Sets annotation `key` of `object` to `value`, or removes it when `value` is empty.
void SetAnnotation(rapidjson::Value& object, const char* key, const std::string& value,
                   rapidjson::Document::AllocatorType& alloc) {
  rapidjson::Value& meta = object["metadata"];
  if (!meta.HasMember("annotations")) {
    meta.AddMember("annotations", rapidjson::Value(rapidjson::kObjectType), alloc);
  }
  rapidjson::Value& annotations = meta["annotations"];
  annotations.RemoveMember(key);
  if (!value.empty()) {
    annotations.AddMember(rapidjson::Value(key, alloc), rapidjson::Value(value.c_str(), alloc),
                          alloc);
  }
}

struct PodWrite {
  std::string before, after;  // the devices annotation; "" is absent
  std::string username, node;
  std::string limits = R"({"nvidia.com/mig-1g.10gb":"1"})";
};

// The captured pod UPDATE (a kubectl label of a MIG pod), as the write `w` of acme's pod
// bound to gpu-a: the old and new devices annotation, who sends it, the GPU it asks for.
std::string PodAnnotationReview(const PodWrite& w) {
  rapidjson::Document review =
      ParseOrDie(ReadTestData("admission/pod-update.validating.request.json"));
  auto& alloc = review.GetAllocator();
  rapidjson::Value& request = review["request"];
  request["namespace"].SetString("acme", alloc);
  request["userInfo"] = UserInfo(w.username, w.node, alloc);
  rapidjson::Document limits = ParseOrDie(w.limits);
  for (const char* which : {"object", "oldObject"}) {
    rapidjson::Value& pod = request[which];
    pod["metadata"]["namespace"].SetString("acme", alloc);
    pod["spec"]["nodeName"].SetString("gpu-a", alloc);
    rapidjson::Value& resources = pod["spec"]["containers"][0]["resources"];
    resources["limits"].CopyFrom(limits, alloc);
    resources["requests"].CopyFrom(limits, alloc);
    SetAnnotation(pod, kPodDevicesKey, which == std::string("object") ? w.after : w.before, alloc);
  }
  return ToText(review);
}

// A Node UPDATE of gpu-a's gpu-devices annotation (the kubelet's labels and status as they are).
std::string NodeAnnotationReview(const std::string& before, const std::string& after,
                                 const std::string& username, const std::string& node) {
  rapidjson::Document review = ParseOrDie(R"({
    "apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
    "request":{"uid":"6a1f4c1e-0000-4000-8000-00000000d0de",
      "kind":{"group":"","version":"v1","kind":"Node"},
      "resource":{"group":"","version":"v1","resource":"nodes"},
      "requestKind":{"group":"","version":"v1","kind":"Node"},
      "requestResource":{"group":"","version":"v1","resource":"nodes"},
      "name":"gpu-a","operation":"UPDATE","dryRun":false,
      "object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a",
        "labels":{"kubernetes.io/hostname":"gpu-a","nvidia.com/gpu.count":"8"},
        "annotations":{"node.alpha.kubernetes.io/ttl":"0"}},
        "status":{"capacity":{"nvidia.com/gpu":"8"}}}}})");
  auto& alloc = review.GetAllocator();
  rapidjson::Value& request = review["request"];
  rapidjson::Value old_node;
  old_node.CopyFrom(request["object"], alloc);
  SetAnnotation(request["object"], kNodeDevicesKey, after, alloc);
  SetAnnotation(old_node, kNodeDevicesKey, before, alloc);
  request.AddMember("oldObject", old_node, alloc);
  request.AddMember("userInfo", UserInfo(username, node, alloc), alloc);
  return ToText(review);
}

struct Answer {
  bool allowed = false;
  std::string message;
};

class DeviceAnnotationOverHttpsTest : public SharedServeSuite<DeviceAnnotationOverHttpsTest> {
 public:
  static std::vector<std::string> ServeArgs() { return {"--demo"}; }

 protected:
  static Answer Validate(const std::string& review) {
    ServeProcess::Response r = server_->Post("/webhook/validate?timeout=10s", review);
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    rapidjson::Document reply = ParseOrDie(r.body);
    const rapidjson::Value& response = reply["response"];
    Answer a;
    a.allowed = response["allowed"].GetBool();
    if (!a.allowed) {
      EXPECT_EQ(response["status"]["code"].GetInt(), 403);
      a.message = response["status"]["message"].GetString();
    }
    return a;
  }
};

constexpr char kDevices[] = R"({"main":["MIG-4f1d"]})";
constexpr char kOtherDevices[] = R"({"main":["MIG-77aa"]})";

TEST_F(DeviceAnnotationOverHttpsTest, TenantsForgedPodDevicesAreDenied) {
  Answer a = Validate(PodAnnotationReview({"", kDevices, "alice@acme.example", ""}));
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.message,
            "[device-annotation] user \"alice@acme.example\" may not add annotation "
            "gpu-tenancy.io/devices of pod \"acme/pod-admit\": only the node agent "
            "(ServiceAccount gpu-tenancy-system/gpu-tenancy-node-agent) writes it, for its own "
            "node");
  // Changing or removing the agent's value is forging it just the same.
  for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
           {kDevices, kOtherDevices}, {kDevices, ""}}) {
    Answer b = Validate(PodAnnotationReview({before, after, "alice@acme.example", ""}));
    EXPECT_FALSE(b.allowed);
    EXPECT_EQ(b.message.rfind("[device-annotation] ", 0), 0u) << b.message;
  }
}

TEST_F(DeviceAnnotationOverHttpsTest, AgentWritesOnlyPodsOfItsOwnNode) {
  Answer other = Validate(PodAnnotationReview({"", kDevices, kAgentUser, "gpu-b"}));
  EXPECT_FALSE(other.allowed);
  EXPECT_EQ(other.message,
            "[device-annotation] the node agent on node \"gpu-b\" may not add annotation "
            "gpu-tenancy.io/devices of pod \"acme/pod-admit\", which runs on node \"gpu-a\": an "
            "agent writes only its own node's annotations");

  // The same agent, for a pod bound to its own node gpu-b: allowed.
  rapidjson::Document review = ParseOrDie(PodAnnotationReview({"", kDevices, kAgentUser, "gpu-b"}));
  auto& alloc = review.GetAllocator();
  for (const char* which : {"object", "oldObject"}) {
    review["request"][which]["spec"]["nodeName"].SetString("gpu-b", alloc);
  }
  Answer own = Validate(ToText(review));
  EXPECT_TRUE(own.allowed) << own.message;
}

TEST_F(DeviceAnnotationOverHttpsTest, NodeGpuDevicesOnlyFromThatNodesAgent) {
  const std::string devices = R"(["GPU-4f1d","GPU-77aa"])";
  Answer admin = Validate(NodeAnnotationReview("", devices, "kubernetes-admin", ""));
  EXPECT_FALSE(admin.allowed);
  EXPECT_EQ(admin.message.rfind("[device-annotation] user \"kubernetes-admin\" may not add "
                                "annotation gpu-tenancy.io/gpu-devices of node \"gpu-a\"",
                                0),
            0u)
      << admin.message;
  Answer kubelet =
      Validate(NodeAnnotationReview(devices, R"(["GPU-4f1d"])", "system:node:gpu-a", ""));
  EXPECT_FALSE(kubelet.allowed);
  EXPECT_EQ(kubelet.message.rfind("[device-annotation] ", 0), 0u) << kubelet.message;
  Answer other_agent = Validate(NodeAnnotationReview("", devices, kAgentUser, "gpu-b"));
  EXPECT_FALSE(other_agent.allowed);
  EXPECT_EQ(other_agent.message.rfind("[device-annotation] the node agent on node \"gpu-b\"", 0),
            0u)
      << other_agent.message;

  for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
           {"", devices}, {devices, R"(["GPU-4f1d"])"}, {devices, ""}}) {
    Answer own = Validate(NodeAnnotationReview(before, after, kAgentUser, "gpu-a"));
    EXPECT_TRUE(own.allowed) << before << " -> " << after << ": " << own.message;
  }
}

// acme's pod asking for a time-sliced replica, admitted before acme's tier lost time-slicing:
// created today it is denied, yet the agent's annotation-only UPDATE of it is allowed, and a
// tenant's forged one is denied for the annotation alone.
TEST_F(DeviceAnnotationOverHttpsTest, AgentsWriteIsNotRefusedForAnotherRuleBrokenToday) {
  const std::string shared = R"({"nvidia.com/gpu.shared":"1"})";
  rapidjson::Document create =
      ParseOrDie(PodAnnotationReview({"", "", kAgentUser, "gpu-a", shared}));
  auto& alloc = create.GetAllocator();
  create["request"]["operation"].SetString("CREATE", alloc);
  create["request"]["oldObject"].SetNull();
  Answer today = Validate(ToText(create));
  EXPECT_FALSE(today.allowed);
  EXPECT_EQ(today.message.rfind("[tier-shared] ", 0), 0u) << today.message;

  Answer agent = Validate(PodAnnotationReview({"", kDevices, kAgentUser, "gpu-a", shared}));
  EXPECT_TRUE(agent.allowed) << agent.message;

  Answer forged = Validate(PodAnnotationReview({"", kDevices, "alice@acme.example", "", shared}));
  EXPECT_FALSE(forged.allowed);
  EXPECT_EQ(forged.message.rfind("[device-annotation] ", 0), 0u) << forged.message;
  EXPECT_EQ(forged.message.find("[tier-shared]"), std::string::npos) << forged.message;
}

}  // namespace
