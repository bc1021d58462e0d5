#include "topology/scheduler_wiring.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "topology/dra/extended_resources.h"
#include "topology/wellknown.h"

namespace topology {

std::vector<ManagedResource> ManagedResources(const Catalog& catalog, const Policy& policy) {
  std::vector<ManagedResource> out;
  absl::flat_hash_set<std::string> seen;
  auto add = [&](std::string name, ManagedKind kind, bool ignored) {
    if (name.empty() || !seen.insert(name).second) return;
    out.push_back({std::move(name), kind, ignored});
  };
  add(std::string(kGpuResource), ManagedKind::kWholeGpu, false);
  add(absl::StrCat(kGpuResource, kSharedSuffix), ManagedKind::kSharedGpu, false);
  // Models share profile names (A100 80GB and H100 80GB both have 1g.10gb): the first model
  // that has a name places it.
  std::vector<std::string> mig;
  for (const GpuModel& model : catalog.models()) {
    for (const MigProfile& profile : model.profiles) {
      mig.push_back(absl::StrCat(kMigResourcePrefix, profile.ResourceSuffix()));
    }
  }
  for (const std::string& name : mig) add(name, ManagedKind::kMig, false);
  for (const std::string& name : mig) {
    add(absl::StrCat(name, kSharedSuffix), ManagedKind::kSharedMig, false);
  }
  for (const std::string& name : policy.shared_resources) {
    add(name, ManagedKind::kConfiguredShared, false);
  }
  for (const std::string& name : policy.memory_resources) add(name, ManagedKind::kMemory, true);
  for (const std::string& device_class : policy.admission.gpu_device_classes) {
    if (device_class.find('*') != std::string::npos) continue;  // no one name to list
    add(absl::StrCat(kDeviceClassResourcePrefix, device_class), ManagedKind::kDraClass, false);
  }
  return out;
}

std::vector<ManagedResource> AdvertisedOnly(const std::vector<ManagedResource>& resources,
                                            const std::vector<NodeFacts>& nodes) {
  absl::flat_hash_set<std::string> advertised;
  for (const NodeFacts& node : nodes) {
    for (const auto& [name, quantity] : node.allocatable) advertised.insert(name);
  }
  std::vector<ManagedResource> out;
  for (const ManagedResource& r : resources) {
    if (r.kind == ManagedKind::kMemory || r.kind == ManagedKind::kDraClass ||
        advertised.contains(r.name)) {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace topology
