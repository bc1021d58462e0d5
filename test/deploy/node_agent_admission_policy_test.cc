// manifests/node-agent/admission-policy.yaml, as `kubectl kustomize` renders it: two
// ValidatingAdmissionPolicies (a pod's gpu-tenancy.io/devices, a Node's gpu-tenancy.io/gpu-devices)
// bound for every namespace, failing closed, keyed on the agent's ServiceAccount and the node its
// token is bound to. Their CEL is evaluated here (cel/data.h, with each `variables.x` written out
// as its expression, as kube-apiserver composes them) against the same requests as the validating
// webhook's device-annotation rule, and must agree with that rule on every one.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cel/data.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/webhook/cel_json.h"
#include "topology/wellknown.h"
#include "webhook/device_annotation_rules.h"

namespace {

using cel::CelData;
using deploy_test::At;
using deploy_test::Json;
using deploy_test::Kustomize;
using deploy_test::Render;
using deploy_test::Source;
using deploy_test::Str;
using deploy_test::Strings;
using rapidjson::Value;

constexpr char kPodPolicy[] = "gpu-tenancy-pod-device-reports";
constexpr char kNodePolicy[] = "gpu-tenancy-node-gpu-devices";

const Render& NodeAgentRender() {
  static const Render* render = new Render(Kustomize(Source("manifests/node-agent")));
  return *render;
}

// `expression` with every `variables.name` replaced by its (parenthesised) expression, until
// none is left: kube-apiserver evaluates variables lazily and at most once, which for these
// side-effect-free expressions gives the same value.
std::string Inline(std::string expression, const Value* policy) {
  std::map<std::string, std::string> variables;
  if (const Value* list = At(policy, "/spec/variables"); list && list->IsArray()) {
    for (const Value& v : list->GetArray()) {
      variables[Str(&v, "/name")] = absl::StrCat("(", Str(&v, "/expression"), ")");
    }
  }
  for (int pass = 0; pass < 8 && expression.find("variables.") != std::string::npos; ++pass) {
    for (const auto& [name, value] : variables) {
      // Longest names first would matter only for prefixes; none of these is another's prefix.
      expression = absl::StrReplaceAll(expression, {{absl::StrCat("variables.", name), value}});
    }
  }
  EXPECT_EQ(expression.find("variables."), std::string::npos) << expression;
  return expression;
}

struct Compiled {
  std::vector<cel::CelCondition> match;  // matchConditions
  std::vector<cel::CelCondition> validate;
};

Compiled Compile(const Value* policy) {
  const std::vector<std::string> vars = {"object", "oldObject", "request"};
  Compiled out;
  for (const Value& m : At(policy, "/spec/matchConditions")->GetArray()) {
    out.match.push_back(cel::CelCondition::Compile(Str(&m, "/expression"), vars));
  }
  for (const Value& v : At(policy, "/spec/validations")->GetArray()) {
    out.validate.push_back(
        cel::CelCondition::Compile(Inline(Str(&v, "/expression"), policy), vars));
  }
  for (const auto* list : {&out.match, &out.validate}) {
    for (const cel::CelCondition& c : *list) {
      EXPECT_TRUE(c.supported()) << c.unsupported_reason();
    }
  }
  return out;
}

// The policy's verdict: not judged (some match condition false) or every validation true. An
// evaluation error denies, as failurePolicy Fail does, and fails the test: none is expected.
bool Admits(const Compiled& policy, const CelData& object, const CelData& old_object,
            const CelData& request) {
  std::map<std::string, const CelData*, std::less<>> bindings = {
      {"object", &object}, {"oldObject", &old_object}, {"request", &request}};
  for (const cel::CelCondition& m : policy.match) {
    cel::CelResult r = m.Evaluate(bindings);
    EXPECT_NE(r.outcome, cel::CelOutcome::kError) << r.detail;
    EXPECT_NE(r.outcome, cel::CelOutcome::kNotEvaluated) << r.detail;
    if (r.outcome == cel::CelOutcome::kFalse) return true;
  }
  for (const cel::CelCondition& v : policy.validate) {
    cel::CelResult r = v.Evaluate(bindings);
    EXPECT_NE(r.outcome, cel::CelOutcome::kError) << r.detail;
    EXPECT_NE(r.outcome, cel::CelOutcome::kNotEvaluated) << r.detail;
    if (r.outcome != cel::CelOutcome::kTrue) return false;
  }
  return true;
}

// An object carrying `annotation` = `value` (nullopt: without it) beside another annotation, as
// a map for CEL.
CelData Object(const std::string& name, const std::string& node, absl::string_view annotation,
               const std::optional<std::string>& value, bool is_node) {
  std::vector<std::pair<std::string, CelData>> metadata = {{"name", CelData::String(name)}};
  std::vector<std::pair<std::string, CelData>> annotations = {{"team", CelData::String("a")}};
  if (value) annotations.push_back({std::string(annotation), CelData::String(*value)});
  metadata.push_back({"annotations", CelData::Map(std::move(annotations))});
  std::vector<std::pair<std::string, CelData>> object = {
      {"metadata", CelData::Map(std::move(metadata))}};
  if (!is_node) {
    std::vector<std::pair<std::string, CelData>> spec = {
        {"containers", CelData::List({CelData::Map({{"name", CelData::String("main")}})})}};
    if (!node.empty()) spec.push_back({"nodeName", CelData::String(node)});
    object.push_back({"spec", CelData::Map(std::move(spec))});
  }
  return CelData::Map(std::move(object));
}

CelData Request(const webhook::UserIdentity& user, bool create, bool is_node) {
  std::vector<std::pair<std::string, CelData>> user_info = {
      {"username", CelData::String(user.username)}};
  if (!user.node_names.empty()) {
    std::vector<CelData> names;
    for (const std::string& n : user.node_names) names.push_back(CelData::String(n));
    user_info.push_back({"extra", CelData::Map({{std::string(webhook::kNodeNameExtra),
                                                 CelData::List(std::move(names))}})});
  }
  return CelData::Map(
      {{"operation", CelData::String(create ? "CREATE" : "UPDATE")},
       {"kind", CelData::Map({{"kind", CelData::String(is_node ? "Node" : "Pod")}})},
       {"userInfo", CelData::Map(std::move(user_info))}});
}

TEST(NodeAgentAdmissionPolicyTest, BoundForEveryNamespaceAndFailingClosed) {
  const Render& r = NodeAgentRender();
  ASSERT_TRUE(r.error.empty()) << r.error;
  struct Want {
    const char* name;
    std::vector<std::string> resources;
  };
  for (const Want& want :
       {Want{kPodPolicy, {"pods", "pods/status"}}, Want{kNodePolicy, {"nodes", "nodes/status"}}}) {
    SCOPED_TRACE(want.name);
    const Value* policy = r.Find("ValidatingAdmissionPolicy", want.name);
    ASSERT_NE(policy, nullptr);
    EXPECT_EQ(Str(policy, "/apiVersion"), "admissionregistration.k8s.io/v1");
    EXPECT_EQ(Str(policy, "/spec/failurePolicy"), "Fail");
    const Value* rules = At(policy, "/spec/matchConstraints/resourceRules");
    ASSERT_TRUE(rules && rules->IsArray() && rules->Size() == 1);
    EXPECT_EQ(Strings(policy, "/spec/matchConstraints/resourceRules/0/resources"), want.resources);
    EXPECT_EQ(Strings(policy, "/spec/matchConstraints/resourceRules/0/operations"),
              (std::vector<std::string>{"CREATE", "UPDATE"}));
    EXPECT_EQ(Strings(policy, "/spec/matchConstraints/resourceRules/0/apiGroups"),
              std::vector<std::string>{""});
    // Nothing in the policy itself may skip a namespace or an object.
    EXPECT_EQ(At(policy, "/spec/matchConstraints/namespaceSelector"), nullptr);
    EXPECT_EQ(At(policy, "/spec/matchConstraints/objectSelector"), nullptr);
    EXPECT_EQ(Str(policy, "/spec/validations/0/reason"), "Forbidden");
    EXPECT_FALSE(Str(policy, "/spec/validations/0/messageExpression").empty());

    const Value* binding = r.Find("ValidatingAdmissionPolicyBinding", want.name);
    ASSERT_NE(binding, nullptr);
    EXPECT_EQ(Str(binding, "/spec/policyName"), want.name);
    EXPECT_EQ(Strings(binding, "/spec/validationActions"), std::vector<std::string>{"Deny"});
    EXPECT_EQ(At(binding, "/spec/matchResources"), nullptr)
        << "every namespace, whatever its labels";
    EXPECT_EQ(At(binding, "/spec/paramRef"), nullptr);
  }
}

// The username in the expressions is the DaemonSet's ServiceAccount, which is the policy's
// default nodeAgent.serviceAccount, so the webhook rule and these policies trust one identity.
TEST(NodeAgentAdmissionPolicyTest, TrustsTheDaemonSetsServiceAccount) {
  const Render& r = NodeAgentRender();
  ASSERT_TRUE(r.error.empty()) << r.error;
  const Value* ds = r.Find("DaemonSet", "gpu-tenancy-node-agent");
  ASSERT_NE(ds, nullptr);
  const std::string username =
      absl::StrCat("system:serviceaccount:", Str(ds, "/metadata/namespace"), ":",
                   Str(ds, "/spec/template/spec/serviceAccountName"));
  EXPECT_EQ(username, webhook::NodeAgentUsername(topology::NodeAgent{}));
  for (const char* name : {kPodPolicy, kNodePolicy}) {
    SCOPED_TRACE(name);
    const Value* policy = r.Find("ValidatingAdmissionPolicy", name);
    ASSERT_NE(policy, nullptr);
    std::string agent_node;
    for (const Value& v : At(policy, "/spec/variables")->GetArray()) {
      if (Str(&v, "/name") == "agentNode") agent_node = Str(&v, "/expression");
    }
    EXPECT_NE(agent_node.find(absl::StrCat("'", username, "'")), std::string::npos) << agent_node;
  }
}

// Every combination of caller, object and before/after of the annotation, CREATE and UPDATE: the
// policies admit exactly what the webhook's device-annotation rule admits, less what the agent's
// reach excludes (the agent only updates objects of the node its token is bound to).
TEST(NodeAgentAdmissionPolicyTest, AgreesWithTheWebhooksDeviceAnnotationRule) {
  const Render& r = NodeAgentRender();
  ASSERT_TRUE(r.error.empty()) << r.error;
  const std::string agent = webhook::NodeAgentUsername(topology::NodeAgent{});
  const std::vector<webhook::UserIdentity> users = {
      {agent, {"gpu-a"}},
      {agent, {"gpu-b"}},
      {agent, {}},
      {agent, {"gpu-a", "gpu-b"}},
      {"alice@acme.example", {}},
      {"alice@acme.example", {"gpu-a"}},
      {"system:node:gpu-a", {}},
      {"system:serviceaccount:acme:gpu-tenancy-node-agent", {"gpu-a"}},
  };
  const std::vector<std::optional<std::string>> values = {std::nullopt, "{\"node\":\"gpu-a\"}",
                                                          "{\"node\":\"gpu-b\"}"};
  int allowed = 0, denied = 0;
  for (const bool is_node : {false, true}) {
    const Value* policy = r.Find("ValidatingAdmissionPolicy", is_node ? kNodePolicy : kPodPolicy);
    ASSERT_NE(policy, nullptr);
    const Compiled compiled = Compile(policy);
    const absl::string_view annotation =
        is_node ? topology::kNodeDevicesAnnotation : topology::kPodDevicesAnnotation;
    for (const std::string node : {"gpu-a", ""}) {
      if (is_node && node.empty()) continue;
      const std::string name = is_node ? node : "train-0";
      for (const webhook::UserIdentity& user : users) {
        for (const bool create : {true, false}) {
          for (const std::optional<std::string>& before : values) {
            if (create && before) continue;
            for (const std::optional<std::string>& after : values) {
              SCOPED_TRACE(absl::StrCat(
                  is_node ? "Node " : "pod on \"", node, "\" by ", user.username, " [",
                  absl::StrJoin(user.node_names, ","), "] ", create ? "CREATE" : "UPDATE", " ",
                  before.value_or("<absent>"), " -> ", after.value_or("<absent>")));
              webhook::DeviceAnnotationChange change{annotation, name, before,
                                                     after,      node, is_node};
              const bool rule_allows =
                  !webhook::CheckDeviceAnnotation(topology::NodeAgent{}, user, change);
              const bool reach_allows =
                  user.username != agent || (!create && user.node_names.size() == 1 &&
                                             !node.empty() && user.node_names[0] == node);
              const CelData object = Object(name, node, annotation, after, is_node);
              const CelData old_object =
                  create ? CelData::Null() : Object(name, node, annotation, before, is_node);
              const bool policy_allows =
                  Admits(compiled, object, old_object, Request(user, create, is_node));
              EXPECT_EQ(policy_allows, rule_allows && reach_allows);
              (policy_allows ? allowed : denied)++;
            }
          }
        }
      }
    }
  }
  // Both verdicts occur, many times: the table is not trivially one-sided.
  EXPECT_GT(allowed, 40);
  EXPECT_GT(denied, 40);
}

// The agent's reach, as NodeRestriction sets a kubelet's: on the objects of its own node it may
// change the report and nothing else; on any other node, nothing at all.
TEST(NodeAgentAdmissionPolicyTest, TheAgentReachesOnlyItsOwnNodesReports) {
  const Render& r = NodeAgentRender();
  ASSERT_TRUE(r.error.empty()) << r.error;
  const webhook::UserIdentity agent_a{webhook::NodeAgentUsername(topology::NodeAgent{}), {"gpu-a"}};
  struct Case {
    std::string name;
    bool is_node;
    std::string before, after;  // the object as JSON, before and after the agent's UPDATE
    bool allowed;
  };
  const std::string report = R"("gpu-tenancy.io/devices":"{\"node\":\"gpu-a\"}")";
  const std::string gpus = R"("gpu-tenancy.io/gpu-devices":"{\"gpus\":[]}")";
  auto pod = [](const std::string& node, const std::string& metadata, const std::string& spec) {
    return absl::StrCat(R"({"metadata":{"name":"train-0")", metadata, R"(},"spec":{"nodeName":")",
                        node, R"(","containers":[{"name":"main"}])", spec, "}}");
  };
  auto node = [](const std::string& name, const std::string& metadata, const std::string& spec) {
    return absl::StrCat(R"({"metadata":{"name":")", name, R"(")", metadata, R"(},"spec":{)", spec,
                        "}}");
  };
  const std::vector<Case> cases = {
      {"its pod's report", false, pod("gpu-a", "", ""),
       pod("gpu-a", absl::StrCat(R"(,"annotations":{)", report, "}"), ""), true},
      {"its pod's report beside other annotations", false,
       pod("gpu-a", R"(,"annotations":{"team":"a"})", ""),
       pod("gpu-a", absl::StrCat(R"(,"annotations":{"team":"a",)", report, "}"), ""), true},
      {"another node's pod, changing nothing of the report", false,
       pod("gpu-b", R"(,"labels":{"app":"x"})", ""), pod("gpu-b", R"(,"labels":{"app":"y"})", ""),
       false},
      {"its pod's labels", false, pod("gpu-a", R"(,"labels":{"app":"x"})", ""),
       pod("gpu-a", R"(,"labels":{"app":"y"})", ""), false},
      {"its pod's other annotation", false, pod("gpu-a", R"(,"annotations":{"team":"a"})", ""),
       pod("gpu-a", R"(,"annotations":{"team":"b"})", ""), false},
      {"a finalizer on its pod", false, pod("gpu-a", "", ""),
       pod("gpu-a", R"(,"finalizers":["example.com/hold"])", ""), false},
      {"its Node's GPU list", true, node("gpu-a", "", ""),
       node("gpu-a", absl::StrCat(R"(,"annotations":{)", gpus, "}"), ""), true},
      {"its Node's pool label", true, node("gpu-a", R"(,"labels":{"gpu-tenancy.io/pool":"a"})", ""),
       node("gpu-a", R"(,"labels":{"gpu-tenancy.io/pool":"b"})", ""), false},
      {"a taint on its Node", true, node("gpu-a", "", ""),
       node("gpu-a", "", R"("taints":[{"key":"k","effect":"NoSchedule"}])"), false},
      {"another Node's labels", true, node("gpu-b", R"(,"labels":{"x":"1"})", ""),
       node("gpu-b", R"(,"labels":{"x":"2"})", ""), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Value* policy = r.Find("ValidatingAdmissionPolicy", c.is_node ? kNodePolicy : kPodPolicy);
    ASSERT_NE(policy, nullptr);
    absl::StatusOr<rapidjson::Document> before = common::ParseJson(c.before);
    absl::StatusOr<rapidjson::Document> after = common::ParseJson(c.after);
    ASSERT_TRUE(before.ok() && after.ok()) << c.before << "\n" << c.after;
    EXPECT_EQ(Admits(Compile(policy), webhook_test::ToCelData(*after),
                     webhook_test::ToCelData(*before), Request(agent_a, false, c.is_node)),
              c.allowed);
  }
}

}  // namespace
