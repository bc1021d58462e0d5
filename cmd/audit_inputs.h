// What `gpu-tenancy audit` reads besides the model (views/audit.h's AuditInputs): the pods' and
// claims' escape hatches (the webhook's device-access rule over their specs) and whether the
// service's webhook configurations exist, from a cluster file's items or listed from
// kube-apiserver. Live, each part that cannot be read (RBAC, a transport error) says why, so the
// checklist names the reason instead of passing or guessing.
#ifndef GPU_TENANCY_CMD_AUDIT_INPUTS_H_
#define GPU_TENANCY_CMD_AUDIT_INPUTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/json.h"
#include "guard/contract.h"
#include "kube/api.h"
#include "topology/policy.h"
#include "views/audit.h"

namespace cmd {

// The names of the webhooks `gpu-tenancy webhook-config` makes.
inline constexpr absl::string_view kValidatingWebhookName = "validate.gpu-tenancy.io";
inline constexpr absl::string_view kMutatingWebhookName = "mutate.gpu-tenancy.io";

// Appends the escape hatches of one object of `kind` ("Pod", "ResourceClaim",
// "ResourceClaimTemplate"; anything else has none). API lists carry no kind on their items, so
// it is passed in.
void AddEscapeHatches(const common::JsonValue& item, absl::string_view kind,
                      const topology::Policy& policy, std::vector<views::EscapeHatch>& out);

// Whether some configuration among `configs` (validating or mutating webhook configurations)
// holds a webhook named `webhook`.
bool HoldsWebhook(const std::vector<const common::JsonValue*>& configs, absl::string_view webhook);

// The same inputs from a cluster file's items (kubectl get ... -o json): escape hatches always;
// the webhooks when the file lists configurations of either kind at all.
void FileAuditInputs(const common::JsonValue& items, const topology::Policy& policy,
                     views::AuditInputs& in);

// The contract guard's violations as the audit's findings.
std::vector<views::ContractFinding> ContractFindings(
    const std::vector<guard::ContractViolation>& violations);

// Lists pods and claims (page by page) and the webhook configurations from `api`.
void LiveAuditInputs(kube::Api& api, const topology::Policy& policy, views::AuditInputs& in);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_AUDIT_INPUTS_H_
