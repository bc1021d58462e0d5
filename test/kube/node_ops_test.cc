// The reconfiguration gate's Kubernetes calls (kube/node_ops.h) over the in-memory Api: each
// call's path, verb, body and content type, how each HTTP answer maps to a status the gate
// decides on (NotFound, PermissionDenied, Aborted on 409, Unavailable), what is read off Nodes
// and Pods, and the Node watch's ends. reconfigure_test drives the same calls end to end against
// the HTTPS emulation.
#include "kube/node_ops.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/in_memory_api.h"

namespace kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_support::InMemoryApi;

constexpr char kNodePath[] = "/api/v1/nodes/mig-a";

std::string NodeJson(bool unschedulable = false) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"mig-a","uid":"uid-mig-a",)",
      R"("labels":{"nvidia.com/mig.config":"all-1g.10gb","nvidia.com/mig.strategy":"mixed"}},)",
      R"("spec":{"unschedulable":)", unschedulable ? "true" : "false",
      R"(},"status":{"allocatable":{"cpu":"32","nvidia.com/mig-1g.10gb":"7",)",
      R"("nvidia.com/gpu":"0"}}})");
}

constexpr char kPodList[] = R"({"kind":"PodList","items":[
  {"metadata":{"name":"train","namespace":"acme","uid":"u1",
     "ownerReferences":[{"kind":"ReplicaSet","name":"train-7f","uid":"rs1","controller":true},
                        {"kind":"Other","name":"x","uid":"o1"}]},
   "spec":{"nodeName":"mig-a","containers":[{"name":"c","resources":{
     "limits":{"nvidia.com/mig-1g.10gb":"1","cpu":"1"}}}],
     "initContainers":[{"name":"i","resources":{"requests":{"nvidia.com/gpu":"0"}}}]},
   "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}},
  {"metadata":{"name":"web","namespace":"default","uid":"u2",
     "deletionTimestamp":"2026-12-01T00:00:00Z"},
   "spec":{"nodeName":"mig-a","containers":[{"name":"c"}]},
   "status":{"phase":"Running"}}]})";

TEST(NodeOpsTest, ANodeIsReadWithItsLabelsCordonAndNvidiaAllocatable) {
  InMemoryApi api;
  api.SetObject(kNodePath, NodeJson(/*unschedulable=*/true));
  absl::StatusOr<NodeFacts> node = GetNode(api, "mig-a");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->uid, "uid-mig-a");
  EXPECT_FALSE(node->resource_version.empty());
  EXPECT_TRUE(node->unschedulable);
  EXPECT_EQ(node->Label("nvidia.com/mig.config"), "all-1g.10gb");
  EXPECT_EQ(node->Label("absent"), std::nullopt);
  EXPECT_EQ(node->offer.allocatable.count("cpu"), 0u);  // only nvidia.com/*
  EXPECT_EQ(node->offer.allocatable.at("nvidia.com/mig-1g.10gb"), 7);

  EXPECT_EQ(GetNode(api, "absent").status().code(), absl::StatusCode::kNotFound);
  api.Reply("GET", kNodePath, 403);
  EXPECT_EQ(GetNode(api, "mig-a").status().code(), absl::StatusCode::kPermissionDenied);
  api.Fail("GET", kNodePath);
  absl::Status down = GetNode(api, "mig-a").status();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(down.message(), HasSubstr("connection refused"));
  EXPECT_EQ(ParseNode(R"({"kind":"Node"})").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NodeOpsTest, PodsOnTheNodeWithTheirGpuResourcesOwnerAndState) {
  InMemoryApi api;
  api.Reply("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dmig-a", 200, kPodList);
  absl::StatusOr<std::vector<PodFacts>> pods = ListPodsOnNode(api, "mig-a");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  const PodFacts& train = (*pods)[0];
  EXPECT_EQ(train.Key(), "acme/train");
  EXPECT_EQ(train.node, "mig-a");
  EXPECT_TRUE(train.ready);
  EXPECT_FALSE(train.terminating);
  // A zero request is no demand; cpu is no GPU resource.
  EXPECT_THAT(train.gpu_resources, ElementsAre("nvidia.com/mig-1g.10gb"));
  ASSERT_TRUE(train.owner.has_value());  // the controller reference, not the other one
  EXPECT_EQ(train.owner->kind, "ReplicaSet");
  EXPECT_EQ(train.owner->name, "train-7f");
  const PodFacts& web = (*pods)[1];
  EXPECT_TRUE(web.terminating);
  EXPECT_FALSE(web.ready);
  EXPECT_TRUE(web.gpu_resources.empty());
  EXPECT_FALSE(web.owner.has_value());

  api.Reply("GET", "/api/v1/namespaces/acme/pods", 500);
  EXPECT_EQ(ListPodsInNamespace(api, "acme").status().code(), absl::StatusCode::kUnavailable);
}

TEST(NodeOpsTest, ReplicasOfTheOwnersThatHaveThem) {
  InMemoryApi api;
  api.SetObject("/apis/apps/v1/namespaces/acme/replicasets/train-7f",
                R"({"metadata":{"name":"train-7f"},"spec":{"replicas":3}})");
  api.SetObject("/apis/apps/v1/namespaces/acme/statefulsets/db",
                R"({"metadata":{"name":"db"},"spec":{"replicas":"many"}})");
  EXPECT_EQ(OwnerReplicas(api, "acme", {"ReplicaSet", "train-7f", "rs1"}).value_or(-1), 3);
  EXPECT_EQ(OwnerReplicas(api, "acme", {"StatefulSet", "db", "s1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OwnerReplicas(api, "acme", {"ReplicaSet", "gone", "rs2"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(OwnerReplicas(api, "acme", {"Job", "batch", "j1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NodeOpsTest, CordonAndLabelsAreMergePatchesOfTheNode) {
  InMemoryApi api;
  api.SetObject(kNodePath, NodeJson());
  ASSERT_TRUE(SetUnschedulable(api, "mig-a", true).ok());
  ASSERT_TRUE(SetNodeLabels(api, "mig-a",
                            {{"nvidia.com/mig.config", "all-3g.40gb"},
                             {"nvidia.com/mig.strategy", std::nullopt}})
                  .ok());
  std::vector<InMemoryApi::Call> patches = api.Calls("PATCH", kNodePath);
  ASSERT_EQ(patches.size(), 2u);
  for (const InMemoryApi::Call& c : patches) {
    EXPECT_EQ(c.content_type, "application/merge-patch+json");
  }
  absl::StatusOr<NodeFacts> node = ParseNode(*api.Object(kNodePath));
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE(node->unschedulable);
  EXPECT_EQ(node->Label("nvidia.com/mig.config"), "all-3g.40gb");
  EXPECT_EQ(node->Label("nvidia.com/mig.strategy"), std::nullopt);  // null removes it

  EXPECT_EQ(SetUnschedulable(api, "absent", true).code(), absl::StatusCode::kNotFound);
  api.Reply("PATCH", kNodePath, 409);
  EXPECT_EQ(SetUnschedulable(api, "mig-a", false).code(), absl::StatusCode::kAborted);
}

TEST(NodeOpsTest, AnEvictionIsMadeGoneOrBlockedByABudget) {
  InMemoryApi api;
  PodFacts pod;
  pod.namespace_name = "acme";
  pod.name = "train";
  const std::string path = "/api/v1/namespaces/acme/pods/train/eviction";
  api.Reply("POST", path, 201, R"({"kind":"Status","status":"Success"})");
  absl::StatusOr<Eviction> made = EvictPod(api, pod);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->result, EvictionResult::kEvicted);
  absl::StatusOr<rapidjson::Document> body = common::ParseJson(api.Calls("POST", path).at(0).body);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(common::StringOr(*body, "kind"), "Eviction");

  api.Reply("POST", path, 404);
  EXPECT_EQ(EvictPod(api, pod)->result, EvictionResult::kGone);
  api.Reply("POST", path, 429,
            R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's )"
            R"(disruption budget."})");
  absl::StatusOr<Eviction> blocked = EvictPod(api, pod);
  ASSERT_TRUE(blocked.ok());
  EXPECT_EQ(blocked->result, EvictionResult::kBlocked);
  EXPECT_THAT(blocked->message, HasSubstr("disruption budget"));
  api.Reply("POST", path, 403);
  EXPECT_EQ(EvictPod(api, pod).status().code(), absl::StatusCode::kPermissionDenied);
}

std::string Event(const std::string& type, bool unschedulable) {
  return absl::StrCat(R"({"type":")", type, R"(","object":)", NodeJson(unschedulable), "}");
}

TEST(NodeOpsTest, TheNodeWatchEndsWhereTheCallerOrTheServerSays) {
  InMemoryApi api;
  // The caller is satisfied by the second state: the bookmark and junk in between are skipped.
  api.ScriptStream("/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Dmig-a",
                   {Event("ADDED", false), R"({"type":"BOOKMARK","object":{}})", "not json",
                    Event("MODIFIED", true), Event("MODIFIED", false)});
  std::vector<bool> seen;
  absl::Status done = WatchNode(
      api, "mig-a", "42",
      [&](const NodeFacts& n) {
        seen.push_back(n.unschedulable);
        return n.unschedulable;
      },
      nullptr);
  EXPECT_TRUE(done.ok()) << done;
  EXPECT_THAT(seen, ElementsAre(false, true));
  const std::string path = api.Calls("GET", "/api/v1/nodes?watch=1").at(0).path;
  EXPECT_TRUE(absl::StrContains(path, "resourceVersion=42")) << path;

  api.ScriptStream("/api/v1/nodes?watch=1", {Event("DELETED", false)});
  EXPECT_EQ(WatchNode(
                api, "mig-a", "43", [](const NodeFacts&) { return false; }, nullptr)
                .code(),
            absl::StatusCode::kNotFound);
  api.ScriptStream("/api/v1/nodes?watch=1", {}, 403);
  EXPECT_EQ(WatchNode(
                api, "mig-a", "43", [](const NodeFacts&) { return false; }, nullptr)
                .code(),
            absl::StatusCode::kPermissionDenied);
  api.ScriptStream("/api/v1/nodes?watch=1", {}, 500);
  EXPECT_EQ(WatchNode(
                api, "mig-a", "43", [](const NodeFacts&) { return false; }, nullptr)
                .code(),
            absl::StatusCode::kUnavailable);
  // A stream that just ends is OK: the caller reads the node again and watches anew.
  api.ScriptStream("/api/v1/nodes?watch=1", {Event("MODIFIED", false)});
  EXPECT_TRUE(WatchNode(
                  api, "mig-a", "43", [](const NodeFacts&) { return false; }, nullptr)
                  .ok());
}

TEST(NodeOpsTest, EventsConfigMapsAndTheSmokePod) {
  InMemoryApi api;
  absl::StatusOr<NodeFacts> node = ParseNode(NodeJson());
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(
      PostNodeEvent(api, *node, /*warning=*/true, "MigReconfigureFailed", "rolled back").ok());
  absl::StatusOr<rapidjson::Document> event =
      common::ParseJson(api.Calls("POST", "/api/v1/namespaces/default/events").at(0).body);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(common::StringOr(*event, "type"), "Warning");
  EXPECT_EQ(common::StringOr(*event, "reason"), "MigReconfigureFailed");
  const common::JsonValue* involved = common::FindNonNull(*event, "involvedObject");
  ASSERT_NE(involved, nullptr);
  EXPECT_EQ(common::StringOr(*involved, "kind"), "Node");
  EXPECT_EQ(common::StringOr(*involved, "uid"), "uid-mig-a");

  EXPECT_EQ(GetConfigMap(api, "gpu-operator", "mig-parted").status().code(),
            absl::StatusCode::kNotFound);
  api.SetObject("/api/v1/namespaces/gpu-operator/configmaps/mig-parted",
                R"({"metadata":{"name":"mig-parted"},"data":{"config.yaml":"version: v1"}})");
  EXPECT_THAT(GetConfigMap(api, "gpu-operator", "mig-parted").value_or(""),
              HasSubstr("version: v1"));

  absl::StatusOr<std::string> smoke =
      CreateSmokePod(api, "default", "mig-a", "cuda:12", "nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(smoke.ok()) << smoke.status();
  absl::StatusOr<PodFacts> pod = GetPod(api, "default", *smoke);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->node, "mig-a");  // pinned: no scheduler involved
  EXPECT_THAT(pod->gpu_resources, ElementsAre("nvidia.com/mig-1g.10gb"));
  ASSERT_TRUE(DeletePod(api, "default", *smoke).ok());
  EXPECT_EQ(GetPod(api, "default", *smoke).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kube
