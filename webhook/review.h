// The admission webhook: an admission.k8s.io/v1 AdmissionReview in, the reply out. Pure but for
// one side effect it is handed: a DRA claim's quota reservation (claim_quota.h), skipped for
// dryRun requests, which otherwise get exactly the verdict a real request would. server/ routes
// POST /webhook/validate and /webhook/mutate here:
//
//   webhook::ReviewOutcome out = webhook::Review(body, webhook::ReviewKind::kValidate, policy,
//                                                snapshot);
//   reply(out.http_status, out.body);
//
// What is handled: CREATE and UPDATE of core/v1 Pods (pod_rules.h, pod_mutation.h) and of
// resource.k8s.io ResourceClaims / ResourceClaimTemplates (claim_rules.h); for the validating
// webhook also the pods/ephemeralcontainers subresource (device access of debug containers)
// and core/v1 Nodes, whose device annotation, like a pod's, only the node agent may write
// (device_annotation_rules.h; request.userInfo says who asks).
// Everything else (DELETE, CONNECT, other kinds, other subresources) is allowed unchanged.
//
// Reply: apiVersion, kind, response.uid copied from the request, response.allowed; a denial
// carries status {code: 403, reason: Forbidden, message: one line starting with the rule id};
// warnings; auditAnnotations (tenant, tier, and the denying rule or what was mutated). Only the
// mutating webhook ever returns patch (standard base64 of a JSON Patch) with patchType
// "JSONPatch", and only when something changes. The mutating webhook never denies.
// A malformed review (bad JSON, no request, no uid, wrong apiVersion/kind, an object that is not
// an object or not a readable Pod) is HTTP 400 with {"error": "..."} naming what was wrong.
//
// Thread-safe: reads only its arguments.
#ifndef GPU_TENANCY_WEBHOOK_REVIEW_H_
#define GPU_TENANCY_WEBHOOK_REVIEW_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/quota.h"
#include "topology/snapshot.h"
#include "webhook/claim_quota.h"
#include "webhook/device_annotation_rules.h"
#include "webhook/json_patch.h"

namespace webhook {

enum class ReviewKind { kValidate, kMutate };

inline constexpr absl::string_view kValidatingWebhookName = "validate.gpu-tenancy.io";
inline constexpr absl::string_view kMutatingWebhookName = "mutate.gpu-tenancy.io";
inline constexpr absl::string_view kAdmissionApiVersion = "admission.k8s.io/v1";

struct ReviewOutcome {
  int http_status = 200;  // 400 for a malformed review (body is {"error":"..."})
  std::string body;       // the AdmissionReview reply JSON (or the error JSON)
  bool allowed = true;
  std::string rule;  // id of the denying rule, empty when allowed
  // Extra detail for logs and metrics.
  std::string message;  // the denial message, or the 400 error text
  std::vector<std::string> warnings;
  std::string patch_json;  // the JSON Patch (not base64), empty when none
  // Who asked, for the audit log (set when http_status is 200).
  std::string kind;  // "Pod", "ResourceClaim"...
  std::string namespace_name;
  std::string name;    // metadata.name, else generateName
  std::string tenant;  // as the namespace resolves
  std::string tier;    // empty when the tenant is denied GPUs
};

class TenantSelectorPlans;  // claim_selectors.h

// `claim_quota`: how a ResourceClaim CREATE reserves its tenant's quota (claim_quota.h); the
// default counts against the snapshot alone. Its record update is the only side effect, and a
// dry run (request.dryRun) skips it. `selector_plans`: the tenants' claim selectors worked out
// for `policy` (a plan for another policy is not used); null: planned per claim.
ReviewOutcome Review(absl::string_view body, ReviewKind kind, const topology::Policy& policy,
                     const topology::ClusterSnapshot& snapshot /* namespace labels */,
                     const ClaimQuotaContext& claim_quota = {},
                     const TenantSelectorPlans* selector_plans = nullptr);

// One object reviewed without the AdmissionReview envelope (used by Review and by
// `gpu-tenancy check`).
struct ObjectRequest {
  const common::JsonValue* object = nullptr;      // required
  const common::JsonValue* old_object = nullptr;  // UPDATE
  std::string group;                              // "" for core
  std::string version;                            // "v1"
  std::string kind;                               // "Pod"
  std::string operation = "CREATE";
  std::string sub_resource;
  std::string namespace_name;
  // What the object's tenant holds now (topology::TenantUsage), for its quota; null when not
  // known (then quotas are left to the scheduler extender).
  const topology::QuotaUsage* tenant_held = nullptr;
  // The cluster's DRA claims and templates, so a pod's claims for NVIDIA GPUs make it a GPU
  // pod; null when not known.
  const topology::DraState* dra = nullptr;
  // The whole cluster as the service sees it (`dra` is its DRA state), for the rules that ask
  // the extender's question at admission (preset-node); null when not known.
  const topology::ClusterSnapshot* snapshot = nullptr;
  // request.userInfo: the device annotations' rule reads who asks. Empty when not known
  // (`gpu-tenancy check`), which no rule takes for the node agent.
  UserIdentity user;
  // A ResourceClaim CREATE's quota (tenant-quota): how its usage record is reached, and whether
  // the request is a dry run. Null: counted against `snapshot` alone; without a snapshot, not
  // checked.
  const ClaimQuotaContext* claim_quota = nullptr;
  bool dry_run = false;
  // The selectors a claim CREATE gets, planned for the policy ahead; null: planned here.
  const TenantSelectorPlans* selector_plans = nullptr;
};

struct ObjectOutcome {
  bool handled = false;  // false: not a kind/operation the webhook looks at; allowed unchanged
  bool allowed = true;
  std::string rule;
  std::string message;
  std::vector<std::string> warnings;
  std::map<std::string, std::string> audit_annotations;
  JsonPatch patch;  // mutate only
};

// InvalidArgument (naming the JSON path under "request.object") when a handled object cannot be
// read; callers turn it into HTTP 400 (Review) or a usage error (check).
[[nodiscard]] absl::StatusOr<ObjectOutcome> ReviewObject(const ObjectRequest& request,
                                                         ReviewKind kind,
                                                         const topology::Policy& policy,
                                                         const topology::Labels& namespace_labels);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_REVIEW_H_
