// What a DRA claim can take from its tenant's quota, counted before it is allocated: the most
// each request could be given under its device class's selectors and its own (which carry the
// tenant limits the webhook injected), by the devices the cluster publishes now. The quota's
// items are checked one by one, so each item is bounded on its own: a request for one device
// that matches both a whole GPU and a 3g.40gb MIG device counts 1 GPU and 1 3g.40gb instance.
// Pure: no I/O.
//
//   ClaimQuotaCount c = CountClaimQuota(claim, snapshot.dra());
//   CheckQuota(tenant.quota, held, c.usage); ... c.worst_case says which requests were guessed
#ifndef GPU_TENANCY_TOPOLOGY_DRA_CLAIM_QUOTA_H_
#define GPU_TENANCY_TOPOLOGY_DRA_CLAIM_QUOTA_H_

#include <string>
#include <vector>

#include "topology/dra/model.h"
#include "topology/quota.h"

namespace topology {

struct ClaimQuotaCount {
  // At most: whole GPUs (type "gpu"), MIG instances by profile and their compute slices (type
  // "mig"), and GPU memory of devices that declare capacity `memory`; for a multi-allocatable
  // device, one shared replica and the memory a share for the request would consume (its
  // capacity ask rounded by the requestPolicy, else the policy's default, else the whole
  // device's; topology/dra/capacity.h). Devices that cannot serve the request's capacity asks
  // count nothing. Never gpu_pods: a claim is not a pod.
  QuotaUsage usage;
  // One line per request whose count is a worst case rather than what its selectors allow:
  // allocationMode All (every matching device of the node with the most), a selector outside
  // the evaluated CEL (its undecided devices counted as matching), or a class that does not
  // exist (every device counted as matching). Empty when every request was bounded.
  std::vector<std::string> worst_case;
};

// ExactCount n: n times the most one matching device adds to each item. firstAvailable: the
// largest alternative, per item. Requests of one claim add up. A request no device matches
// counts nothing.
ClaimQuotaCount CountClaimQuota(const DraClaim& claim, const DraState& dra);

// What an allocated claim's devices add in GPU memory (DraState.usage leaves memory out): a
// device held whole adds its memory, a share what its consumedCapacity says.
int64_t AllocatedClaimMemoryMib(const DraClaim& claim, const DraState& dra);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_CLAIM_QUOTA_H_
