// The admission webhook configurations in the renders: fail closed, never block the control
// plane.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::kService;
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
  const std::vector<Ns> namespaces = {
      {"kube-system", {}, false},
      {kNamespace, {}, false},
      {"acme", {}, true},
      {"research", {{"gpu-tenancy.io/tenant", "bank"}}, true},
      {"legacy", {{"gpu-tenancy.io/webhook", "disabled"}}, false},
      {"kube-public", {}, true},
  };
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

}  // namespace
