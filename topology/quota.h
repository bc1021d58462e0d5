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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/facts.h"
#include "topology/fit.h"
#include "topology/policy.h"
#include "topology/supply.h"

namespace topology {

// What a tenant holds, or what one pod asks, in the units of TenantQuota.
struct QuotaUsage {
  int64_t gpus = 0;
  std::map<std::string, int64_t, std::less<>> mig_instances;  // by nvidia-smi profile name
  int64_t mig_compute_slices = 0;
  int64_t shared_replicas = 0;
  int64_t gpu_memory_mib = 0;
  int64_t gpu_pods = 0;

  // Adds (sign +1) or removes (sign -1) `other`; a profile whose count reaches 0 is dropped, so
  // removing what was added restores an equal value.
  void Add(const QuotaUsage& other, int sign = 1);
  bool empty() const { return *this == QuotaUsage{}; }
  bool operator==(const QuotaUsage&) const = default;
};

// The compute slices of a MIG profile: the count before "g" ("3g.40gb" -> 3, "1c.3g.20gb" -> 3,
// "1g.10gb+me" -> 1); 0 when the name has none.
int64_t MigComputeSlices(absl::string_view profile);

// One pod's demand on a node with `node_labels`. An empty demand counts nothing, not even a pod.
QuotaUsage UsageOf(const GpuDemand& demand, const Labels& node_labels, const Policy& policy);
// A bound or assumed pod's usage on its node: UsageOf without the device names the node's
// allocatable does not list. Such a name is not a device-plugin resource there: on a node whose
// GPUs DRA publishes, a pod asking `nvidia.com/gpu` gets devices through an extended-resource
// claim, which DraState.usage counts by device, so counting the request too would charge the
// tenant twice. (A device plugin that goes away leaves its name in allocatable at 0.)
QuotaUsage HoldUsage(const GpuDemand& demand, const NodeSupply& supply, const Labels& node_labels,
                     const Policy& policy);

// The first quota item the pod would exceed, in the order of TenantQuota's fields (MIG profiles
// by name), or ok. Only items the pod asks for are checked: a tenant already above an item
// (its quota was lowered) may still place pods that add nothing to it.
enum class QuotaItem {
  kGpus,
  kMigInstances,
  kMigComputeSlices,
  kSharedReplicas,
  kGpuMemory,
  kGpuPods
};
struct QuotaVerdict {
  bool ok = true;
  QuotaItem item = QuotaItem::kGpus;
  absl::string_view mig_profile;  // kMigInstances: the profile, a view into the quota's key
  int64_t held = 0;               // MiB for kGpuMemory, as requested and quota
  int64_t requested = 0;
  int64_t quota = 0;

  bool operator==(const QuotaVerdict&) const = default;
};
QuotaVerdict CheckQuota(const TenantQuota& quota, const QuotaUsage& held,
                        const QuotaUsage& requested);

// The verdict as Fit's answer (Rule::kTenantQuota, kUnresolvable: preempting other tenants'
// pods cannot make room in this tenant's quota). Views into `tenant` and the verdict's profile.
FitResult QuotaRejection(absl::string_view tenant, const QuotaVerdict& verdict);

// "tenant acme quota: nvidia.com/mig-3g.40gb 2 of 2 held, 1 requested"; memory in Mi or Gi.
std::string QuotaReason(absl::string_view tenant, const QuotaVerdict& verdict);
// QuotaRejection for the tenant's hard cap as the policy names it: Rule::kTenantLimit ("tenant
// vision limit: ...") for a fair-sharing tenant, whose cap is its limit, else kTenantQuota.
FitResult TenantCapRejection(const Tenant& tenant, const QuotaVerdict& verdict);

// One pod's quota check across many nodes (a filter's candidates, or bind's one). What the pod
// adds to its tenant's holdings depends on how a node offers the resources it asks for, and
// most nodes offer them alike, so the verdict is kept for as long as that does not change. The
// rejections it returns point into the tenant (the policy) only.
class PodQuotaCheck {
 public:
  // `tenant` must have a quota; `held` is what it holds now (TenantUsage).
  PodQuotaCheck(const Tenant& tenant, const Policy& policy, const GpuDemand& demand,
                QuotaUsage held);
  // Fits, or the Rule::kTenantQuota rejection, for a node the pod otherwise fits. The check
  // remembers views into the last node's supply, so every node passed must outlive it (a
  // snapshot's nodes, during one request).
  FitResult Check(const NodeSupply& supply, const Labels& node_labels);
  const QuotaUsage& held() const { return held_; }

 private:
  const Tenant& tenant_;
  const Policy& policy_;
  const GpuDemand& demand_;
  QuotaUsage held_;
  // How the last node offered each device the pod asks for, and the verdict there.
  std::vector<std::pair<ResourceKind, absl::string_view>> last_offer_, offer_;
  std::optional<FitResult> last_;
};

// A quota's items as a flat list with what is used of each, for metrics, /debug/allocations and
// explain: only the items the quota sets, in TenantQuota's field order, MIG profiles by name.
struct QuotaLine {
  // "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "mig-compute-slices", "shared-replicas",
  // "gpu-memory-mib" or "gpu-pods": a bounded label set (the policy names the profiles).
  std::string resource;
  int64_t quota = 0;
  int64_t used = 0;
};
std::vector<QuotaLine> QuotaLines(const TenantQuota& quota, const QuotaUsage& used);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_QUOTA_H_
