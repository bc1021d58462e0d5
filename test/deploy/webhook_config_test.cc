// The admission webhook configurations in the renders: fail closed, never block the control
// plane.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cel/data.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/shell.h"
#include "test/webhook/cel_json.h"
#include "topology/wellknown.h"
#include "webhook/match_conditions.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::kService;
using deploy_test::ReadFile;
using deploy_test::Source;
using deploy_test::Str;
using deploy_test::Strings;
using rapidjson::Value;

TEST_F(DeployTest, WebhooksFailClosedButNeverBlockTheControlPlane) {
  struct Hook {
    const char* kind;
    const char* name;
    const char* path;
  };
  const std::vector<Hook> hooks = {
      {"ValidatingWebhookConfiguration", "validate.gpu-tenancy.io", "/webhook/validate"},
      {"MutatingWebhookConfiguration", "mutate.gpu-tenancy.io", "/webhook/mutate"},
  };
  // Which namespaces the selector lets through, evaluated on each namespace's labels.
  struct Ns {
    std::string name;
    std::map<std::string, std::string> labels;
    bool called;
  };
  std::vector<Ns> namespaces = {
      {"kube-system", {}, false},
      {kNamespace, {}, false},
      {"acme", {}, true},
      {"research", {{"gpu-tenancy.io/tenant", "bank"}}, true},
      {"legacy", {{"gpu-tenancy.io/webhook", "disabled"}}, false},
      {"kube-public", {}, true},
  };
  // The device-annotation rule distrusts exactly what these namespaces hold: they must be the
  // ones the selector leaves out.
  for (absl::string_view ns : topology::kWebhookExemptNamespaces) {
    namespaces.push_back({std::string(ns), {}, false});
  }
  for (const char* render : {"base", "cert-manager", "static-certs"}) {
    for (const Hook& hook : hooks) {
      SCOPED_TRACE(absl::StrCat(render, " ", hook.kind));
      const Value* config = Get(render).Find(hook.kind, "gpu-tenancy");
      ASSERT_NE(config, nullptr);
      const Value* webhooks = At(config, "/webhooks");
      ASSERT_TRUE(webhooks && webhooks->IsArray() && webhooks->Size() == 1);
      const Value* w = &(*webhooks)[0];
      EXPECT_EQ(Str(w, "/name"), hook.name);
      EXPECT_EQ(Strings(w, "/admissionReviewVersions"), std::vector<std::string>{"v1"});
      // Validation reserves claim quota (webhook/claim_quota.h), except on a dry run.
      EXPECT_EQ(Str(w, "/sideEffects"), std::string(hook.kind) == "ValidatingWebhookConfiguration"
                                            ? "NoneOnDryRun"
                                            : "None");
      EXPECT_EQ(Str(w, "/failurePolicy"), "Fail");
      EXPECT_EQ(Str(w, "/matchPolicy"), "Equivalent");
      const Value* timeout = At(w, "/timeoutSeconds");
      ASSERT_TRUE(timeout && timeout->IsInt());
      EXPECT_GE(timeout->GetInt(), 1);
      EXPECT_LE(timeout->GetInt(), 10)
          << "a short timeout keeps a slow webhook from stalling writes";
      if (std::string(hook.kind) == "MutatingWebhookConfiguration") {
        EXPECT_EQ(Str(w, "/reinvocationPolicy"), "IfNeeded");
      }
      EXPECT_EQ(Str(w, "/clientConfig/service/namespace"), kNamespace);
      EXPECT_EQ(Str(w, "/clientConfig/service/name"), kService);
      EXPECT_EQ(Str(w, "/clientConfig/service/path"), hook.path);
      EXPECT_EQ(Json(At(w, "/clientConfig/service/port")), "8443");
      EXPECT_EQ(At(w, "/clientConfig/url"), nullptr);

      // Rules: pods (core v1) and DRA claims and claim templates, on CREATE at least.
      std::set<std::string> covered;
      const Value* rules = At(w, "/rules");
      ASSERT_TRUE(rules && rules->IsArray());
      for (const Value& rule : rules->GetArray()) {
        std::vector<std::string> ops = Strings(&rule, "/operations");
        // Claims are immutable, and kube-scheduler UPDATEs each one it allocates: an UPDATE
        // rule would put every DRA allocation behind this fail-closed webhook.
        if (absl::c_linear_search(Strings(&rule, "/apiGroups"), "resource.k8s.io")) {
          EXPECT_EQ(ops, std::vector<std::string>{"CREATE"}) << hook.kind;
        }
        if (std::find(ops.begin(), ops.end(), "CREATE") == ops.end()) continue;
        for (const std::string& group : Strings(&rule, "/apiGroups")) {
          for (const std::string& res : Strings(&rule, "/resources"))
            covered.insert(group + "/" + res);
        }
      }
      for (const char* want :
           {"/pods", "resource.k8s.io/resourceclaims", "resource.k8s.io/resourceclaimtemplates"}) {
        EXPECT_TRUE(covered.count(want))
            << want << " not covered; have " << absl::StrJoin(covered, ", ");
      }
      // Nodes: validation only, CREATE and UPDATE, cluster-scoped (the namespaceSelector never
      // skips them; the matchConditions do), and never nodes/status, the kubelet's heartbeat.
      int node_rules = 0;
      for (const Value& rule : rules->GetArray()) {
        const std::vector<std::string> resources = Strings(&rule, "/resources");
        EXPECT_FALSE(absl::c_linear_search(resources, "nodes/status")) << hook.kind;
        EXPECT_FALSE(absl::c_linear_search(resources, "nodes/*")) << hook.kind;
        EXPECT_FALSE(absl::c_linear_search(resources, "*")) << hook.kind;
        if (!absl::c_linear_search(resources, "nodes")) continue;
        ++node_rules;
        EXPECT_EQ(resources, std::vector<std::string>{"nodes"});
        EXPECT_EQ(Strings(&rule, "/apiGroups"), std::vector<std::string>{""});
        EXPECT_EQ(Strings(&rule, "/operations"), (std::vector<std::string>{"CREATE", "UPDATE"}));
        EXPECT_EQ(Str(&rule, "/scope"), "Cluster");
      }
      EXPECT_EQ(node_rules, std::string(hook.kind) == "ValidatingWebhookConfiguration" ? 1 : 0);

      // namespaceSelector: matchExpressions only (matchLabels would opt namespaces in).
      const Value* selector = At(w, "/namespaceSelector");
      ASSERT_NE(selector, nullptr);
      EXPECT_EQ(At(selector, "/matchLabels"), nullptr);
      const Value* exprs = At(selector, "/matchExpressions");
      ASSERT_TRUE(exprs && exprs->IsArray());
      for (const Ns& ns : namespaces) {
        std::map<std::string, std::string> labels = ns.labels;
        labels["kubernetes.io/metadata.name"] = ns.name;  // set by kube-apiserver
        bool match = true;
        for (const Value& e : exprs->GetArray()) {
          std::string key = Str(&e, "/key"), op = Str(&e, "/operator");
          std::vector<std::string> values = Strings(&e, "/values");
          auto it = labels.find(key);
          bool in = it != labels.end() &&
                    std::find(values.begin(), values.end(), it->second) != values.end();
          if (op == "NotIn") {
            match &= !in;
          } else if (op == "In") {
            match &= in;
          } else if (op == "Exists") {
            match &= it != labels.end();
          } else if (op == "DoesNotExist") {
            match &= it == labels.end();
          } else {
            ADD_FAILURE() << "unknown operator " << op;
          }
        }
        EXPECT_EQ(match, ns.called) << "namespace " << ns.name;
      }
    }
  }
}

// The shipped webhooks.yaml is `gpu-tenancy webhook-config` for the shipped policy: the
// conditions cannot fall behind a rule's inputs or the policy's names.
TEST(WebhookConfigGeneratedTest, ShippedConfigIsTheGeneratorsOutput) {
  testing_support::CommandResult r = testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " webhook-config --policy ",
                   testing_support::ShellQuote(Source("manifests/base/policy.yaml"))));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string shipped = ReadFile(Source("manifests/base/webhooks.yaml"));
  if (shipped != r.out) {
    std::vector<std::string> a = absl::StrSplit(shipped, '\n');
    std::vector<std::string> b = absl::StrSplit(r.out, '\n');
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    ADD_FAILURE() << "manifests/base/webhooks.yaml drifted from the generator at line " << i + 1
                  << "\n  shipped:   " << (i < a.size() ? a[i] : "<end of file>")
                  << "\n  generated: " << (i < b.size() ? b[i] : "<end of output>")
                  << "\nregenerate it with\n  gpu-tenancy webhook-config --policy "
                     "manifests/base/policy.yaml > manifests/base/webhooks.yaml";
  }
  // A bad policy is a clear error, not a configuration.
  r = testing_support::RunShell(absl::StrCat(testing_support::ShellQuote(GT_BINARY),
                                             " webhook-config --policy /nonexistent/policy.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--policy"), std::string::npos) << r.err;
}

// Its options are checked before anything is written: a stray argument or an empty file name
// is a usage error naming it.
TEST(WebhookConfigGeneratedTest, BadUsageIsRefusedNamingTheFlag) {
  for (const auto& [args, error] : std::vector<std::pair<std::string, std::string>>{
           {"manifests/base/policy.yaml",
            "error: unexpected argument \"manifests/base/policy.yaml\""},
           {"--policy ''", "error: --policy takes a file, not \"\""},
       }) {
    SCOPED_TRACE(args);
    testing_support::CommandResult r = testing_support::RunShell(
        absl::StrCat(testing_support::ShellQuote(GT_BINARY), " webhook-config ", args));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.substr(0, r.err.find('\n')), error) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// Rendered by kustomize as kube-apiserver would receive them, each webhook carries one
// condition that is the generator's for the shipped policy, and that, evaluated on the rendered
// text, skips a CPU-only pod and the kubelet's Node updates and selects a GPU pod, a privileged
// pod, a GPU claim, and (validation only) a write of a device annotation.
TEST_F(DeployTest, WebhooksCarryTheirMatchConditions) {
  absl::StatusOr<topology::Policy> policy =
      common::LoadPolicy(ReadFile(Source("manifests/base/policy.yaml")));
  ASSERT_TRUE(policy.ok()) << policy.status();
  struct Hook {
    const char* kind;
    webhook::ReviewKind review;
  };
  struct Probe {
    const char* name;
    const char* kind;
    const char* object;
    bool validate, mutate;      // selected by each webhook
    const char* old = nullptr;  // oldObject of an UPDATE; CREATE (oldObject null) when null
  };
  const std::vector<Probe> probes = {
      {"CPU-only pod", "Pod",
       R"({"metadata":{"name":"web"},"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1"}}}]}})",
       false, false},
      {"GPU pod", "Pod",
       R"({"metadata":{"name":"g"},"spec":{"containers":[{"name":"a","resources":{"limits":{"nvidia.com/mig-1g.10gb":"1"}}}]}})",
       true, true},
      {"privileged pod", "Pod",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","securityContext":{"privileged":true}}]}})",
       true, false},
      {"GPU claim", "ResourceClaim",
       R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}})",
       true, true},
      {"CPU pod given a devices annotation", "Pod",
       R"({"metadata":{"name":"web","annotations":{"gpu-tenancy.io/devices":"{}"}},"spec":{"containers":[{"name":"a"}]}})",
       true, false, R"({"metadata":{"name":"web"},"spec":{"containers":[{"name":"a"}]}})"},
      {"Node registered", "Node", R"({"metadata":{"name":"gpu-a"}})", false, false},
      {"Node relabelled", "Node",
       R"({"metadata":{"name":"gpu-a","labels":{"a":"b"},"annotations":{"gpu-tenancy.io/gpu-devices":"[]"}}})",
       false, false,
       R"({"metadata":{"name":"gpu-a","annotations":{"gpu-tenancy.io/gpu-devices":"[]"}}})"},
      {"Node gpu-devices changed", "Node",
       R"({"metadata":{"name":"gpu-a","annotations":{"gpu-tenancy.io/gpu-devices":"[\"GPU-1\"]"}}})",
       true, false,
       R"({"metadata":{"name":"gpu-a","annotations":{"gpu-tenancy.io/gpu-devices":"[]"}}})"},
      {"Node gpu-devices removed", "Node", R"({"metadata":{"name":"gpu-a"}})", true, false,
       R"({"metadata":{"name":"gpu-a","annotations":{"gpu-tenancy.io/gpu-devices":"[]"}}})"},
  };
  for (const char* render : {"base", "cert-manager", "static-certs"}) {
    for (const Hook& hook : {Hook{"ValidatingWebhookConfiguration", webhook::ReviewKind::kValidate},
                             Hook{"MutatingWebhookConfiguration", webhook::ReviewKind::kMutate}}) {
      SCOPED_TRACE(absl::StrCat(render, " ", hook.kind));
      const Value* config = Get(render).Find(hook.kind, "gpu-tenancy");
      ASSERT_NE(config, nullptr);
      const Value* conditions = At(config, "/webhooks/0/matchConditions");
      ASSERT_TRUE(conditions && conditions->IsArray() && conditions->Size() == 1);
      const webhook::MatchCondition want = webhook::WebhookMatchCondition(*policy, hook.review);
      EXPECT_EQ(Str(config, "/webhooks/0/matchConditions/0/name"), want.name);
      const std::string expression = Str(config, "/webhooks/0/matchConditions/0/expression");
      EXPECT_EQ(expression, want.expression);
      cel::CelCondition condition =
          cel::CelCondition::Compile(expression, {std::begin(webhook::kMatchConditionVariables),
                                                  std::end(webhook::kMatchConditionVariables)});
      ASSERT_TRUE(condition.supported()) << condition.unsupported_reason();
      for (const Probe& p : probes) {
        SCOPED_TRACE(p.name);
        absl::StatusOr<rapidjson::Document> object = common::ParseJson(p.object);
        ASSERT_TRUE(object.ok()) << object.status();
        const cel::CelData object_data = webhook_test::ToCelData(*object);
        cel::CelData old_data = cel::CelData::Null();
        if (p.old) {
          absl::StatusOr<rapidjson::Document> old = common::ParseJson(p.old);
          ASSERT_TRUE(old.ok()) << old.status();
          old_data = webhook_test::ToCelData(*old);
        }
        const cel::CelData request = cel::CelData::Map(
            {{"operation", cel::CelData::String(p.old ? "UPDATE" : "CREATE")},
             {"kind", cel::CelData::Map({{"kind", cel::CelData::String(p.kind)}})}});
        cel::CelResult r = condition.Evaluate(
            {{"object", &object_data}, {"oldObject", &old_data}, {"request", &request}});
        const bool want_selected =
            hook.review == webhook::ReviewKind::kValidate ? p.validate : p.mutate;
        EXPECT_EQ(r.outcome, want_selected ? cel::CelOutcome::kTrue : cel::CelOutcome::kFalse)
            << r.detail;
      }
    }
  }
  // Ephemeral containers (kubectl debug) reach validation through their subresource.
  const Value* validate = Get("base").Find("ValidatingWebhookConfiguration", "gpu-tenancy");
  ASSERT_NE(validate, nullptr);
  bool ephemeral = false;
  for (const Value& rule : At(validate, "/webhooks/0/rules")->GetArray()) {
    ephemeral |= absl::c_linear_search(Strings(&rule, "/resources"), "pods/ephemeralcontainers");
  }
  EXPECT_TRUE(ephemeral);
}

}  // namespace
