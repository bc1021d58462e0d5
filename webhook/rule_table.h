// The validating webhook's decisions, one row each: every rule it can deny with, for every kind
// it judges, in the order violations are reported. Nothing is decided beside the table; review.cc
// only builds a row's context (the object read once into a typed view, the tenant, who asks,
// what the cluster holds) and runs the rows for the object's kind. The same rows serve any other
// caller that can build the context. docs/policy.md and docs/admission.md list the rule ids, and
// test/webhook/rule_table_test.cc holds them to this table.
//
//   PodRuleContext ctx{pod, nullptr, policy, tenant, ns};
//   Findings f = RunPodRules(ctx, RulePhase::kCreate);   // f.violations.front().rule:
//   "tier-shared"
#ifndef GPU_TENANCY_WEBHOOK_RULE_TABLE_H_
#define GPU_TENANCY_WEBHOOK_RULE_TABLE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/json.h"
#include "topology/dra/model.h"
#include "topology/policy.h"
#include "topology/quota.h"
#include "topology/snapshot.h"
#include "webhook/claim_quota.h"
#include "webhook/claim_rules.h"
#include "webhook/device_annotation_rules.h"
#include "webhook/pod_rules.h"
#include "webhook/verdict.h"

namespace webhook {

struct Findings {
  std::vector<Violation> violations;
  std::vector<std::string> warnings;
};

// When a pod row runs: on CREATE; on UPDATE (it reads a field that may change, such as the GPU
// memory annotation or the device annotation); on the pods/ephemeralcontainers subresource
// (over the ephemeral containers alone); and after admission, on a bound pod (the contract
// guard, guard/contract.h), for the rows whose question still means something once a pod runs.
enum RulePhase : unsigned { kOnCreate = 1, kOnUpdate = 2, kOnEphemeral = 4, kAfterAdmission = 8 };

struct PodRuleContext {
  const PodView& pod;
  const PodView* old_pod = nullptr;  // UPDATE only
  const topology::Policy& policy;
  const topology::TenantRef& tenant;
  absl::string_view namespace_name;
  const topology::DraState* dra = nullptr;  // the cluster's DRA objects; null when not known
  // The cluster as the service sees it (preset-node); null when not known (`check`).
  const topology::ClusterSnapshot* snapshot = nullptr;
  // Who asks, and the device annotation the request changes (device-annotation); null when not
  // known.
  const UserIdentity* user = nullptr;
  const DeviceAnnotationChange* devices_annotation = nullptr;
  // What the tenant holds now (tenant-quota); null when not known: quotas are then left to the
  // scheduler extender.
  const topology::QuotaUsage* tenant_held = nullptr;
};

struct ClaimRuleContext {
  const ClaimView& claim;
  const common::JsonValue& object;  // the claim or template as sent
  const topology::Policy& policy;
  const topology::TenantRef& tenant;
  absl::string_view namespace_name;
  const topology::DraState* dra = nullptr;
  // tenant-quota for a ResourceClaim: the snapshot, how its usage record is reached, and
  // whether the request is a dry run (which writes nothing). Null snapshot: not checked.
  const topology::ClusterSnapshot* snapshot = nullptr;
  const ClaimQuotaContext* claim_quota = nullptr;
  bool dry_run = false;
};

struct NodeRuleContext {
  const topology::Policy& policy;
  const UserIdentity& user;
  const DeviceAnnotationChange& devices_annotation;
};

using PodRuleFn = void (*)(const PodRuleContext& ctx, std::vector<Violation>& out);
// Advice that does not block the pod, CREATE only.
using PodWarningFn = void (*)(const PodRuleContext& ctx, std::vector<std::string>& out);
using ClaimRuleFn = void (*)(const ClaimRuleContext& ctx, Findings& out);
using NodeRuleFn = void (*)(const NodeRuleContext& ctx, Findings& out);

struct PodRule {
  absl::string_view id;
  unsigned phases = kOnCreate | kOnEphemeral;
  PodRuleFn check = nullptr;
  PodWarningFn warn = nullptr;
};

struct ClaimRule {
  absl::string_view id;
  // More ids the row denies with, for rows that judge one thing two ways ("claim-mig-profile"
  // beside "claim-device-class").
  absl::string_view also = "";
  // Runs only when no row before it denied: its check has a side effect (a quota reservation)
  // that a denied claim must not leave behind.
  bool only_if_allowed = false;
  ClaimRuleFn check = nullptr;
};

struct NodeRule {
  absl::string_view id;
  NodeRuleFn check = nullptr;
};

absl::Span<const PodRule> PodRules();
absl::Span<const ClaimRule> ClaimRules();  // ResourceClaims and templates, CREATE
absl::Span<const NodeRule> NodeRules();    // Nodes, CREATE and UPDATE
// Every id any row denies with, each once, pods' first.
std::vector<std::string> RuleIds();

// Runs the rows for `phase`; warnings only for kOnCreate.
Findings RunPodRules(const PodRuleContext& ctx, RulePhase phase);
Findings RunClaimRules(const ClaimRuleContext& ctx);
Findings RunNodeRules(const NodeRuleContext& ctx);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_RULE_TABLE_H_
