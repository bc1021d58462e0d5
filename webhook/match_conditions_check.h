// Whether a served webhook configuration still carries the matchConditions the running policy
// makes (webhook/match_conditions.h). The conditions depend on the policy; an operator who
// changes it and does not apply `gpu-tenancy webhook-config` again leaves conditions that skip
// requests the rules now act on. `serve` fetches its two configurations and reports the result
// (cmd/webhook_guard.h); this part is pure.
//
//   absl::StatusOr<std::vector<MatchCondition>> served =
//       ServedMatchConditions(config_json, kValidateWebhookName);
//   ConditionsCheck c = CheckMatchConditions(*served, {WebhookMatchCondition(policy, kind)});
//   if (!c.current) ... c.problem: "condition \"gpu-relevant\" differs from the policy's" ...
#ifndef GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_CHECK_H_
#define GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "webhook/match_conditions.h"

namespace webhook {

// The entries of webhooks[] in manifests/base/webhooks.yaml (cmd/webhook_config.cc).
inline constexpr char kValidateWebhookName[] = "validate.gpu-tenancy.io";
inline constexpr char kMutateWebhookName[] = "mutate.gpu-tenancy.io";

struct ConditionsCheck {
  bool current = false;
  std::string problem;  // empty when current; else what differs, one sentence
};

// `served` against `want`, by name. Expressions are compared line by line, ignoring blank
// lines and trailing spaces: the YAML block scalar kubectl applies ends in a newline and the
// printer drops blank lines, neither of which changes what CEL evaluates. Not current when a
// wanted condition is missing or differs, or when an extra one is served (kube-apiserver ANDs
// a webhook's conditions, so any extra one can only skip more requests).
ConditionsCheck CheckMatchConditions(const std::vector<MatchCondition>& served,
                                     const std::vector<MatchCondition>& want);

// The matchConditions of webhook `webhook_name` in a Validating- or
// MutatingWebhookConfiguration as JSON (a GET's body). Empty when the webhook has none.
// InvalidArgument for malformed JSON or conditions; NotFound when no webhook has that name.
[[nodiscard]] absl::StatusOr<std::vector<MatchCondition>> ServedMatchConditions(
    absl::string_view config_json, absl::string_view webhook_name);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_CHECK_H_
