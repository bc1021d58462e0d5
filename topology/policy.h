// Tenant and tier policy: which sharing modes a tenant's tier may use, which namespaces belong to
// which tenant, and the per-tenant limits. Loaded from YAML by common/policy_loader; both the
// extender's pool gate and the webhook's rules read this one structure.
#ifndef GPU_TENANCY_TOPOLOGY_POLICY_H_
#define GPU_TENANCY_TOPOLOGY_POLICY_H_

#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "topology/facts.h"
#include "topology/wellknown.h"

namespace topology {

// The isolation deal a tenant gets, from strongest to weakest.
enum class SharingMode { kExclusive, kMig, kMigShared, kMps, kTimeslice };

absl::string_view ModeName(SharingMode mode);
std::optional<SharingMode> ParseMode(absl::string_view name);
// True for modes that share one memory heap and fault domain between tenants' pods.
inline bool IsSharedMode(SharingMode m) {
  return m == SharingMode::kMigShared || m == SharingMode::kMps || m == SharingMode::kTimeslice;
}

// A small set of modes; cheap to copy and compare.
class ModeSet {
 public:
  ModeSet() = default;
  void Add(SharingMode m) { bits_ |= Bit(m); }
  bool Has(SharingMode m) const { return (bits_ & Bit(m)) != 0; }
  bool HasShared() const {
    return Has(SharingMode::kMigShared) || Has(SharingMode::kMps) || Has(SharingMode::kTimeslice);
  }
  // "exclusive, mig" in the fixed mode order.
  std::string ToString() const;

 private:
  static unsigned Bit(SharingMode m) { return 1u << static_cast<unsigned>(m); }
  unsigned bits_ = 0;
};

struct Tier {
  std::string name;
  ModeSet modes;
  bool device_access = false;  // may use privileged pods, /dev/nvidia* mounts, NVIDIA_* env
  // Policy key unknownDemand (deny | warn): what a pod or claim of this tier gets when it asks for
  // a device the service cannot read (a GPU vendor's resource name it does not know, a
  // DeviceClass the policy does not map). Unset: denied for a tier that may not share a GPU (its
  // tenants were not trusted with a shared fault domain), a warning otherwise.
  std::optional<bool> deny_unknown_demand;

  bool DeniesUnknownDemand() const { return deny_unknown_demand.value_or(!modes.HasShared()); }
};

struct MpsLimits {
  std::optional<int> max_active_thread_percentage;
  std::optional<int64_t> max_pinned_memory_mib;
};

struct TenantLimits {
  std::optional<int64_t> gpu_memory_mib_per_pod;
  std::vector<std::string> mig_profiles;  // empty: any profile
  std::optional<int64_t> shared_replicas_per_pod;
  MpsLimits mps;
};

// A tenant's totals across all its pods (topology/quota.h checks them). Unset: no limit.
struct TenantQuota {
  std::optional<int64_t> gpus;  // whole GPUs
  // MIG instances by profile as nvidia-smi names it ("3g.40gb" -> 2).
  std::map<std::string, int64_t, std::less<>> mig_instances;
  std::optional<int64_t> mig_compute_slices;  // the sum of the Ng of every MIG instance held
  std::optional<int64_t> shared_replicas;     // time-sliced, MPS and shared-MIG replicas
  std::optional<int64_t> gpu_memory_mib;      // declared GPU memory of every GPU pod
  std::optional<int64_t> gpu_pods;            // pods with any GPU demand

  bool empty() const {
    return !gpus && mig_instances.empty() && !mig_compute_slices && !shared_replicas &&
           !gpu_memory_mib && !gpu_pods;
  }
};

// Fair sharing (policy keys guaranteed, limit, weight and group on a tenant): what the tenant
// is owed, what it may hold by borrowing capacity others leave idle, and its part of that idle
// capacity. Amounts are in quota units (TenantQuota). Items are governed cluster-wide: an item
// any tenant or group names in `guaranteed` or `limit` is one every fair-sharing tenant is
// guaranteed 0 of unless it says otherwise (topology/fair_share.h).
struct FairShareTerms {
  TenantQuota guaranteed;  // unset item: 0 when governed
  TenantQuota limit;       // unset item: no limit of its own (groups' and the cluster's stand)
  int64_t weight = 1;      // its part of idle capacity against its siblings', at least 1
  std::string group;       // the TenantGroup it belongs to; "" for the top level
};

// A group of fair-sharing tenants (policy key groups[]), at any depth through `parent`.
struct TenantGroup {
  std::string name;
  std::string parent;      // "" for the top level
  TenantQuota guaranteed;  // unset item: the sum of its members' guarantees
  TenantQuota limit;       // what its members may hold together; unset item: no limit
  int64_t weight = 1;
};

struct Tenant {
  std::string name;
  std::string tier;
  std::vector<std::string> namespaces;
  Labels namespace_selector;  // matchLabels on the namespace; empty: not used
  TenantLimits limits;
  // The tenant's hard cap, everywhere quotas are enforced: the policy's `quota`, or for a
  // fair-sharing tenant its `limit` (the loader copies it here; a tenant states one or the other).
  TenantQuota quota;
  // PriorityClass names its pods may use (the validating webhook enforces it): priority decides
  // whom a pod may preempt, so it is part of the tenant's contract. Empty: any.
  std::vector<std::string> priority_classes;
  // Set when the tenant takes part in fair sharing (it states guaranteed, limit, weight or
  // group). Last, with an initializer, so brace-initialised tenants may leave it out.
  std::optional<FairShareTerms> fair_share = {};
};

struct Pool {
  std::string name;
  SharingMode mode = SharingMode::kExclusive;
  std::optional<Taint> taint;  // pods allowed in this pool get a toleration for it
};

struct Canary {
  std::string mig_profile;  // "1g.10gb"
  int64_t reserve = 0;      // instances kept free per node for canary pods
  std::string pod_label = std::string(kDefaultCanaryLabel);  // value "true" marks a canary pod
};

enum class ScoringStrategy { kBinpack, kSpread };

// Tenants named directly or by their tier.
struct TenantMatch {
  std::vector<std::string> tenants;
  std::vector<std::string> tiers;
  bool empty() const { return tenants.empty() && tiers.empty(); }
};

// One opening of preemption across tenants: pods of the preemptors may preempt lower-priority
// pods of the victims. An empty `preemptors` stands for every tenant.
struct CrossTenantPreemption {
  TenantMatch preemptors;
  TenantMatch victims;
};

// A pod may preempt lower-priority pods of its own tenant, and of other tenants only where a
// rule says so (topology/preemption.h).
struct PreemptionPolicy {
  std::vector<CrossTenantPreemption> across_tenants;
};

// Where tenant quotas are enforced: always by the scheduler extender (filter and bind); at
// admission a pod over quota is only warned about (kScheduling) or denied (kAdmission).
enum class QuotaEnforcement { kScheduling, kAdmission };

// The node agent (agent/): the one identity that may write the device annotations
// (kPodDevicesAnnotation, kNodeDevicesAnnotation), each only for its own node. Policy key
// nodeAgent.serviceAccount, "<namespace>/<name>".
struct NodeAgent {
  std::string service_account_namespace = "gpu-tenancy-system";
  std::string service_account_name = "gpu-tenancy-node-agent";
};

// How the service reads a DeviceClass a claim or an extended resource names.
enum class DeviceClassKind {
  kGpu,      // GPU devices: tiers, MIG profiles and quotas apply
  kOther,    // not GPUs (a NIC, an IMEX channel): left alone
  kUnknown,  // in neither list: unknown demand (Tier::DeniesUnknownDemand)
};

// The admission allow-list (policy key `admission`): who is believed for what only the system
// writes, and how device names the webhook meets are read. Patterns may hold one '*' standing
// for any run of characters ("*.gpu.nvidia.com").
struct AdmissionAllowList {
  // Users whose ResourceClaim CREATE may carry resource.kubernetes.io/extended-resource-claim:
  // kube-scheduler makes those claims for a pod's DRA extended resource. From anyone else the
  // annotation is ignored and the claim judged as the tenant's own.
  std::vector<std::string> scheduler_users = {
      "system:kube-scheduler", "system:serviceaccount:gpu-tenancy-system:gpu-tenancy-scheduler"};
  std::vector<std::string> gpu_device_classes = {"gpu.nvidia.com", "mig.nvidia.com",
                                                 "*.gpu.nvidia.com"};
  std::vector<std::string> other_device_classes = {"compute-domain-*.nvidia.com"};
  // Resource names in a GPU vendor's domain (kGpuVendorDomains) that are not GPUs, such as a
  // network operator's nvidia.com/rdma_shared_device_a.
  std::vector<std::string> other_resources;
  // The scheduler whose extender gpu-tenancy is: default-scheduler, or the second scheduler
  // of manifests/scheduler. A GPU pod naming another is placed without the extender; with
  // set_scheduler_name the mutating webhook renames it, else validation judges it (rule
  // scheduler-name: denied where unknown demand is, a warning otherwise).
  std::string scheduler_name = "default-scheduler";
  bool set_scheduler_name = false;

  bool IsSchedulerUser(absl::string_view username) const;
  DeviceClassKind ClassifyDeviceClass(absl::string_view device_class) const;
  bool IsOtherResource(absl::string_view resource) const;
};

// "a*b" matches any text that starts with "a" and ends with "b" (with room for both); a pattern
// without '*' matches itself.
bool MatchesPattern(absl::string_view pattern, absl::string_view text);

// What the contract guard (guard/) does about a violation it finds after admission.
enum class GuardAction { kReport, kEvict };

// Policy key `guard`: an action per rule id, `report` unless the policy says `evict`.
struct GuardPolicy {
  std::map<std::string, GuardAction, std::less<>> actions;
  // Evicting rules list what would go and evict nothing.
  bool dry_run = false;
  // At most this many evictions a minute, cluster-wide.
  int64_t evictions_per_minute = 6;

  GuardAction ActionFor(absl::string_view rule) const {
    auto it = actions.find(rule);
    return it == actions.end() ? GuardAction::kReport : it->second;
  }
};

struct Policy {
  std::vector<Tier> tiers;
  std::vector<Tenant> tenants;
  std::optional<std::string> unknown_tenant_tier;  // nullopt: unknown tenants are denied
  std::string pool_label = std::string(kDefaultPoolLabel);
  std::vector<Pool> pools;
  std::vector<std::string> shared_resources;  // extra names shared like nvidia.com/gpu.shared
  std::vector<std::string> memory_resources = {std::begin(kDefaultMemoryResources),
                                               std::end(kDefaultMemoryResources)};
  std::string memory_annotation = std::string(kDefaultMemoryAnnotation);
  bool fail_requests_greater_than_one = true;
  ScoringStrategy scoring = ScoringStrategy::kBinpack;
  QuotaEnforcement quota_enforcement = QuotaEnforcement::kScheduling;
  std::optional<Canary> canary;
  PreemptionPolicy preemption;
  NodeAgent node_agent;
  AdmissionAllowList admission;
  GuardPolicy guard;
  // Fair sharing: the groups of tenants, and the cluster capacity the top level's guarantees
  // are checked against at load (policy key fairSharing.capacity; unset: checked where a
  // cluster is at hand, topology/fair_share.h CheckGuarantees: explain warns).
  std::vector<TenantGroup> groups;
  std::optional<TenantQuota> fair_share_capacity;

  // True when some tenant takes part in fair sharing; false keeps every decision as without it.
  bool FairSharing() const;
  const TenantGroup* FindGroup(absl::string_view name) const;

  const Tier* FindTier(absl::string_view name) const;
  const Pool* FindPool(absl::string_view name) const;
  const Tenant* FindTenant(absl::string_view name) const;
  bool IsMemoryResource(absl::string_view resource) const;
  bool IsConfiguredShared(absl::string_view resource) const;

  // Cross-reference checks (tenants name existing tiers, namespaces are not claimed twice...).
  absl::Status Validate() const;

  // The policy used when none is given: one tier "default" allowing every mode, which every
  // namespace gets. Placement rules still apply; trust rules do not.
  static Policy AllowAll();
};

// Who a namespace belongs to. `tier` is null when the tenant is unknown and the policy denies
// unknown tenants; `tenant` is null for an unknown tenant admitted with the default tier.
struct TenantRef {
  std::string name;  // tenant name, or "unknown"
  const Tenant* tenant = nullptr;
  const Tier* tier = nullptr;
  bool Denied() const { return tier == nullptr; }
};

// The ref of one of the policy's tenants, and of a namespace no tenant owns.
TenantRef TenantRefOf(const Policy& policy, const Tenant& tenant);
TenantRef UnknownTenantRef(const Policy& policy);

// Namespace name first, then the namespace-label selectors, in policy order.
TenantRef ResolveTenant(const Policy& policy, absl::string_view namespace_name,
                        const Labels& namespace_labels);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_POLICY_H_
