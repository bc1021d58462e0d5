#include "topology/quota.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "topology/supply.h"
#include "topology/wellknown.h"

namespace topology {

void QuotaUsage::Add(const QuotaUsage& other, int sign) {
  gpus += sign * other.gpus;
  for (const auto& [profile, count] : other.mig_instances) {
    auto it = mig_instances.try_emplace(profile, 0).first;
    it->second += sign * count;
    if (it->second == 0) mig_instances.erase(it);
  }
  mig_compute_slices += sign * other.mig_compute_slices;
  shared_replicas += sign * other.shared_replicas;
  gpu_memory_mib += sign * other.gpu_memory_mib;
  gpu_pods += sign * other.gpu_pods;
}

int64_t MigComputeSlices(absl::string_view profile) {
  for (absl::string_view part : absl::StrSplit(profile, absl::ByAnyChar(".+"))) {
    int64_t slices = 0;
    if (part.size() > 1 && part.back() == 'g' &&
        absl::SimpleAtoi(part.substr(0, part.size() - 1), &slices)) {
      return slices;
    }
  }
  return 0;
}

namespace quota_usage {

// UsageOf, counting only the device names `counted` keeps.
template <typename Keep>
QuotaUsage Usage(const GpuDemand& demand, const Labels& node_labels, const Policy& policy,
                 Keep counted) {
  QuotaUsage usage;
  if (demand.empty()) return usage;
  usage.gpu_pods = 1;
  usage.gpu_memory_mib = demand.memory_mib;
  for (const ResourceCount& device : demand.devices) {
    if (!counted(device)) continue;
    std::optional<ResourceClass> what = ClassifyResource(device.name, node_labels, policy);
    if (!what) continue;
    switch (what->kind) {
      case ResourceKind::kWholeGpu:
        usage.gpus += device.count;
        break;
      case ResourceKind::kMigInstance:
        usage.mig_instances[what->mig_profile] += device.count;
        usage.mig_compute_slices += device.count * MigComputeSlices(what->mig_profile);
        break;
      case ResourceKind::kSharedReplica:
        usage.shared_replicas += device.count;
        break;
    }
  }
  return usage;
}

}  // namespace quota_usage

QuotaUsage UsageOf(const GpuDemand& demand, const Labels& node_labels, const Policy& policy) {
  return quota_usage::Usage(demand, node_labels, policy, [](const ResourceCount&) { return true; });
}

QuotaUsage HoldUsage(const GpuDemand& demand, const NodeSupply& supply, const Labels& node_labels,
                     const Policy& policy) {
  return quota_usage::Usage(demand, node_labels, policy, [&](const ResourceCount& device) {
    return supply.Find(device) != nullptr;
  });
}

namespace {

// Sets `verdict` when `requested` on top of `held` passes `quota`; true when it did.
bool Exceeds(QuotaItem item, int64_t held, int64_t requested, std::optional<int64_t> quota,
             QuotaVerdict& verdict) {
  if (!quota || requested <= 0 || held + requested <= *quota) return false;
  verdict = QuotaVerdict{false, item, {}, held, requested, *quota};
  return true;
}

int64_t CountOf(const std::map<std::string, int64_t, std::less<>>& counts,
                absl::string_view profile) {
  auto it = counts.find(profile);
  return it == counts.end() ? 0 : it->second;
}

absl::string_view ItemName(QuotaItem item) {
  switch (item) {
    case QuotaItem::kGpus:
      return kGpuResource;
    case QuotaItem::kMigInstances:
      return kMigResourcePrefix;  // the profile follows
    case QuotaItem::kMigComputeSlices:
      return "MIG compute slices";
    case QuotaItem::kSharedReplicas:
      return "shared GPU replicas";
    case QuotaItem::kGpuMemory:
      return kQuotaGpuMemory;
    case QuotaItem::kGpuPods:
      return "GPU pods";
  }
  return "";
}

}  // namespace

QuotaVerdict CheckQuota(const TenantQuota& quota, const QuotaUsage& held,
                        const QuotaUsage& requested) {
  QuotaVerdict v;
  if (Exceeds(QuotaItem::kGpus, held.gpus, requested.gpus, quota.gpus, v)) return v;
  for (const auto& [profile, limit] : quota.mig_instances) {
    if (Exceeds(QuotaItem::kMigInstances, CountOf(held.mig_instances, profile),
                CountOf(requested.mig_instances, profile), limit, v)) {
      v.mig_profile = profile;
      return v;
    }
  }
  if (Exceeds(QuotaItem::kMigComputeSlices, held.mig_compute_slices, requested.mig_compute_slices,
              quota.mig_compute_slices, v) ||
      Exceeds(QuotaItem::kSharedReplicas, held.shared_replicas, requested.shared_replicas,
              quota.shared_replicas, v) ||
      Exceeds(QuotaItem::kGpuMemory, held.gpu_memory_mib, requested.gpu_memory_mib,
              quota.gpu_memory_mib, v)) {
    return v;
  }
  Exceeds(QuotaItem::kGpuPods, held.gpu_pods, requested.gpu_pods, quota.gpu_pods, v);
  return v;
}

FitResult QuotaRejection(absl::string_view tenant, const QuotaVerdict& v) {
  FitResult r;
  if (v.ok) return r;
  r.verdict = Verdict::kUnresolvable;
  r.rule = Rule::kTenantQuota;
  r.subject = tenant;
  r.resource = ItemName(v.item);
  r.detail = v.mig_profile;
  r.requested = v.requested;
  r.free = v.quota - v.held;
  r.capacity = v.quota;
  return r;
}

std::string QuotaReason(absl::string_view tenant, const QuotaVerdict& v) {
  return QuotaRejection(tenant, v).Reason();
}

FitResult TenantCapRejection(const Tenant& tenant, const QuotaVerdict& verdict) {
  FitResult r = QuotaRejection(tenant.name, verdict);
  if (!r.fits() && tenant.fair_share) r.rule = Rule::kTenantLimit;
  return r;
}

PodQuotaCheck::PodQuotaCheck(const Tenant& tenant, const Policy& policy, const GpuDemand& demand,
                             QuotaUsage held)
    : tenant_(tenant), policy_(policy), demand_(demand), held_(std::move(held)) {}

FitResult PodQuotaCheck::Check(const NodeSupply& supply, const Labels& node_labels) {
  // The node's supply was classified from the same labels UsageOf reads, so equal offers give
  // equal usage (a device the node does not offer has already failed the fit).
  offer_.clear();
  for (const ResourceCount& device : demand_.devices) {
    const OfferedResource* r = supply.Find(device);
    offer_.emplace_back(r ? r->kind : ResourceKind::kWholeGpu,
                        r ? absl::string_view(r->mig_profile) : absl::string_view());
  }
  if (!last_ || offer_ != last_offer_) {
    last_ = TenantCapRejection(
        tenant_, CheckQuota(tenant_.quota, held_, UsageOf(demand_, node_labels, policy_)));
    std::swap(last_offer_, offer_);
  }
  return *last_;
}

std::vector<QuotaLine> QuotaLines(const TenantQuota& quota, const QuotaUsage& used) {
  std::vector<QuotaLine> lines;
  auto add = [&](std::string resource, const std::optional<int64_t>& limit, int64_t n) {
    if (limit) lines.push_back({std::move(resource), *limit, n});
  };
  add(std::string(kGpuResource), quota.gpus, used.gpus);
  for (const auto& [profile, limit] : quota.mig_instances) {
    add(absl::StrCat(kMigResourcePrefix, profile), limit, CountOf(used.mig_instances, profile));
  }
  add("mig-compute-slices", quota.mig_compute_slices, used.mig_compute_slices);
  add("shared-replicas", quota.shared_replicas, used.shared_replicas);
  add("gpu-memory-mib", quota.gpu_memory_mib, used.gpu_memory_mib);
  add("gpu-pods", quota.gpu_pods, used.gpu_pods);
  return lines;
}

}  // namespace topology
