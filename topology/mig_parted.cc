#include "topology/mig_parted.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/wellknown.h"

namespace topology {

const MigPartedLayout* MigPartedFile::Find(absl::string_view name) const {
  for (const MigPartedLayout& l : layouts) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

std::vector<std::string> MigPartedFile::Names() const {
  std::vector<std::string> out;
  for (const MigPartedLayout& l : layouts) out.push_back(l.name);
  return out;
}

absl::StatusOr<NodeGeometry> ResolveGeometry(const MigPartedLayout& layout, const GpuModel& model,
                                             int gpu_count) {
  NodeGeometry out;
  out.layout = layout.name;
  std::vector<std::optional<GpuGeometry>> gpus(gpu_count);
  for (size_t e = 0; e < layout.entries.size(); ++e) {
    const MigPartedEntry& entry = layout.entries[e];
    std::string where = absl::StrCat("mig-configs.", layout.name, "[", e, "]");
    std::vector<const MigProfile*> profiles;
    std::string unknown;
    for (const auto& [name, count] : entry.mig_devices) {
      const MigProfile* p = model.FindProfile(name);
      if (p == nullptr) {
        unknown = name;
        break;
      }
      if (count < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": mig-devices.", name, " must not be negative"));
      }
      for (int i = 0; i < count; ++i) profiles.push_back(p);
    }
    if (!entry.mig_enabled && !entry.mig_devices.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": mig-devices given with mig-enabled: false"));
    }
    if (!unknown.empty()) {
      if (!entry.device_filter.empty()) {
        out.skipped.push_back(absl::StrCat(where, " (device-filter ",
                                           absl::StrJoin(entry.device_filter, ","), ": ", unknown,
                                           " does not exist on ", model.model, ")"));
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": profile ", unknown, " does not exist on ", model.model));
    }
    std::vector<int> indexes = entry.devices;
    if (entry.all_devices) {
      indexes.clear();
      for (int i = 0; i < gpu_count; ++i) indexes.push_back(i);
    }
    GpuGeometry cut;
    cut.mig_enabled = entry.mig_enabled;
    if (entry.mig_enabled) {
      std::optional<std::vector<PlacedInstance>> placed = PlaceProfiles(model, profiles);
      if (!placed) {
        std::vector<std::string> wanted;
        for (const auto& [name, count] : entry.mig_devices)
          wanted.push_back(absl::StrCat(count, "x ", name));
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", absl::StrJoin(wanted, " + "), " has no valid placement on ",
                         model.model, " (memory slices overlap or a profile exceeds its count)"));
      }
      cut.instances = *std::move(placed);
    }
    for (int i : indexes) {
      if (i < 0 || i >= gpu_count) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": device ", i, " does not exist (the node has ", gpu_count, " GPUs)"));
      }
      if (gpus[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": GPU ", i, " is already cut by an earlier entry"));
      }
      gpus[i] = cut;
      gpus[i]->index = i;
    }
  }
  for (int i = 0; i < gpu_count; ++i) {
    if (!gpus[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mig-configs.", layout.name, " says nothing about GPU ", i, " of ", gpu_count,
          " on this node, so what it offers afterwards cannot be predicted"));
    }
    out.gpus.push_back(*std::move(gpus[i]));
  }
  return out;
}

absl::StatusOr<ExpectedOffer> PredictOffer(const NodeGeometry& geometry, MigStrategy strategy,
                                           absl::string_view parent_product) {
  ExpectedOffer out;
  out.strategy = strategy;
  std::string gpu(kGpuResource);
  if (strategy == MigStrategy::kMixed) {
    out.allocatable[gpu] = 0;
    // Counted per profile first: a node of 8 GPUs cut alike names a profile 56 times, and the
    // drift check predicts every settled MIG node on each snapshot build.
    std::map<const MigProfile*, int64_t> instances;
    for (const GpuGeometry& g : geometry.gpus) {
      if (!g.mig_enabled) {
        ++out.allocatable[gpu];
        continue;
      }
      for (const PlacedInstance& inst : g.instances) ++instances[inst.profile];
    }
    for (const auto& [profile, count] : instances) {
      out.allocatable[absl::StrCat(kMigResourcePrefix, profile->ResourceSuffix())] += count;
    }
    return out;
  }
  // Single: one profile (or none) on every GPU, each instance one nvidia.com/gpu.
  std::optional<std::string> profile;
  int64_t count = 0;
  for (const GpuGeometry& g : geometry.gpus) {
    std::string this_gpu;
    if (g.mig_enabled) {
      for (const PlacedInstance& inst : g.instances) {
        if (!this_gpu.empty() && this_gpu != inst.profile->ResourceSuffix()) {
          this_gpu.assign(1, '*');  // not = "*": GCC 12 at -O3 warns falsely (-Wrestrict)
          break;
        }
        this_gpu = inst.profile->ResourceSuffix();
      }
      if (this_gpu.empty()) this_gpu.assign(1, '*');  // MIG enabled without instances
    }
    if (this_gpu == "*" || (profile && *profile != this_gpu)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mig-configs.", geometry.layout,
          " cuts the GPUs differently, which the single MIG strategy cannot advertise (GFD labels "
          "the node ",
          parent_product, "-MIG-INVALID); use one profile on every GPU or the mixed strategy"));
    }
    profile = this_gpu;
    count += g.mig_enabled ? static_cast<int64_t>(g.instances.size()) : 1;
  }
  out.allocatable[gpu] = count;
  out.product = profile && !profile->empty() ? absl::StrCat(parent_product, "-MIG-", *profile)
                                             : std::string(parent_product);
  return out;
}

std::vector<std::string> CompareOffer(const ExpectedOffer& expected,
                                      const ObservedOffer& observed) {
  std::map<std::string, int64_t> keys = expected.allocatable;
  if (expected.strategy == MigStrategy::kMixed) {
    for (const auto& [name, count] : observed.allocatable) {
      if (absl::StartsWith(name, kMigResourcePrefix)) keys.emplace(name, 0);
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, _] : keys) {
    auto want = expected.allocatable.find(name);
    auto have = observed.allocatable.find(name);
    int64_t w = want == expected.allocatable.end() ? 0 : want->second;
    int64_t h = have == observed.allocatable.end() ? 0 : have->second;
    if (w != h) out.push_back(absl::StrCat(name, ": expected ", w, ", node shows ", h));
  }
  if (expected.product) {
    auto have = observed.labels.find(std::string(kProductLabel));
    std::string h = have == observed.labels.end() ? "" : have->second;
    if (h != *expected.product) {
      out.push_back(absl::StrCat(kProductLabel, ": expected ", *expected.product, ", node shows ",
                                 h.empty() ? "nothing" : h));
    }
  }
  for (const auto& [key, value] : observed.labels) {
    if (absl::StartsWith(key, kDeployLabelPrefix) && value == kPausedForMigChange) {
      out.push_back(absl::StrCat(key, " is still ", kPausedForMigChange));
    }
  }
  return out;
}

ExpectedOffer OfferOf(const ObservedOffer& observed, MigStrategy strategy) {
  ExpectedOffer out;
  out.strategy = strategy;
  std::string gpu(kGpuResource);
  for (const auto& [name, count] : observed.allocatable) {
    if (name == gpu || absl::StartsWith(name, kMigResourcePrefix)) out.allocatable[name] = count;
  }
  if (!out.allocatable.count(gpu)) out.allocatable[gpu] = 0;
  if (strategy == MigStrategy::kSingle) {
    auto product = observed.labels.find(std::string(kProductLabel));
    if (product != observed.labels.end()) out.product = product->second;
  }
  return out;
}

std::vector<std::string> DescribeGeometry(const NodeGeometry& geometry) {
  std::vector<std::string> out;
  for (const GpuGeometry& g : geometry.gpus) {
    if (!g.mig_enabled) {
      out.push_back(absl::StrCat("GPU ", g.index, ": MIG disabled"));
      continue;
    }
    std::vector<std::string> parts;
    for (const auto& [profile, n] : CountProfiles(g.instances))
      parts.push_back(absl::StrCat(n, "x ", profile->name));
    out.push_back(
        absl::StrCat("GPU ", g.index, ": ",
                     parts.empty() ? "MIG enabled, no instances" : absl::StrJoin(parts, " + ")));
  }
  return out;
}

const MigProfile* SmallestProfile(const NodeGeometry& geometry) {
  const MigProfile* best = nullptr;
  for (const GpuGeometry& g : geometry.gpus) {
    for (const PlacedInstance& inst : g.instances) {
      const MigProfile* p = inst.profile;
      if (best == nullptr || p->memory_slices < best->memory_slices ||
          (p->memory_slices == best->memory_slices && p->compute_slices < best->compute_slices)) {
        best = p;
      }
    }
  }
  return best;
}

}  // namespace topology
