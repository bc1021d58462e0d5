#include "topology/fit.h"

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace topology {
namespace {

// A rejection; its reason is written only when the caller wants one (Score does not), into the
// caller's buffer, so deciding many nodes allocates nothing per node.
template <typename... Parts>
FitVerdict Reject(Verdict verdict, absl::string_view code, std::string* reason,
                  const Parts&... parts) {
  if (reason) {
    reason->clear();
    absl::StrAppend(reason, parts...);
  }
  return {verdict, code};
}
template <typename... Parts>
FitVerdict Unresolvable(absl::string_view code, std::string* reason, const Parts&... parts) {
  return Reject(Verdict::kUnresolvable, code, reason, parts...);
}
template <typename... Parts>
FitVerdict Unschedulable(absl::string_view code, std::string* reason, const Parts&... parts) {
  return Reject(Verdict::kUnschedulable, code, reason, parts...);
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

FitVerdict FitSharedMemory(const GpuDemand& demand, const NodeSupply& supply,
                           const NodeOccupancy& occupancy, std::string* reason) {
  std::optional<SharedGpus> gpus = SharedGpusFor(demand, supply);
  if (!gpus) {
    if (demand.devices.empty()) {
      return Unresolvable("memory-no-shared-gpu", reason,
                          "GPU memory: node has no shared GPU to hold a memory-only request");
    }
    return Unresolvable(
        "memory-unknown", reason,
        "GPU memory: size unknown (no nvidia.com/gpu.memory label and product not in catalog)");
  }
  if (demand.memory_mib > gpus->memory_mib) {
    return Unresolvable("memory-larger-than-gpu", reason, "GPU memory: requested ",
                        demand.memory_mib, " MiB, larger than one GPU (", gpus->memory_mib,
                        " MiB)");
  }
  int64_t node_free = gpus->count * gpus->memory_mib - occupancy.SharedMemoryUsedMiB();
  int64_t best = 0;
  for (int i = 0; i < gpus->count; ++i) best = std::max(best, FreeOnGpu(occupancy, i, gpus->memory_mib));
  best = std::min(best, node_free);
  if (best < demand.memory_mib) {
    return Unschedulable("memory-exhausted", reason, "GPU memory: requested ", demand.memory_mib,
                         " MiB, largest free on one GPU ", std::max<int64_t>(0, best), " MiB of ",
                         gpus->memory_mib);
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

namespace {

// What FitCore and ScoreCore read of a node. FullView asks NodeSupply and NodeOccupancy;
// SummaryView answers the common questions from a NodeFitSummary (packed beside the snapshot's
// index entry) and asks the supply and occupancy it summarises only for the rest: reasons that
// name the pool or the GPU model, and GPU memory. One implementation of the rules, two ways
// to read the node, so both paths decide identically.
class FullView {
 public:
  FullView(const NodeSupply& supply, const NodeOccupancy& occupancy)
      : supply_(supply), occupancy_(occupancy) {}
  const NodeSupply& supply() const { return supply_; }
  const NodeOccupancy& occupancy() const { return occupancy_; }
  bool HasGpus() const { return supply_.HasGpus(); }
  bool MigUnsettled() const { return !supply_.mig_unsettled.empty(); }
  const std::optional<SharingMode>& PoolMode() const { return supply_.pool_mode; }
  // `k` is the position of `name` in demand.devices.
  const OfferedResource* Find(size_t /*k*/, absl::string_view name) const {
    return supply_.Find(name);
  }
  int64_t Used(const OfferedResource& /*r*/, absl::string_view name) const {
    return occupancy_.Used(name);
  }

 private:
  const NodeSupply& supply_;
  const NodeOccupancy& occupancy_;
};

class SummaryView {
 public:
  SummaryView(const NodeFitSummary& summary, const DemandKeys& keys, const NodeSupply& supply,
              const NodeOccupancy& occupancy)
      : summary_(summary), keys_(keys), supply_(supply), occupancy_(occupancy) {}
  const NodeSupply& supply() const { return supply_; }
  const NodeOccupancy& occupancy() const { return occupancy_; }
  bool HasGpus() const { return summary_.has_gpus; }
  bool MigUnsettled() const { return summary_.mig_unsettled; }
  const std::optional<SharingMode>& PoolMode() const { return summary_.pool_mode; }
  // The first resource with this name, as NodeSupply::Find. A hash that differs proves the
  // name differs; an equal one is confirmed against the name itself.
  const OfferedResource* Find(size_t k, absl::string_view name) const {
    for (size_t j = 0; j < summary_.count; ++j) {
      const NodeFitSummary::Resource& r = summary_.resources[j];
      if (r.name_hash == keys_.name_hashes[k] && r.offered->name == name) return r.offered;
    }
    return nullptr;
  }
  int64_t Used(const OfferedResource& offered, absl::string_view /*name*/) const {
    for (size_t j = 0; j < summary_.count; ++j) {
      if (summary_.resources[j].offered == &offered) return summary_.resources[j].used;
    }
    return 0;  // not reached: `offered` came from Find
  }

 private:
  const NodeFitSummary& summary_;
  const DemandKeys& keys_;
  const NodeSupply& supply_;
  const NodeOccupancy& occupancy_;
};

// The decision, with the reason written into `*reason` when `reason` is not null.
template <typename View>
FitVerdict FitCore(const GpuDemand& demand, const PodContext& pod, const View& node,
                   std::string* reason) {
  if (demand.empty()) return {};
  if (pod.tenant.Denied()) {
    return Unresolvable("tenant-denied", reason, "tenant ", pod.tenant.name,
                        " is not allowed GPUs by policy");
  }
  const Tier& tier = *pod.tenant.tier;
  if (!node.HasGpus()) return Unresolvable("no-gpu", reason, "no NVIDIA GPU on node");
  if (node.MigUnsettled()) {
    return Unresolvable("mig-reconfiguring", reason, "MIG reconfiguration in progress (",
                        node.supply().mig_unsettled, ")");
  }
  if (!node.PoolMode()) {
    return Unresolvable("pool-undefined", reason, "pool ", node.supply().pool,
                        " is not defined in the policy");
  }
  if (!tier.modes.Has(*node.PoolMode())) {
    return Unresolvable("tier-pool", reason, "pool ", node.supply().pool, " (",
                        ModeName(*node.PoolMode()), ") is not allowed for tier ", tier.name);
  }
  // Resource and mode checks first: they never change by waiting, so they win over counts.
  // Each resource is looked up once; pods ask for one or two.
  absl::InlinedVector<const OfferedResource*, 4> offered;
  size_t k = 0;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = node.Find(k++, name);
    if (!r || r->allocatable == 0) {
      const NodeSupply& supply = node.supply();
      if (r && !r->mig_profile.empty() && supply.model &&
          !supply.model->FindProfile(r->mig_profile)) {
        return Unresolvable("profile-unsupported", reason, "GPU model ", supply.model->model,
                            " has no MIG profile ", r->mig_profile);
      }
      return Unresolvable("not-offered", reason, name, ": not offered by node");
    }
    if (!tier.modes.Has(r->mode)) {
      return Unresolvable("tier-resource", reason, name, " is ", ModeName(r->mode),
                          " here, not allowed for tier ", tier.name);
    }
    offered.push_back(r);
  }
  k = 0;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource& r = *offered[k++];
    int64_t hold = CanaryHold(pod, r);
    int64_t free = std::max<int64_t>(0, r.allocatable - node.Used(r, name) - hold);
    if (count > r.allocatable - hold) {
      return Unresolvable("exceeds-node", reason, name, ": requested ", count, ", node has ",
                          r.allocatable - hold, hold ? " outside the canary reserve" : "");
    }
    if (count > free) {
      return Unschedulable("exhausted", reason, name, ": requested ", count, ", free ", free,
                           " of ", r.allocatable, hold ? " (canary reserve held)" : "");
    }
  }
  if (demand.memory_mib > 0) {
    const NodeSupply& supply = node.supply();
    if (UsesSharedMemory(demand, supply)) {
      return FitSharedMemory(demand, supply, node.occupancy(), reason);
    }
    std::string named;
    std::optional<int64_t> dedicated = DedicatedMemory(demand, supply, named);
    if (dedicated && *dedicated < demand.memory_mib) {
      return Unresolvable("memory-larger-than-slice", reason, "GPU memory: requested ",
                          demand.memory_mib, " MiB, ", named, " gives ", *dedicated, " MiB");
    }
  }
  return {};
}

template <typename View>
int ScoreCore(const GpuDemand& demand, const PodContext& pod, const View& node);

}  // namespace

FitVerdict Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
               const NodeOccupancy& occupancy, std::string& reason) {
  reason.clear();
  return FitCore(demand, pod, FullView(supply, occupancy), &reason);
}

FitResult Fit(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
              const NodeOccupancy& occupancy) {
  FitResult out;
  FitVerdict v = FitCore(demand, pod, FullView(supply, occupancy), &out.reason);
  out.verdict = v.verdict;
  out.code = v.code;
  return out;
}

NodeFitSummary SummarizeForFit(const NodeSupply& supply, const NodeOccupancy& occupancy) {
  NodeFitSummary s;
  s.has_gpus = supply.HasGpus();
  s.mig_unsettled = !supply.mig_unsettled.empty();
  s.pool_mode = supply.pool_mode;
  if (supply.resources.size() > NodeFitSummary::kMaxResources) return s;  // not usable
  for (const OfferedResource& r : supply.resources) {
    NodeFitSummary::Resource& out = s.resources[s.count++];
    out.name_hash = absl::Hash<absl::string_view>{}(r.name);
    out.offered = &r;
    out.used = occupancy.Used(r.name);
  }
  s.usable = true;
  return s;
}

DemandKeys MakeDemandKeys(const GpuDemand& demand) {
  DemandKeys keys;
  for (const auto& [name, count] : demand.devices) {
    keys.name_hashes.push_back(absl::Hash<absl::string_view>{}(name));
  }
  return keys;
}

FitVerdict Fit(const GpuDemand& demand, const DemandKeys& keys, const PodContext& pod,
               const NodeFitSummary& summary, const NodeSupply& supply,
               const NodeOccupancy& occupancy, std::string& reason) {
  reason.clear();
  if (!summary.usable) return FitCore(demand, pod, FullView(supply, occupancy), &reason);
  return FitCore(demand, pod, SummaryView(summary, keys, supply, occupancy), &reason);
}

int ScoreFitting(const GpuDemand& demand, const DemandKeys& keys, const PodContext& pod,
                 const NodeFitSummary& summary, const NodeSupply& supply,
                 const NodeOccupancy& occupancy) {
  if (!summary.usable) return ScoreCore(demand, pod, FullView(supply, occupancy));
  return ScoreCore(demand, pod, SummaryView(summary, keys, supply, occupancy));
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

template <typename View>
int ScoreCore(const GpuDemand& demand, const PodContext& pod, const View& node) {
  if (demand.empty()) return 0;
  // Utilisation of what the pod asks for, after placing it, averaged over its resources.
  double sum = 0;
  int parts = 0;
  size_t k = 0;
  absl::InlinedVector<const OfferedResource*, 4> offered;
  for (const auto& [name, count] : demand.devices) {
    const OfferedResource* r = node.Find(k++, name);
    offered.push_back(r);
    if (!r || r->allocatable == 0) continue;
    sum += static_cast<double>(node.Used(*r, name) + count) / static_cast<double>(r->allocatable);
    ++parts;
  }
  if (demand.memory_mib > 0) {  // ChooseSharedGpu is nullopt without a memory request
    const NodeSupply& supply = node.supply();
    if (std::optional<int> gpu = ChooseSharedGpu(demand, supply, node.occupancy())) {
      int64_t gpu_mib = *supply.gpu_memory_mib;
      int64_t used = gpu_mib - FreeOnGpu(node.occupancy(), *gpu, gpu_mib) + demand.memory_mib;
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
  if (node.PoolMode() == SharingMode::kMig && !asks_mig && pod.tenant.tier->modes.HasShared()) {
    score /= 2;
  }
  return std::clamp(score, 0, 10);
}

}  // namespace

int Score(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
          const NodeOccupancy& occupancy) {
  FullView node(supply, occupancy);
  if (demand.empty() || !FitCore(demand, pod, node, nullptr).fits()) return 0;
  return ScoreCore(demand, pod, node);
}

int ScoreFitting(const GpuDemand& demand, const PodContext& pod, const NodeSupply& supply,
                 const NodeOccupancy& occupancy) {
  return ScoreCore(demand, pod, FullView(supply, occupancy));
}

}  // namespace topology
