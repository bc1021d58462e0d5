#include "topology/fit.h"

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace topology {
namespace {

FitResult Rejected(Verdict verdict, Rule rule) {
  FitResult r;
  r.verdict = verdict;
  r.rule = rule;
  return r;
}
FitResult Unresolvable(Rule rule) { return Rejected(Verdict::kUnresolvable, rule); }
FitResult Unschedulable(Rule rule) { return Rejected(Verdict::kUnschedulable, rule); }

// Instances of the canary profile held back from pods that are not canaries.
int64_t CanaryHold(const PodContext& pod, const OfferedResource& r) {
  const std::optional<Canary>& canary = pod.policy->canary;
  if (!canary || pod.canary || r.kind != ResourceKind::kMigInstance) return 0;
  return r.mig_profile == canary->mig_profile ? canary->reserve : 0;
}

struct SharedGpus {
  int64_t count = 0;
  int64_t memory_mib = 0;
};

// The shared GPUs whose heap a memory request draws from, if the node has any.
std::optional<SharedGpus> SharedGpusFor(const GpuDemand& demand, const NodeSupply& supply) {
  if (!supply.gpu_memory_mib) return std::nullopt;
  const OfferedResource* shared = nullptr;
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (r && r->kind == ResourceKind::kSharedReplica && r->mode != SharingMode::kMigShared) {
      shared = r;
    }
  }
  if (!shared && demand.devices.empty()) {
    for (const OfferedResource& r : supply.resources) {
      if (r.kind == ResourceKind::kSharedReplica && r.mode != SharingMode::kMigShared) shared = &r;
    }
  }
  if (!shared) return std::nullopt;
  return SharedGpus{supply.SharedGpuCount(*shared), *supply.gpu_memory_mib};
}

int64_t FreeOnGpu(const NodeOccupancy& occupancy, int index, int64_t gpu_mib) {
  auto it = occupancy.shared_memory_by_gpu.find(index);
  return gpu_mib - (it == occupancy.shared_memory_by_gpu.end() ? 0 : it->second);
}

FitResult FitSharedMemory(const GpuDemand& demand, const NodeSupply& supply,
                          const NodeOccupancy& occupancy) {
  std::optional<SharedGpus> gpus = SharedGpusFor(demand, supply);
  if (!gpus) {
    return Unresolvable(demand.devices.empty() ? Rule::kMemoryNoSharedGpu : Rule::kMemoryUnknown);
  }
  if (demand.memory_mib > gpus->memory_mib) {
    FitResult r = Unresolvable(Rule::kMemoryLargerThanGpu);
    r.requested = demand.memory_mib;
    r.capacity = gpus->memory_mib;
    return r;
  }
  int64_t node_free = gpus->count * gpus->memory_mib - occupancy.SharedMemoryUsedMiB();
  int64_t best = 0;
  for (int i = 0; i < gpus->count; ++i)
    best = std::max(best, FreeOnGpu(occupancy, i, gpus->memory_mib));
  best = std::min(best, node_free);
  if (best < demand.memory_mib) {
    FitResult r = Unschedulable(Rule::kMemoryExhausted);
    r.requested = demand.memory_mib;
    r.free = std::max<int64_t>(0, best);
    r.capacity = gpus->memory_mib;
    return r;
  }
  return {};
}

// Memory a pod gets from dedicated devices (whole GPUs and MIG instances); nullopt if unknown.
std::optional<int64_t> DedicatedMemory(const GpuDemand& demand, const NodeSupply& supply,
                                       absl::string_view& named) {
  int64_t total = 0;
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (!r || !r->memory_mib) return std::nullopt;
    total += device.count * *r->memory_mib;
    named = device.name;
  }
  return total;
}

}  // namespace

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFits:
      return "fits";
    case Verdict::kUnschedulable:
      return "unschedulable";
    case Verdict::kUnresolvable:
      return "unresolvable";
  }
  return "unknown";
}

absl::string_view RuleCode(Rule rule) {
  switch (rule) {
    case Rule::kFits:
      return "";
    case Rule::kTenantDenied:
      return "tenant-denied";
    case Rule::kNoGpu:
      return "no-gpu";
    case Rule::kMigReconfiguring:
      return "mig-reconfiguring";
    case Rule::kMigDrift:
      return "mig-drift";
    case Rule::kPoolUndefined:
      return "pool-undefined";
    case Rule::kTierPool:
      return "tier-pool";
    case Rule::kProfileUnsupported:
      return "profile-unsupported";
    case Rule::kNotOffered:
      return "not-offered";
    case Rule::kTierResource:
      return "tier-resource";
    case Rule::kExceedsNode:
      return "exceeds-node";
    case Rule::kExhausted:
      return "exhausted";
    case Rule::kMemoryNoSharedGpu:
      return "memory-no-shared-gpu";
    case Rule::kMemoryUnknown:
      return "memory-unknown";
    case Rule::kMemoryLargerThanGpu:
      return "memory-larger-than-gpu";
    case Rule::kMemoryExhausted:
      return "memory-exhausted";
    case Rule::kMemoryLargerThanSlice:
      return "memory-larger-than-slice";
    case Rule::kUnknownNode:
      return "unknown-node";
    case Rule::kTenantQuota:
      return "tenant-quota";
    case Rule::kDraExceedsNode:
      return "dra-exceeds-node";
    case Rule::kDraExhausted:
      return "dra-exhausted";
    case Rule::kTenantLimit:
      return "tenant-limit";
    case Rule::kGroupLimit:
      return "group-limit";
    case Rule::kBorrowOwed:
      return "borrow-owed";
  }
  return "unknown";
}

void FitResult::AppendReason(std::string& out) const {
  AppendRuleReason(out);
  switch (preemption) {
    case PreemptionNote::kNone:
      return;
    case PreemptionNote::kOwnPodsFreeQuota:
      return absl::StrAppend(&out, "; preempting its own lower-priority pods here would free it");
    case PreemptionNote::kCannotHelp:
      return absl::StrAppend(&out, "; no pod here that it may preempt would free enough");
    case PreemptionNote::kReclaim:
      return absl::StrAppend(
          &out,
          "; it is within its tenant's guarantee: reclaiming GPUs other tenants borrowed "
          "here would free it");
  }
}

void FitResult::AppendRuleReason(std::string& out) const {
  switch (rule) {
    case Rule::kFits:
      return;
    case Rule::kTenantDenied:
      return absl::StrAppend(&out, "tenant ", subject, " is not allowed GPUs by policy");
    case Rule::kNoGpu:
      return absl::StrAppend(&out, "no NVIDIA GPU on node");
    case Rule::kMigReconfiguring:
      return absl::StrAppend(&out, "MIG reconfiguration in progress (", subject, ")");
    case Rule::kMigDrift:
      return absl::StrAppend(&out, subject);
    case Rule::kPoolUndefined:
      return absl::StrAppend(&out, "pool ", subject, " is not defined in the policy");
    case Rule::kTierPool:
      return absl::StrAppend(&out, "pool ", subject, " (", ModeName(mode),
                             ") is not allowed for tier ", tier);
    case Rule::kProfileUnsupported:
      return absl::StrAppend(&out, "GPU model ", subject, " has no MIG profile ", detail);
    case Rule::kNotOffered:
      return absl::StrAppend(&out, resource, ": not offered by node");
    case Rule::kTierResource:
      return absl::StrAppend(&out, resource, " is ", ModeName(mode), " here, not allowed for tier ",
                             tier);
    case Rule::kExceedsNode:
      return absl::StrAppend(&out, resource, ": requested ", requested, ", node has ", capacity,
                             canary_reserve ? " outside the canary reserve" : "");
    case Rule::kExhausted:
      return absl::StrAppend(&out, resource, ": requested ", requested, ", free ", free, " of ",
                             capacity, canary_reserve ? " (canary reserve held)" : "");
    case Rule::kMemoryNoSharedGpu:
      return absl::StrAppend(&out,
                             "GPU memory: node has no shared GPU to hold a memory-only request");
    case Rule::kMemoryUnknown:
      return absl::StrAppend(
          &out,
          "GPU memory: size unknown (no nvidia.com/gpu.memory label and product not in catalog)");
    case Rule::kMemoryLargerThanGpu:
      return absl::StrAppend(&out, "GPU memory: requested ", requested,
                             " MiB, larger than one GPU (", capacity, " MiB)");
    case Rule::kMemoryExhausted:
      return absl::StrAppend(&out, "GPU memory: requested ", requested,
                             " MiB, largest free on one GPU ", free, " MiB of ", capacity);
    case Rule::kMemoryLargerThanSlice:
      return absl::StrAppend(&out, "GPU memory: requested ", requested, " MiB, ", resource,
                             " gives ", capacity, " MiB");
    case Rule::kUnknownNode:
      return absl::StrAppend(&out, "node not yet known to gpu-tenancy");
    case Rule::kTenantQuota:
    case Rule::kTenantLimit: {
      auto amount = [&](int64_t n) {
        if (resource != kQuotaGpuMemory) return absl::StrCat(n);
        return n % 1024 == 0 ? absl::StrCat(n / 1024, "Gi") : absl::StrCat(n, "Mi");
      };
      return absl::StrAppend(&out, "tenant ", subject,
                             rule == Rule::kTenantLimit ? " limit: " : " quota: ", resource, detail,
                             " ", amount(capacity - free), " of ", amount(capacity), " held, ",
                             amount(requested), " requested");
    }
    case Rule::kGroupLimit:
    case Rule::kBorrowOwed:
      return absl::StrAppend(&out, detail);
    case Rule::kDraExceedsNode:
      if (capacity == 0) {
        absl::StrAppend(&out, resource, ": node has no DRA device of class ", subject);
      } else {
        absl::StrAppend(&out, resource, ": requested ", requested, ", node has ", capacity,
                        " DRA devices of class ", subject);
      }
      if (!detail.empty()) absl::StrAppend(&out, " (", detail, ")");
      return;
    case Rule::kDraExhausted:
      if (free == 0) {
        absl::StrAppend(&out, "no free ", resource, " on DRA devices of class ", subject, " (0 of ",
                        capacity, " free)");
      } else {
        absl::StrAppend(&out, resource, ": requested ", requested, ", DRA devices of class ",
                        subject, " have ", free, " of ", capacity, " free");
      }
      if (!detail.empty()) absl::StrAppend(&out, " (", detail, ")");
      return;
  }
}

std::string FitResult::Reason() const {
  std::string out;
  AppendReason(out);
  return out;
}

namespace {

// The decision. Resource and mode checks come before counts: they never change by waiting.
FitResult FitCore(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
                  const NodeOccupancy& occupancy) {
  if (demand.empty()) return {};
  if (pod.tenant.Denied()) {
    FitResult r = Unresolvable(Rule::kTenantDenied);
    r.subject = pod.tenant.name;
    return r;
  }
  const Tier& tier = *pod.tenant.tier;
  if (!supply.HasGpus()) return Unresolvable(Rule::kNoGpu);
  if (!supply.mig_unsettled.empty()) {
    FitResult r = Unresolvable(Rule::kMigReconfiguring);
    r.subject = supply.mig_unsettled;
    return r;
  }
  if (!supply.mig_drift.empty()) {
    FitResult r = Unresolvable(Rule::kMigDrift);
    r.subject = supply.mig_drift;
    return r;
  }
  if (!supply.pool_mode) {
    FitResult r = Unresolvable(Rule::kPoolUndefined);
    r.subject = supply.pool;
    return r;
  }
  if (!tier.modes.Has(*supply.pool_mode)) {
    FitResult r = Unresolvable(Rule::kTierPool);
    r.subject = supply.pool;
    r.mode = *supply.pool_mode;
    r.tier = tier.name;
    return r;
  }
  // Each resource is looked up once; pods ask for one or two.
  absl::InlinedVector<const OfferedResource*, 4> offered;
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (!r || r->allocatable == 0) {
      FitResult out;
      out.verdict = Verdict::kUnresolvable;
      out.resource = device.name;
      if (r && !r->mig_profile.empty() && supply.model &&
          !supply.model->FindProfile(r->mig_profile)) {
        out.rule = Rule::kProfileUnsupported;
        out.subject = supply.model->model;
        out.detail = r->mig_profile;
      } else {
        out.rule = Rule::kNotOffered;
      }
      return out;
    }
    if (!tier.modes.Has(r->mode)) {
      FitResult out = Unresolvable(Rule::kTierResource);
      out.resource = r->name;
      out.mode = r->mode;
      out.tier = tier.name;
      return out;
    }
    offered.push_back(r);
  }
  size_t k = 0;
  for (const ResourceCount& device : demand.devices) {
    const int64_t count = device.count;
    const OfferedResource& r = *offered[k++];
    int64_t hold = CanaryHold(pod, r);
    int64_t free = std::max<int64_t>(0, r.allocatable - occupancy.Used(device) - hold);
    if (count > r.allocatable - hold || count > free) {
      const bool never = count > r.allocatable - hold;
      FitResult out = never ? Unresolvable(Rule::kExceedsNode) : Unschedulable(Rule::kExhausted);
      out.resource = r.name;
      out.requested = count;
      out.free = free;
      out.capacity = never ? r.allocatable - hold : r.allocatable;
      out.canary_reserve = hold > 0;
      return out;
    }
  }
  if (demand.memory_mib > 0) {
    if (UsesSharedMemory(demand, supply)) return FitSharedMemory(demand, supply, occupancy);
    absl::string_view named;
    std::optional<int64_t> dedicated = DedicatedMemory(demand, supply, named);
    if (dedicated && *dedicated < demand.memory_mib) {
      FitResult out = Unresolvable(Rule::kMemoryLargerThanSlice);
      out.resource = named;
      out.requested = demand.memory_mib;
      out.capacity = *dedicated;
      return out;
    }
  }
  return {};
}

int ScoreCore(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy);

}  // namespace

FitResult Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy) {
  return FitCore(demand, pod, supply, occupancy);
}

std::optional<int> ChooseSharedGpu(const GpuDemand& demand, const NodeSupply& supply,
                                   const NodeOccupancy& occupancy) {
  if (!UsesSharedMemory(demand, supply)) return std::nullopt;
  std::optional<SharedGpus> gpus = SharedGpusFor(demand, supply);
  if (!gpus) return std::nullopt;
  std::optional<int> best;
  int64_t best_free = 0;
  for (int i = 0; i < gpus->count; ++i) {
    int64_t free = FreeOnGpu(occupancy, i, gpus->memory_mib);
    if (free >= demand.memory_mib && (!best || free < best_free)) {
      best = i;
      best_free = free;
    }
  }
  return best;
}

namespace {

int ScoreCore(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy) {
  if (demand.empty()) return 0;
  // Utilisation of what the pod asks for, after placing it, averaged over its resources.
  double sum = 0;
  int parts = 0;
  absl::InlinedVector<const OfferedResource*, 4> offered;
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    offered.push_back(r);
    if (!r || r->allocatable == 0) continue;
    sum += static_cast<double>(occupancy.Used(device) + device.count) /
           static_cast<double>(r->allocatable);
    ++parts;
  }
  if (demand.memory_mib > 0) {  // ChooseSharedGpu is nullopt without a memory request
    if (std::optional<int> gpu = ChooseSharedGpu(demand, supply, occupancy)) {
      int64_t gpu_mib = *supply.gpu_memory_mib;
      int64_t used = gpu_mib - FreeOnGpu(occupancy, *gpu, gpu_mib) + demand.memory_mib;
      sum += static_cast<double>(used) / static_cast<double>(gpu_mib);
      ++parts;
    }
  }
  double fullness = parts ? sum / parts : 0.0;
  ScoringStrategy strategy = pod.scoring.value_or(pod.policy->scoring);
  int score = static_cast<int>(
      std::lround(10.0 * (strategy == ScoringStrategy::kBinpack ? fullness : 1.0 - fullness)));
  // A pod that could live on shared GPUs (it asks for no MIG slice) from a tenant allowed to
  // share is steered off MIG pools: their hardware isolation is for tenants who need it.
  bool asks_mig = false;
  for (const OfferedResource* r : offered) {
    asks_mig |= r && r->kind == ResourceKind::kMigInstance;
  }
  if (supply.pool_mode == SharingMode::kMig && !asks_mig && pod.tenant.tier->modes.HasShared()) {
    score /= 2;
  }
  return std::clamp(score, 0, 10);
}

}  // namespace

int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy) {
  if (!FitCore(demand, pod, supply, occupancy).fits()) return 0;
  return ScoreCore(demand, pod, supply, occupancy);
}

}  // namespace topology
