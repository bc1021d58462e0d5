// The check serve runs against its served webhook configurations
// (webhook/match_conditions_check.h): equal, missing, different and extra conditions, and the
// configuration JSON as kube-apiserver returns it.
#include "webhook/match_conditions_check.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace webhook {
namespace {

TEST(CheckMatchConditions, Table) {
  const std::vector<MatchCondition> want = {{"gpu-relevant", "a ||\nb"}};
  struct Row {
    const char* name;
    std::vector<MatchCondition> served;
    bool current;
    std::string problem;
  };
  const Row rows[] = {
      {"equal", {{"gpu-relevant", "a ||\nb"}}, true, ""},
      // What `kubectl apply` of the YAML block scalar stores: a final newline.
      {"equal but for blank lines and trailing space",
       {{"gpu-relevant", "a || \n\nb\n"}},
       true,
       ""},
      {"missing (none served)", {}, false, "condition \"gpu-relevant\" is missing"},
      {"missing (other name)",
       {{"old-name", "a ||\nb"}},
       false,
       "condition \"gpu-relevant\" is missing"},
      {"different",
       {{"gpu-relevant", "a ||\nc"}},
       false,
       "condition \"gpu-relevant\" differs from the policy's"},
      {"different inside a line",
       {{"gpu-relevant", "a||\nb"}},
       false,
       "condition \"gpu-relevant\" differs from the policy's"},
      {"extra",
       {{"gpu-relevant", "a ||\nb"}, {"mine", "true"}},
       false,
       "condition \"mine\" is not the policy's"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ConditionsCheck c = CheckMatchConditions(row.served, want);
    EXPECT_EQ(c.current, row.current);
    EXPECT_EQ(c.problem, row.problem);
  }
}

TEST(ServedMatchConditions, ReadsTheNamedWebhook) {
  const std::string config = absl::StrCat(
      R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",)",
      R"("metadata":{"name":"gpu-tenancy"},"webhooks":[{"name":"other.example.com",)",
      R"("matchConditions":[{"name":"x","expression":"false"}]},{"name":")", kValidateWebhookName,
      R"(","matchConditions":[{"name":"gpu-relevant","expression":"a ||\nb\n"}]}]})");
  absl::StatusOr<std::vector<MatchCondition>> got =
      ServedMatchConditions(config, kValidateWebhookName);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].name, "gpu-relevant");
  EXPECT_EQ((*got)[0].expression, "a ||\nb\n");
}

TEST(ServedMatchConditions, NoneIsEmpty) {
  absl::StatusOr<std::vector<MatchCondition>> got = ServedMatchConditions(
      R"({"webhooks":[{"name":"mutate.gpu-tenancy.io"}]})", kMutateWebhookName);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

TEST(ServedMatchConditions, BadInputIsAnError) {
  struct Row {
    const char* name;
    const char* json;
    absl::StatusCode code;
    const char* message;
  };
  const Row rows[] = {
      {"not JSON", "{", absl::StatusCode::kInvalidArgument, ""},
      {"not an object", "[]", absl::StatusCode::kInvalidArgument, "expected a JSON object"},
      {"no webhooks", "{}", absl::StatusCode::kNotFound, "no webhook named mutate.gpu-tenancy.io"},
      {"other webhook only", R"({"webhooks":[{"name":"validate.gpu-tenancy.io"}]})",
       absl::StatusCode::kNotFound, "no webhook named mutate.gpu-tenancy.io"},
      {"conditions not a list",
       R"({"webhooks":[{"name":"mutate.gpu-tenancy.io","matchConditions":{}}]})",
       absl::StatusCode::kInvalidArgument, "webhooks[0].matchConditions"},
      {"expression missing",
       R"({"webhooks":[{"name":"mutate.gpu-tenancy.io","matchConditions":[{"name":"a"}]}]})",
       absl::StatusCode::kInvalidArgument, "webhooks[0].matchConditions[0].expression: missing"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<std::vector<MatchCondition>> got =
        ServedMatchConditions(row.json, kMutateWebhookName);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), row.code);
    EXPECT_NE(got.status().message().find(row.message), std::string::npos) << got.status();
  }
}

}  // namespace
}  // namespace webhook
