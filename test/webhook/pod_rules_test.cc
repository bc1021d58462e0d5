// The pod rule table as a whole (pod_rules.cc), through the validating webhook's AdmissionReview
// path: several violations at once, UPDATE, the ephemeral containers subresource, the rule ids.
#include "webhook/pod_rules.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/webhook/pod_rules_test_util.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace {

using pod_rules_test::Pod;
using pod_rules_test::RunCases;
using webhook::ReviewKind;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

TEST(PodRulesTest, InvalidGpuRequestAndSeveralViolations) {
  RunCases({
      {"unreadable memory annotation",
       "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: lots}"),
       false,
       "invalid-gpu-request",
       "",
       {"[invalid-gpu-request] pod research/p: annotation gpu-tenancy.io/gpu-memory must be a "
        "non-negative quantity such as 20Gi, got \"lots\""}},
      {"three rules at once: the first, and the count", "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: engine\n"
       "    resources: {limits: {nvidia.com/gpu.shared: 2}}\n"
       "    securityContext: {privileged: true}\n",
       false, "tier-shared",
       "[tier-shared] container \"engine\" requests nvidia.com/gpu.shared, but tenant \"acme\" "
       "(tier untrusted) may use only exclusive, mig; request a MIG slice such as "
       "nvidia.com/mig-1g.10gb (and 2 more)"},
  });
}

// UPDATE: rules on immutable fields do not deny; the memory annotation is judged when it changes.
TEST(PodRulesTest, Update) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, ns, old_yaml, new_yaml;
    bool allowed;
    std::string rule;
  } cases[] = {
      {"label change on a pod that breaks today's rules", "acme",
       Pod("{nvidia.com/gpu.shared: 2}") + "    securityContext: {privileged: true}\n",
       Pod("{nvidia.com/gpu.shared: 2}") + "    securityContext: {privileged: true}\n", true, ""},
      {"memory annotation raised over the limit", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"), false,
       "tenant-limits"},
      {"memory annotation over the limit, unchanged", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"), true, ""},
      {"memory annotation made unreadable", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8 GB}"), false,
       "invalid-gpu-request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document old_pod = Yaml(c.old_yaml);
    rapidjson::Document new_pod = Yaml(c.new_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    o.operation = "UPDATE";
    o.old_object = &old_pod;
    Reply r = RunReview(new_pod, ReviewKind::kValidate, policy, o);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed) << r.message;
    if (!c.allowed) {
      EXPECT_EQ(r.message.rfind(absl::StrCat("[", c.rule, "]"), 0), 0u) << r.message;
    }
    EXPECT_TRUE(r.warnings.empty());
  }
}

// kubectl debug adds ephemeral containers through the pods/ephemeralcontainers subresource.
TEST(PodRulesTest, EphemeralContainersSubresource) {
  topology::Policy policy = TestPolicy();
  const std::string pod_yaml =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/gpu.shared: 4}}}\n"
      "  ephemeralContainers:\n  - name: debugger\n    securityContext: {privileged: true}\n";
  struct Case {
    std::string name, ns, sub_resource;
    bool allowed;
    std::string message;
  } cases[] = {
      {"privileged debug container", "acme", "ephemeralcontainers", false,
       "[device-access] ephemeral container \"debugger\" is privileged, but tenant \"acme\" (tier "
       "untrusted) has no device access; remove securityContext.privileged"},
      {"privileged debug container, platform tier", "gpu-ops", "ephemeralcontainers", true, ""},
      {"privileged debug container, unknown tenant", "nowhere", "ephemeralcontainers", false,
       "[unknown-tenant] namespace \"nowhere\" belongs to no tenant and the policy denies GPUs to "
       "unknown tenants, but ephemeral container \"debugger\" is privileged; ask the GPU platform "
       "team to add the namespace to a tenant"},
      {"status subresource is not ours", "acme", "status", true, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod = Yaml(pod_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    o.operation = "UPDATE";
    o.old_object = &pod;
    o.sub_resource = c.sub_resource;
    Reply r = RunReview(pod, ReviewKind::kValidate, policy, o);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed);
    EXPECT_EQ(r.message, c.message);
    Reply m = RunReview(pod, ReviewKind::kMutate, policy, o);
    EXPECT_TRUE(m.allowed);
    EXPECT_FALSE(m.has_patch) << "subresources are not mutated";
  }
}

}  // namespace
