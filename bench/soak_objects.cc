#include "bench/soak_objects.h"

#include <fstream>
#include <iterator>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "webhook/match_conditions.h"
#include "webhook/match_conditions_check.h"

namespace soak {

using testing_support::FakeApiServer;

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Kubeconfig(const FakeApiServer& api) {
  return absl::StrCat(
      "apiVersion: v1\nkind: Config\ncurrent-context: emulator\nclusters:\n- name: emulator\n"
      "  cluster:\n    server: ",
      api.url(), "\n    certificate-authority-data: ", absl::Base64Escape(ReadWhole(api.ca_file())),
      "\nusers:\n- name: soak\n  user:\n    token: test-token\ncontexts:\n- name: emulator\n"
      "  context:\n    cluster: emulator\n    user: soak\n    namespace: gpu-system\n");
}

absl::Status LoadWebhookConfigurations(FakeApiServer& api, const std::string& policy_yaml) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(policy_yaml);
  if (!policy.ok()) return policy.status();
  for (auto [kind, config, name] :
       {std::tuple{webhook::ReviewKind::kValidate, "ValidatingWebhookConfiguration",
                   webhook::kValidateWebhookName},
        std::tuple{webhook::ReviewKind::kMutate, "MutatingWebhookConfiguration",
                   webhook::kMutateWebhookName}}) {
    const webhook::MatchCondition c = webhook::WebhookMatchCondition(*policy, kind);
    rapidjson::Document doc(rapidjson::kObjectType);
    auto& a = doc.GetAllocator();
    rapidjson::Value condition(rapidjson::kObjectType);
    condition.AddMember("name", rapidjson::Value(c.name.c_str(), a), a);
    condition.AddMember("expression", rapidjson::Value(c.expression.c_str(), a), a);
    rapidjson::Value hook(rapidjson::kObjectType);
    hook.AddMember("name", rapidjson::StringRef(name), a);
    hook.AddMember("matchConditions",
                   rapidjson::Value(rapidjson::kArrayType).PushBack(condition, a), a);
    doc.AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
    doc.AddMember("kind", rapidjson::StringRef(config), a);
    doc.AddMember("metadata",
                  rapidjson::Value(rapidjson::kObjectType).AddMember("name", "gpu-tenancy", a), a);
    doc.AddMember("webhooks", rapidjson::Value(rapidjson::kArrayType).PushBack(hook, a), a);
    if (absl::Status st = api.Load(common::ToJson(doc)); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string FirstNodeOf(bench::NodeKind kind) {
  int i = 0;
  while (bench::KindOf(i) != kind) ++i;
  return bench::NodeName(i);
}

std::string PendingPod(const std::string& ns, const std::string& name, const std::string& limits) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":")", ns,
      R"(","uid":"uid-)", ns, "-", name, R"(","labels":{"app":"soak"}},)",
      R"("spec":{"schedulerName":"default-scheduler","containers":[{"name":"main",)",
      R"("image":"registry.example.com/ml/infer:3.0","resources":{"limits":)", limits,
      R"(,"requests":)", limits, R"(}}]},"status":{"phase":"Pending"}})");
}

std::string ExtenderArgs(const std::string& pod, const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back(absl::StrCat("\"", n, "\""));
  return absl::StrCat(R"({"Pod":)", pod, R"(,"Nodes":null,"NodeNames":[)",
                      absl::StrJoin(quoted, ","), "]}");
}

std::string Review(const std::string& uid, const std::string& ns, const std::string& name,
                   const std::string& limits) {
  return absl::StrCat(
      R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":")", uid,
      R"(","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},)",
      R"("requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},)",
      R"("name":")", name, R"(","namespace":")", ns, R"(","operation":"CREATE",)",
      R"("userInfo":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},)",
      R"("object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":")", name,
      R"(","namespace":")", ns,
      R"(","labels":{"app":"soak"}},"spec":{"volumes":[{"name":"kube-api-access-dzjcf","projected":{"sources":[)",
      R"({"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt",)",
      R"("items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],)",
      R"("containers":[{"name":"main","image":"registry.k8s.io/pause:3.9","resources":{"limits":)",
      limits, R"(,"requests":)", limits,
      R"(},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],)",
      R"("restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default",)",
      R"("securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready",)",
      R"("operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,)",
      R"("preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","qosClass":"Burstable"}},)",
      R"("oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-create"}}})");
}

}  // namespace soak
