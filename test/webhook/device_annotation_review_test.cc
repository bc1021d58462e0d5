// The device-annotation rule through Review, as kube-apiserver's AdmissionReviews reach it: who
// may write a pod's or a Node's device annotation, and that the node agent's annotation-only
// UPDATE of a pod admitted earlier is judged by that rule alone, even when the pod breaks
// another rule today (the policy changed since): on UPDATE only the rules whose inputs may
// change run, and only on what changed (webhook/pod_rules.h), so the agent's write, which
// changes nothing they read, must never be refused for them.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace webhook {
namespace {

using webhook_test::Json;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;

constexpr char kAgentSa[] = "system:serviceaccount:gpu-tenancy-system:gpu-tenancy-node-agent";

std::string DeviceUserInfo(const std::string& username, const std::string& node) {
  if (node.empty()) return absl::StrCat(R"({"username":")", username, R"("})");
  return absl::StrCat(R"({"username":")", username,
                      R"(","extra":{"authentication.kubernetes.io/node-name":[")", node, R"("]}})");
}

// A pod of namespace `ns` bound to `node`; `container` and `annotations` are JSON members (the
// container's besides its name, the metadata's annotations), each may be empty.
std::string BoundPod(const std::string& ns, const std::string& node, const std::string& container,
                     const std::string& annotations) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0",)",
                      R"("namespace":")", ns, R"(","annotations":{)", annotations,
                      R"(}},"spec":{"nodeName":")", node, R"(","containers":[{"name":"main")",
                      container.empty() ? "" : ",", container, "}]}}");
}

constexpr char kDevicesA[] = R"("gpu-tenancy.io/devices":"{\"main\":[\"MIG-1\"]}")";
constexpr char kDevicesB[] = R"("gpu-tenancy.io/devices":"{\"main\":[\"MIG-2\"]}")";

struct DeviceReviewResult {
  bool allowed = false;
  std::string message;
};

DeviceReviewResult ReviewAs(const std::string& kind, const std::string& ns,
                            const std::string& object, const std::string& old_object,
                            const std::string& user_info) {
  rapidjson::Document obj = Json(object);
  rapidjson::Document old;
  rapidjson::Document user = Json(user_info);
  ReviewOptions o;
  o.kind = kind;
  o.ns = ns;
  o.resource = kind == "Node" ? "nodes" : "pods";
  o.user_info = &user;
  if (!old_object.empty()) {
    old = Json(old_object);
    o.operation = "UPDATE";
    o.old_object = &old;
  }
  static const topology::Policy policy = webhook_test::TestPolicy();
  webhook_test::Reply r = RunReview(obj, ReviewKind::kValidate, policy, o);
  EXPECT_EQ(r.http_status, 200) << common::ToJson(r.body);
  return {r.allowed, r.message};
}

TEST(DeviceAnnotationReviewTest, WhoMayWriteThePodAndNodeAnnotations) {
  const std::string gpu = R"("resources":{"limits":{"nvidia.com/mig-1g.10gb":"1"}})";
  const std::string pod_before = BoundPod("acme", "gpu-a", gpu, "");
  const std::string pod_after = BoundPod("acme", "gpu-a", gpu, kDevicesA);
  const std::string node_before =
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a"}})";
  const std::string node_after =
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a","annotations":{)"
      R"("gpu-tenancy.io/gpu-devices":"[\"GPU-1\"]"}}})";
  struct Row {
    const char* name;
    std::string kind, object, old_object, user_info;
    bool allowed;
    std::string message_start;
  };
  const Row rows[] = {
      {"tenant forges a pod's devices", "Pod", pod_after, pod_before, DeviceUserInfo("alice", ""),
       false,
       "[device-annotation] user \"alice\" may not add annotation gpu-tenancy.io/devices of pod "
       "\"acme/train-0\""},
      {"agent of another node", "Pod", pod_after, pod_before, DeviceUserInfo(kAgentSa, "gpu-b"),
       false,
       "[device-annotation] the node agent on node \"gpu-b\" may not add annotation "
       "gpu-tenancy.io/devices of pod \"acme/train-0\", which runs on node \"gpu-a\""},
      {"agent of the pod's node", "Pod", pod_after, pod_before, DeviceUserInfo(kAgentSa, "gpu-a"),
       true, ""},
      {"tenant changes nothing of it", "Pod", pod_after, pod_after, DeviceUserInfo("alice", ""),
       true, ""},
      {"admin writes a Node's gpu-devices", "Node", node_after, node_before,
       DeviceUserInfo("kubernetes-admin", ""), false,
       "[device-annotation] user \"kubernetes-admin\" may not add annotation "
       "gpu-tenancy.io/gpu-devices of node \"gpu-a\""},
      {"agent of another node writes a Node's", "Node", node_after, node_before,
       DeviceUserInfo(kAgentSa, "gpu-b"), false,
       "[device-annotation] the node agent on node \"gpu-b\" may not add annotation "
       "gpu-tenancy.io/gpu-devices of node \"gpu-a\""},
      {"agent of the Node", "Node", node_after, node_before, DeviceUserInfo(kAgentSa, "gpu-a"),
       true, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    DeviceReviewResult r = ReviewAs(row.kind, row.kind == "Node" ? "" : "acme", row.object,
                                    row.old_object, row.user_info);
    EXPECT_EQ(r.allowed, row.allowed) << r.message;
    EXPECT_EQ(r.message.rfind(row.message_start, 0), 0u) << r.message;
  }
}

// Pods admitted before the policy changed, each breaking a rule of today's policy: created now,
// each is denied for that rule; the agent's annotation-only UPDATE is allowed; a tenant's
// forged one is denied by device-annotation, and for nothing else.
TEST(DeviceAnnotationReviewTest, AgentsAnnotationOnlyUpdateIsJudgedByThatRuleAlone) {
  struct Row {
    const char* name;
    std::string ns, container, annotations;
    const char* rule_today;
  };
  const Row rows[] = {
      {"MIG profile no longer allowed", "gpu-team",
       R"("resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"}})", "", "[tenant-limits]"},
      {"GPU memory over today's limit", "research",
       R"("resources":{"limits":{"nvidia.com/gpu.memory":"60Gi"}})", "", "[tenant-limits]"},
      {"memory annotation over today's limit", "research",
       R"("resources":{"limits":{"nvidia.com/gpu":"1"}})", R"("gpu-tenancy.io/gpu-memory":"60Gi")",
       "[tenant-limits]"},
      {"unreadable memory annotation", "acme", R"("resources":{"limits":{"nvidia.com/gpu":"1"}})",
       R"("gpu-tenancy.io/gpu-memory":"lots")", "[invalid-gpu-request]"},
      {"sharing the tier no longer allows", "acme",
       R"("resources":{"limits":{"nvidia.com/gpu.shared":"1"}})", "", "[tier-shared]"},
      {"namespace no tenant owns any more", "orphaned",
       R"("resources":{"limits":{"nvidia.com/gpu":"1"}})", "", "[unknown-tenant]"},
      {"device access the tier lost", "acme", R"("securityContext":{"privileged":true})", "",
       "[device-access]"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto pod = [&](const std::string& devices) {
      std::string annotations = row.annotations;
      if (!devices.empty()) absl::StrAppend(&annotations, annotations.empty() ? "" : ",", devices);
      return BoundPod(row.ns, "gpu-a", row.container, annotations);
    };
    const std::string agent = DeviceUserInfo(kAgentSa, "gpu-a");
    DeviceReviewResult created = ReviewAs("Pod", row.ns, pod(""), "", agent);
    EXPECT_FALSE(created.allowed);
    EXPECT_EQ(created.message.rfind(row.rule_today, 0), 0u) << created.message;

    for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
             {"", kDevicesA}, {kDevicesA, kDevicesB}, {kDevicesA, ""}}) {
      DeviceReviewResult written = ReviewAs("Pod", row.ns, pod(after), pod(before), agent);
      EXPECT_TRUE(written.allowed) << written.message;
    }
    DeviceReviewResult forged =
        ReviewAs("Pod", row.ns, pod(kDevicesA), pod(""), DeviceUserInfo("alice", ""));
    EXPECT_FALSE(forged.allowed);
    EXPECT_EQ(forged.message.rfind("[device-annotation] ", 0), 0u) << forged.message;
    EXPECT_EQ(forged.message.find(row.rule_today), std::string::npos) << forged.message;
  }
}

}  // namespace
}  // namespace webhook
