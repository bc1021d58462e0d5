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

void QuotaUsage::Add(const QuotaUsage& other) {
  gpus += other.gpus;
  for (const auto& [profile, count] : other.mig_instances) mig_instances[profile] += count;
  mig_compute_slices += other.mig_compute_slices;
  shared_replicas += other.shared_replicas;
  gpu_memory_mib += other.gpu_memory_mib;
  gpu_pods += other.gpu_pods;
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

QuotaUsage UsageOf(const GpuDemand& demand, const Labels& node_labels, const Policy& policy) {
  QuotaUsage usage;
  if (demand.empty()) return usage;
  usage.gpu_pods = 1;
  usage.gpu_memory_mib = demand.memory_mib;
  for (const ResourceCount& device : demand.devices) {
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

namespace {

// Sets `verdict` when `requested` on top of `held` passes `quota`; true when it did.
bool Exceeds(std::string item, bool memory, int64_t held, int64_t requested,
             std::optional<int64_t> quota, QuotaVerdict& verdict) {
  if (!quota || requested <= 0 || held + requested <= *quota) return false;
  verdict = QuotaVerdict{false, std::move(item), memory, held, requested, *quota};
  return true;
}

int64_t CountOf(const std::map<std::string, int64_t, std::less<>>& counts,
                absl::string_view profile) {
  auto it = counts.find(profile);
  return it == counts.end() ? 0 : it->second;
}

std::string Memory(int64_t mib) {
  return mib % 1024 == 0 ? absl::StrCat(mib / 1024, "Gi") : absl::StrCat(mib, "Mi");
}

}  // namespace

QuotaVerdict CheckQuota(const TenantQuota& quota, const QuotaUsage& held,
                        const QuotaUsage& requested) {
  QuotaVerdict v;
  if (Exceeds(std::string(kGpuResource), false, held.gpus, requested.gpus, quota.gpus, v)) return v;
  for (const auto& [profile, limit] : quota.mig_instances) {
    if (Exceeds(absl::StrCat(kMigResourcePrefix, profile), false,
                CountOf(held.mig_instances, profile), CountOf(requested.mig_instances, profile),
                limit, v)) {
      return v;
    }
  }
  if (Exceeds("MIG compute slices", false, held.mig_compute_slices, requested.mig_compute_slices,
              quota.mig_compute_slices, v)) {
    return v;
  }
  if (Exceeds("shared GPU replicas", false, held.shared_replicas, requested.shared_replicas,
              quota.shared_replicas, v)) {
    return v;
  }
  if (Exceeds("GPU memory", true, held.gpu_memory_mib, requested.gpu_memory_mib,
              quota.gpu_memory_mib, v)) {
    return v;
  }
  Exceeds("GPU pods", false, held.gpu_pods, requested.gpu_pods, quota.gpu_pods, v);
  return v;
}

std::string QuotaReason(absl::string_view tenant, const QuotaVerdict& v) {
  if (v.ok) return "";
  auto amount = [&](int64_t n) { return v.memory ? Memory(n) : absl::StrCat(n); };
  return absl::StrCat("tenant ", tenant, " quota: ", v.item, " ", amount(v.held), " of ",
                      amount(v.quota), " held, ", amount(v.requested), " requested");
}

}  // namespace topology
