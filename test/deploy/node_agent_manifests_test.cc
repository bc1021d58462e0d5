// manifests/node-agent: the DaemonSet reads the kubelet's socket through a read-only hostPath,
// knows its node from spec.nodeName, runs on tainted GPU nodes with requests and no
// capabilities; its role grants the calls the agent makes (list pods, get the node, patch
// both) and nothing else; its NetworkPolicy admits only metrics readers, to the metrics port.
#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"

namespace {

using deploy_test::At;
using deploy_test::Kustomize;
using deploy_test::Render;
using deploy_test::Source;
using deploy_test::Str;
using deploy_test::Strings;
using rapidjson::Value;

TEST(NodeAgentManifestsTest, TheDaemonSetReadsTheKubeletSocketReadOnly) {
  Render r = Kustomize(Source("manifests/node-agent"));
  ASSERT_TRUE(r.error.empty()) << r.error;
  const Value* ds = r.Find("DaemonSet", "gpu-tenancy-node-agent");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(Str(ds, "/metadata/namespace"), "gpu-tenancy-system");
  const Value* pod = At(ds, "/spec/template/spec");
  EXPECT_EQ(Str(pod, "/serviceAccountName"), "gpu-tenancy-node-agent");
  EXPECT_EQ(Str(pod, "/volumes/0/hostPath/path"), "/var/lib/kubelet/pod-resources");
  const Value* c = At(pod, "/containers/0");
  EXPECT_EQ(Strings(c, "/args")[0], "node-agent");
  EXPECT_EQ(Str(c, "/volumeMounts/0/mountPath"), "/var/lib/kubelet/pod-resources");
  const Value* read_only = At(c, "/volumeMounts/0/readOnly");
  EXPECT_TRUE(read_only && read_only->IsTrue());
  EXPECT_EQ(Str(c, "/env/0/name"), "NODE_NAME");
  EXPECT_EQ(Str(c, "/env/0/valueFrom/fieldRef/fieldPath"), "spec.nodeName");
  EXPECT_FALSE(Str(c, "/resources/requests/cpu").empty());
  EXPECT_FALSE(Str(c, "/resources/requests/memory").empty());
  EXPECT_FALSE(Str(c, "/resources/limits/memory").empty());
  EXPECT_EQ(Strings(c, "/securityContext/capabilities/drop"), std::vector<std::string>{"ALL"});
  const Value* ro_root = At(c, "/securityContext/readOnlyRootFilesystem");
  EXPECT_TRUE(ro_root && ro_root->IsTrue());
  const Value* escalation = At(c, "/securityContext/allowPrivilegeEscalation");
  EXPECT_TRUE(escalation && escalation->IsFalse());
  bool tolerates_gpu = false;
  if (const Value* tolerations = At(pod, "/tolerations"); tolerations && tolerations->IsArray()) {
    for (const Value& t : tolerations->GetArray()) {
      tolerates_gpu |= common::StringOr(t, "key") == "nvidia.com/gpu";
    }
  }
  EXPECT_TRUE(tolerates_gpu);
}

TEST(NodeAgentManifestsTest, TheRoleGrantsTheAgentsCallsAndNothingElse) {
  Render r = Kustomize(Source("manifests/node-agent"));
  ASSERT_TRUE(r.error.empty()) << r.error;
  const Value* role = r.Find("ClusterRole", "gpu-tenancy-node-agent");
  ASSERT_NE(role, nullptr);
  std::set<std::tuple<std::string, std::string, std::string>> granted;
  for (const Value& rule : At(role, "/rules")->GetArray()) {
    for (const std::string& group : Strings(&rule, "/apiGroups")) {
      for (const std::string& resource : Strings(&rule, "/resources")) {
        for (const std::string& verb : Strings(&rule, "/verbs")) {
          granted.insert({group, resource, verb});
        }
      }
    }
  }
  // GET /api/v1/pods?fieldSelector=spec.nodeName=..., GET the node, PATCH pods and the node.
  const std::set<std::tuple<std::string, std::string, std::string>> calls = {
      {"", "pods", "list"}, {"", "pods", "patch"}, {"", "nodes", "get"}, {"", "nodes", "patch"}};
  EXPECT_EQ(granted, calls);
  const Value* binding = r.Find("ClusterRoleBinding", "gpu-tenancy-node-agent");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ(Str(binding, "/subjects/0/name"), "gpu-tenancy-node-agent");
  EXPECT_EQ(Str(binding, "/subjects/0/namespace"), "gpu-tenancy-system");
}

TEST(NodeAgentManifestsTest, OnlyMetricsReadersMayConnectAndOnlyToTheMetricsPort) {
  Render r = Kustomize(Source("manifests/node-agent"));
  ASSERT_TRUE(r.error.empty()) << r.error;
  const Value* policy = r.Find("NetworkPolicy", "gpu-tenancy-node-agent");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(Strings(policy, "/spec/policyTypes"), (std::vector<std::string>{"Ingress", "Egress"}));
  const Value* ingress = At(policy, "/spec/ingress");
  ASSERT_TRUE(ingress != nullptr && ingress->IsArray());
  ASSERT_EQ(ingress->Size(), 1u);
  EXPECT_EQ(Str(policy,
                "/spec/ingress/0/from/0/namespaceSelector/matchLabels/"
                "gpu-tenancy.io~1metrics-reader"),
            "true");
  ASSERT_EQ(At(policy, "/spec/ingress/0/ports")->Size(), 1u);
  EXPECT_EQ(Str(policy, "/spec/ingress/0/ports/0/port"), "metrics");

  // The port it names is the one the agent listens on, and the liveness probe reads it.
  const Value* agent = r.Find("DaemonSet", "gpu-tenancy-node-agent");
  ASSERT_NE(agent, nullptr);
  const Value* container = At(agent, "/spec/template/spec/containers/0");
  EXPECT_EQ(Str(container, "/ports/0/name"), "metrics");
  EXPECT_EQ(At(container, "/ports/0/containerPort")->GetInt(), 8080);
  std::vector<std::string> args = Strings(container, "/args");
  EXPECT_NE(std::find(args.begin(), args.end(), "--metrics-listen=0.0.0.0:8080"), args.end());
  EXPECT_EQ(Str(container, "/livenessProbe/httpGet/path"), "/healthz");
  EXPECT_EQ(Str(container, "/livenessProbe/httpGet/port"), "metrics");
}

}  // namespace
