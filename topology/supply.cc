#include "topology/supply.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "topology/mig_drift.h"

namespace topology {
namespace {

absl::string_view Label(const Labels& labels, absl::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? absl::string_view() : absl::string_view(it->second);
}

std::optional<int64_t> IntLabel(const Labels& labels, absl::string_view key) {
  int64_t value = 0;
  absl::string_view text = Label(labels, key);
  if (text.empty() || !absl::SimpleAtoi(text, &value) || value < 0) return std::nullopt;
  return value;
}

bool NodeShares(const Labels& labels) {
  absl::string_view strategy = Label(labels, kSharingStrategyLabel);
  std::optional<int64_t> replicas = IntLabel(labels, kReplicasLabel);
  return (strategy == "time-slicing" || strategy == "mps") && replicas && *replicas > 1;
}

SharingMode SharedModeOf(const Labels& labels) {
  return Label(labels, kSharingStrategyLabel) == "mps" ? SharingMode::kMps
                                                       : SharingMode::kTimeslice;
}

// The weakest isolation any of the node's resources gives decides the derived pool.
SharingMode DerivedPoolMode(const std::vector<OfferedResource>& resources) {
  SharingMode weakest = SharingMode::kExclusive;
  for (const OfferedResource& r : resources) {
    if (r.allocatable > 0 && static_cast<int>(r.mode) > static_cast<int>(weakest)) {
      weakest = r.mode;
    }
  }
  return weakest;
}

// A node offers a handful of GPU resources: a scan comparing keys beats a binary search that
// reads names.
const OfferedResource* FindOffer(const std::vector<OfferedResource>& resources,
                                 absl::string_view name, size_t key) {
  for (const OfferedResource& r : resources) {
    if (r.key == key && r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

const OfferedResource* NodeSupply::Find(absl::string_view resource) const {
  return FindOffer(resources, resource, ResourceKey(resource));
}

const OfferedResource* NodeSupply::Find(const ResourceCount& resource) const {
  return FindOffer(resources, resource.name, resource.key);
}

int64_t NodeSupply::SharedGpuCount(const OfferedResource& shared) const {
  int64_t replicas = std::max(1, replicas_per_gpu);
  return std::max<int64_t>(1, shared.allocatable / replicas);
}

std::optional<ResourceClass> ClassifyResource(absl::string_view resource, const Labels& labels,
                                              const Policy& policy) {
  if (resource == kGpuResource) {
    // With renameByDefault the replicas move to nvidia.com/gpu.shared and GFD drops the
    // "-SHARED" product suffix; without it, nvidia.com/gpu itself is the shared replica.
    absl::string_view product_label = Label(labels, kProductLabel);
    ProductName product = SplitProduct(product_label);
    if (NodeShares(labels) && (product.shared || product_label.empty())) {
      return ResourceClass{ResourceKind::kSharedReplica, SharedModeOf(labels), ""};
    }
    // Single strategy: every nvidia.com/gpu is a MIG device of the profile in the product label.
    if (Label(labels, kMigStrategyLabel) == "single" && !product.mig_profile.empty() &&
        product.mig_profile != "INVALID") {
      return ResourceClass{ResourceKind::kMigInstance, SharingMode::kMig, product.mig_profile};
    }
    return ResourceClass{ResourceKind::kWholeGpu, SharingMode::kExclusive, ""};
  }
  if (absl::StartsWith(resource, kMigResourcePrefix)) {
    absl::string_view profile = resource.substr(kMigResourcePrefix.size());
    if (absl::EndsWith(profile, kSharedSuffix)) {
      profile.remove_suffix(kSharedSuffix.size());
      return ResourceClass{ResourceKind::kSharedReplica, SharingMode::kMigShared,
                           std::string(profile)};
    }
    return ResourceClass{ResourceKind::kMigInstance, SharingMode::kMig, std::string(profile)};
  }
  if (resource == absl::StrCat(kGpuResource, kSharedSuffix)) {
    return ResourceClass{ResourceKind::kSharedReplica, SharedModeOf(labels), ""};
  }
  if (policy.IsConfiguredShared(resource)) {
    return ResourceClass{ResourceKind::kSharedReplica, SharingMode::kTimeslice, ""};
  }
  return std::nullopt;
}

NodeSupply BuildNodeSupply(const NodeFacts& node, const Catalog& catalog, const Policy& policy) {
  NodeSupply supply;
  supply.name = node.name;
  const Labels& labels = node.labels;
  supply.product = std::string(Label(labels, kProductLabel));
  supply.model = supply.product.empty() ? nullptr : catalog.MatchProduct(supply.product);
  const bool single_mig = Label(labels, kMigStrategyLabel) == "single" &&
                          !SplitProduct(supply.product).mig_profile.empty();
  // Under the single strategy gpu.memory describes the MIG device, not the parent GPU.
  if (!single_mig) supply.gpu_memory_mib = IntLabel(labels, kGpuMemoryLabel);
  if (supply.gpu_memory_mib.value_or(0) <= 0 && supply.model) {
    supply.gpu_memory_mib = supply.model->total_memory_mib;
  }
  if (supply.gpu_memory_mib && *supply.gpu_memory_mib <= 0) supply.gpu_memory_mib.reset();
  if (NodeShares(labels))
    supply.replicas_per_gpu = static_cast<int>(*IntLabel(labels, kReplicasLabel));

  for (const auto& [name, quantity] : node.allocatable) {
    std::optional<ResourceClass> cls = ClassifyResource(name, labels, policy);
    if (!cls) continue;
    OfferedResource r;
    r.name = name;
    r.key = ResourceKey(name);
    r.kind = cls->kind;
    r.mode = cls->mode;
    r.mig_profile = cls->mig_profile;
    r.allocatable = std::max<int64_t>(0, quantity.Value());
    if (!r.mig_profile.empty()) {
      // Live per-profile memory from GFD first, the catalog second.
      std::optional<int64_t> mib =
          single_mig ? IntLabel(labels, kGpuMemoryLabel)
                     : IntLabel(labels, absl::StrCat(kMigResourcePrefix, r.mig_profile, ".memory"));
      if (!mib && supply.model) {
        if (const MigProfile* p = supply.model->FindProfile(r.mig_profile)) mib = p->memory_mib;
      }
      r.memory_mib = mib;
    } else {
      r.memory_mib = supply.gpu_memory_mib;
    }
    supply.resources.push_back(std::move(r));
  }
  std::sort(supply.resources.begin(), supply.resources.end(),
            [](const OfferedResource& a, const OfferedResource& b) { return a.name < b.name; });

  absl::string_view pool_label = Label(labels, policy.pool_label);
  if (!pool_label.empty()) {
    supply.pool = std::string(pool_label);
    supply.pool_labelled = true;
    if (const Pool* pool = policy.FindPool(pool_label)) {
      supply.pool_mode = pool->mode;
    } else if (policy.pools.empty() && supply.HasGpus()) {
      // A policy that defines no pools judges a labelled node by what it offers. One that
      // defines pools fails closed on a label it does not know (likely a typo).
      supply.pool_mode = DerivedPoolMode(supply.resources);
    }
  } else if (supply.HasGpus()) {
    supply.pool_mode = DerivedPoolMode(supply.resources);
    supply.pool = std::string(ModeName(*supply.pool_mode));
  }

  absl::string_view mig_state = Label(labels, kMigConfigStateLabel);
  if (!mig_state.empty() && mig_state != "success") {
    supply.mig_unsettled = absl::StrCat(kMigConfigStateLabel, "=", mig_state);
  } else {
    for (const auto& [key, value] : labels) {
      if (absl::StartsWith(key, kDeployLabelPrefix) && value == kPausedForMigChange) {
        supply.mig_unsettled = absl::StrCat(key, "=", value);
        break;
      }
    }
  }
  // Only a settled node can drift; the cheap label test keeps the comparison off other nodes.
  if (supply.mig_unsettled.empty() && mig_state == "success") {
    MigDrift drift = CheckMigDrift(node, catalog);
    if (drift.drifted()) supply.mig_drift = std::move(drift.why);
  }
  return supply;
}

}  // namespace topology
