#include "topology/fit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace topology {
namespace {

FitResult Unresolvable(absl::string_view code, std::string reason) {
  return {Verdict::kUnresolvable, std::move(reason), code};
}
FitResult Unschedulable(absl::string_view code, std::string reason) {
  return {Verdict::kUnschedulable, std::move(reason), code};
}

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
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = supply.Find(name);
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
    if (demand.devices.empty()) {
      return Unresolvable("memory-no-shared-gpu", "GPU memory: node has no shared GPU to hold a memory-only request");
    }
    return Unresolvable("memory-unknown", 
        "GPU memory: size unknown (no nvidia.com/gpu.memory label and product not in catalog)");
  }
  if (demand.memory_mib > gpus->memory_mib) {
    return Unresolvable("memory-larger-than-gpu", absl::StrCat("GPU memory: requested ", demand.memory_mib,
                                     " MiB, larger than one GPU (", gpus->memory_mib, " MiB)"));
  }
  int64_t node_free = gpus->count * gpus->memory_mib - occupancy.SharedMemoryUsedMiB();
  int64_t best = 0;
  for (int i = 0; i < gpus->count; ++i) best = std::max(best, FreeOnGpu(occupancy, i, gpus->memory_mib));
  best = std::min(best, node_free);
  if (best < demand.memory_mib) {
    return Unschedulable("memory-exhausted", absl::StrCat("GPU memory: requested ", demand.memory_mib,
                                      " MiB, largest free on one GPU ", std::max<int64_t>(0, best),
                                      " MiB of ", gpus->memory_mib));
  }
  return {};
}

// Memory a pod gets from dedicated devices (whole GPUs and MIG instances); nullopt if unknown.
std::optional<int64_t> DedicatedMemory(const GpuDemand& demand, const NodeSupply& supply,
                                       std::string& named) {
  int64_t total = 0;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = supply.Find(name);
    if (!r || !r->memory_mib) return std::nullopt;
    total += count * *r->memory_mib;
    named = name;
  }
  return total;
}

}  // namespace

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFits: return "fits";
    case Verdict::kUnschedulable: return "unschedulable";
    case Verdict::kUnresolvable: return "unresolvable";
  }
  return "unknown";
}

FitResult Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy) {
  if (demand.empty()) return {};
  if (pod.tenant.Denied()) {
    return Unresolvable("tenant-denied", absl::StrCat("tenant ", pod.tenant.name, " is not allowed GPUs by policy"));
  }
  const Tier& tier = *pod.tenant.tier;
  if (!supply.HasGpus()) return Unresolvable("no-gpu", "no NVIDIA GPU on node");
  if (!supply.mig_unsettled.empty()) {
    return Unresolvable("mig-reconfiguring", absl::StrCat("MIG reconfiguration in progress (", supply.mig_unsettled, ")"));
  }
  if (!supply.pool_mode) {
    return Unresolvable("pool-undefined", absl::StrCat("pool ", supply.pool, " is not defined in the policy"));
  }
  if (!tier.modes.Has(*supply.pool_mode)) {
    return Unresolvable("tier-pool", absl::StrCat("pool ", supply.pool, " (", ModeName(*supply.pool_mode),
                                     ") is not allowed for tier ", tier.name));
  }
  // Resource and mode checks first: they never change by waiting, so they win over counts.
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = supply.Find(name);
    if (!r || r->allocatable == 0) {
      if (r && !r->mig_profile.empty() && supply.model &&
          !supply.model->FindProfile(r->mig_profile)) {
        return Unresolvable("profile-unsupported", absl::StrCat("GPU model ", supply.model->model, " has no MIG profile ",
                                         r->mig_profile));
      }
      return Unresolvable("not-offered", absl::StrCat(name, ": not offered by node"));
    }
    if (!tier.modes.Has(r->mode)) {
      return Unresolvable("tier-resource", absl::StrCat(name, " is ", ModeName(r->mode),
                                       " here, not allowed for tier ", tier.name));
    }
  }
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource& r = *supply.Find(name);
    int64_t hold = CanaryHold(pod, r);
    int64_t free = std::max<int64_t>(0, r.allocatable - occupancy.Used(name) - hold);
    if (count > r.allocatable - hold) {
      return Unresolvable("exceeds-node", absl::StrCat(name, ": requested ", count, ", node has ",
                                       r.allocatable - hold, hold ? " outside the canary reserve" : ""));
    }
    if (count > free) {
      return Unschedulable("exhausted", absl::StrCat(name, ": requested ", count, ", free ", free, " of ",
                                        r.allocatable, hold ? " (canary reserve held)" : ""));
    }
  }
  if (demand.memory_mib > 0) {
    if (UsesSharedMemory(demand, supply)) return FitSharedMemory(demand, supply, occupancy);
    std::string named;
    std::optional<int64_t> dedicated = DedicatedMemory(demand, supply, named);
    if (dedicated && *dedicated < demand.memory_mib) {
      return Unresolvable("memory-larger-than-slice", absl::StrCat("GPU memory: requested ", demand.memory_mib, " MiB, ", named,
                                       " gives ", *dedicated, " MiB"));
    }
  }
  return {};
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

int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy) {
  if (demand.empty() || !Fit(demand, pod, supply, occupancy).fits()) return 0;
  // Utilisation of what the pod asks for, after placing it, averaged over its resources.
  double sum = 0;
  int parts = 0;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = supply.Find(name);
    if (!r || r->allocatable == 0) continue;
    sum += static_cast<double>(occupancy.Used(name) + count) / static_cast<double>(r->allocatable);
    ++parts;
  }
  if (std::optional<int> gpu = ChooseSharedGpu(demand, supply, occupancy)) {
    int64_t gpu_mib = *supply.gpu_memory_mib;
    int64_t used = gpu_mib - FreeOnGpu(occupancy, *gpu, gpu_mib) + demand.memory_mib;
    sum += static_cast<double>(used) / static_cast<double>(gpu_mib);
    ++parts;
  }
  double fullness = parts ? sum / parts : 0.0;
  ScoringStrategy strategy = pod.scoring.value_or(pod.policy->scoring);
  int score = static_cast<int>(
      std::lround(10.0 * (strategy == ScoringStrategy::kBinpack ? fullness : 1.0 - fullness)));
  // A pod that could live on shared GPUs (it asks for no MIG slice) from a tenant allowed to
  // share is steered off MIG pools: their hardware isolation is for tenants who need it.
  bool asks_mig = false;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = supply.Find(name);
    asks_mig |= r && r->kind == ResourceKind::kMigInstance;
  }
  if (supply.pool_mode == SharingMode::kMig && !asks_mig && pod.tenant.tier->modes.HasShared()) {
    score /= 2;
  }
  return std::clamp(score, 0, 10);
}

}  // namespace topology
