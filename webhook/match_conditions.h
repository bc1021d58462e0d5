// The matchConditions of the two webhook configurations: CEL that kube-apiserver evaluates
// before calling a webhook, so that a request the webhook could neither deny, warn about nor
// change is admitted without the call. Both webhooks fail closed; with these conditions an
// outage of the service blocks only the objects it guards (GPU pods, pods reaching for
// devices, GPU claims), never a CPU-only Deployment.
//
// The conditions are built from the same tables and policy fields the rules read (the device
// capabilities, host paths and environment variables of device-access, the pool label, the
// memory annotation, the policy's resource names, the tenants' PriorityClasses, the NVIDIA
// device classes, the node agent's device annotations), one clause per thing a rule or the
// mutation looks at, so a rule's inputs and its condition change together. The
// device-annotation rule judges only a change of its annotation, so its clauses compare
// `object` with `oldObject` (null on CREATE): a Node is sent only when its gpu-devices
// annotation is added, changed or removed, never for the kubelet's and controllers' ordinary
// updates. `gpu-tenancy webhook-config` prints the configurations;
// manifests/base/webhooks.yaml is its output.
//
//   MatchCondition c = WebhookMatchCondition(policy, ReviewKind::kValidate);
//   // c.expression: "(request.kind.kind == 'Pod' && has(object.spec) && (...)) || ..."
//
// The expressions stay inside the CEL that cel/data.h evaluates, so tests evaluate
// the very text kube-apiserver will: every object the webhook acts on must make it true, and
// no well-formed object may make it an error (an error counts as a failed call, which would
// block the request again).
#ifndef GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_H_
#define GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_H_

#include <set>
#include <string>
#include <vector>

#include "topology/policy.h"
#include "webhook/review.h"

namespace webhook {

// Kinds the webhooks see, each with its own clauses. Nodes reach validation only.
enum class MatchKind { kPod, kResourceClaim, kResourceClaimTemplate, kNode };

// One thing a rule or the mutation looks at, as CEL over `object`.
struct MatchClause {
  std::string name;        // "pod-privileged"
  std::string covers;      // what depends on it: "device-access, unknown-tenant"
  std::string expression;  // true when the object has it
};

// The clauses for one kind and webhook, in a fixed order. The mutating webhook needs fewer:
// it changes only GPU pods and NVIDIA claims, and no Node (none for kNode).
std::vector<MatchClause> MatchClauses(const topology::Policy& policy, ReviewKind webhook,
                                      MatchKind kind);

struct MatchCondition {
  std::string name;
  std::string expression;
};

// The one condition of a webhook (kube-apiserver ANDs a webhook's conditions, so the clauses
// are ORed inside one): per kind, that kind's clauses, each after a `//` comment naming what
// it covers; a kind without clauses for this webhook is left out. `without` leaves clauses out
// by name; tests use it to prove each one is needed.
MatchCondition WebhookMatchCondition(const topology::Policy& policy, ReviewKind webhook,
                                     const std::set<std::string>& without = {});

// The variables kube-apiserver gives a webhook's matchConditions that these use.
inline constexpr const char* kMatchConditionVariables[] = {"object", "oldObject", "request"};

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_MATCH_CONDITIONS_H_
