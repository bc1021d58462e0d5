// Tenant quotas in GPU units. A pod's demand is counted as the quota counts it (whole GPUs, MIG
// instances by profile and their compute slices, shared replicas, declared GPU memory, GPU pods)
// on the node it is or would be placed on, since the node's labels say what nvidia.com/gpu is
// there. CheckQuota compares a tenant's holdings plus one pod against its quota. Pure: filter,
// bind and explain pass the holdings they see.
#ifndef GPU_TENANCY_TOPOLOGY_QUOTA_H_
#define GPU_TENANCY_TOPOLOGY_QUOTA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/facts.h"
#include "topology/policy.h"

namespace topology {

// What a tenant holds, or what one pod asks, in the units of TenantQuota.
struct QuotaUsage {
  int64_t gpus = 0;
  std::map<std::string, int64_t, std::less<>> mig_instances;  // by nvidia-smi profile name
  int64_t mig_compute_slices = 0;
  int64_t shared_replicas = 0;
  int64_t gpu_memory_mib = 0;
  int64_t gpu_pods = 0;

  void Add(const QuotaUsage& other);
  bool operator==(const QuotaUsage&) const = default;
};

// The compute slices of a MIG profile: the count before "g" ("3g.40gb" -> 3, "1c.3g.20gb" -> 3,
// "1g.10gb+me" -> 1); 0 when the name has none.
int64_t MigComputeSlices(absl::string_view profile);

// One pod's demand on a node with `node_labels`. An empty demand counts nothing, not even a pod.
QuotaUsage UsageOf(const GpuDemand& demand, const Labels& node_labels, const Policy& policy);

// The first quota item the pod would exceed, in the order of TenantQuota's fields (MIG profiles
// by name), or ok. Only items the pod asks for are checked: a tenant already above an item
// (its quota was lowered) may still place pods that add nothing to it.
struct QuotaVerdict {
  bool ok = true;
  std::string item;     // "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "MIG compute slices", ...
  bool memory = false;  // held, requested and quota are MiB
  int64_t held = 0;
  int64_t requested = 0;
  int64_t quota = 0;

  bool operator==(const QuotaVerdict&) const = default;
};
QuotaVerdict CheckQuota(const TenantQuota& quota, const QuotaUsage& held,
                        const QuotaUsage& requested);

// "tenant acme quota: nvidia.com/mig-3g.40gb 2 of 2 held, 1 requested"; memory in Mi or Gi.
std::string QuotaReason(absl::string_view tenant, const QuotaVerdict& verdict);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_QUOTA_H_
