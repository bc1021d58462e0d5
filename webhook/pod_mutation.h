// The mutating webhook's changes to a GPU Pod (PodView::HasGpuRequests; other pods are left
// alone, and the webhook's matchConditions do not send them), as JSON Patch operations:
//   - labels gpu-tenancy.io/tenant and gpu-tenancy.io/tier (the resolved tenant; a user-set
//     value is overwritten);
//   - the GPU memory annotation normalised to whole MiB ("16Gi" -> "16384Mi"), from what the
//     user wrote or from the memory resources, whichever is larger (what the extender counts);
//   - for pods that request GPU resources or use claims for NVIDIA GPUs: a required node affinity
//   `In` the pools the tier may
//     use (policy.pool_label over the names in policy.pools), merged into every existing
//     nodeSelectorTerm (terms are ORed, so each needs it) and never replacing user terms; and
//     tolerations for those pools' taints, skipping taints the pod already tolerates.
// Idempotent: mutating the result again yields no operations. Pods of unknown tenants that the
// policy denies get nothing (the validating webhook refuses their GPU requests). On UPDATE only
// metadata is touched: affinity and tolerations are immutable or append-only there.
#ifndef GPU_TENANCY_WEBHOOK_POD_MUTATION_H_
#define GPU_TENANCY_WEBHOOK_POD_MUTATION_H_

#include <string>
#include <vector>

#include "common/json.h"
#include "topology/policy.h"
#include "webhook/json_patch.h"
#include "webhook/pod_rules.h"

namespace webhook {

// Appends operations to `patch`; names what changed ("labels", "gpu-memory", "affinity",
// "tolerations") in `changed` for the audit annotation.
void MutatePod(const common::JsonValue& pod, const PodView& view, const topology::Policy& policy,
               const topology::TenantRef& tenant, bool update, JsonPatch& patch,
               std::vector<std::string>& changed);

// Pool names (policy order) whose mode the tier allows.
std::vector<std::string> AllowedPools(const topology::Policy& policy, const topology::Tier& tier);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_POD_MUTATION_H_
