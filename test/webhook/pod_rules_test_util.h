// Helpers shared by the pod rule tests (tier_rules_test.cc, device_access_rules_test.cc,
// tenant_limit_rules_test.cc, pod_rules_test.cc): a one-container pod in YAML, and a table of
// validating reviews with the verdict, rule, message and warnings each must produce.
#ifndef GPU_TENANCY_TEST_WEBHOOK_POD_RULES_TEST_UTIL_H_
#define GPU_TENANCY_TEST_WEBHOOK_POD_RULES_TEST_UTIL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace pod_rules_test {

// A one-container pod "p" whose container "main" has `limits` (a YAML flow map). `extra_spec`
// lines (indented 2) go before the containers, so container fields (indented 4) may be appended.
inline std::string Pod(const std::string& limits, const std::string& extra_spec = "",
                       const std::string& annotations = "{}") {
  return absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: ", annotations, "}\nspec:\n",
      extra_spec,
      "  containers:\n  - name: main\n    image: cuda\n    resources: {limits: ", limits, "}\n");
}

inline constexpr char kTimeSliceWarning[] =
    "no memory isolation on time-sliced GPUs; set gpu-tenancy.io/gpu-memory so the scheduler "
    "keeps headroom";

struct Case {
  std::string name;
  std::string ns;
  std::string pod_yaml;
  bool allowed;
  std::string rule;                        // denying rule id
  std::string message = "";                // exact status.message, when given
  std::vector<std::string> contains = {};  // substrings of status.message
  std::vector<std::string> warnings = {};  // exact warnings
  std::function<void(topology::Policy&)> tweak = nullptr;
};

inline void RunCases(const std::vector<Case>& cases) {
  using webhook::ReviewKind;
  using webhook_test::Reply;
  using webhook_test::ReviewOptions;
  using webhook_test::TestPolicy;
  using webhook_test::Yaml;
  topology::ClusterSnapshot snapshot = webhook_test::SnapshotWithNamespace(
      "bank-prod", {{"gpu-tenancy.io/tenant", "bank"}, {"team", "payments"}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    topology::Policy policy = TestPolicy();
    if (c.tweak) c.tweak(policy);
    rapidjson::Document pod = Yaml(c.pod_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    webhook::ReviewOutcome out =
        webhook::Review(webhook_test::MakeReview(pod, o), ReviewKind::kValidate, policy, snapshot);
    Reply r = webhook_test::Decode(out);
    ASSERT_EQ(r.http_status, 200) << out.body;
    EXPECT_EQ(r.allowed, c.allowed) << out.body;
    EXPECT_EQ(out.allowed, c.allowed);
    EXPECT_EQ(out.rule, c.rule);
    if (!c.message.empty()) {
      EXPECT_EQ(r.message, c.message);
    }
    for (const std::string& part : c.contains) {
      EXPECT_NE(r.message.find(part), std::string::npos) << "want \"" << part << "\" in\n"
                                                         << r.message;
    }
    if (!c.allowed) {
      EXPECT_EQ(r.message.rfind(absl::StrCat("[", c.rule, "] "), 0), 0u) << r.message;
      EXPECT_EQ(r.message.find('\n'), std::string::npos) << "one line";
    }
    EXPECT_EQ(r.warnings, c.warnings);
  }
}

}  // namespace pod_rules_test

#endif  // GPU_TENANCY_TEST_WEBHOOK_POD_RULES_TEST_UTIL_H_
