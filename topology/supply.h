// What a node offers: its GPU resources classified by isolation (whole GPU, MIG instance, shared
// replica), the memory behind each, its pool, and whether MIG is being reconfigured or about to
// be (drift). Derived from GFD / device-plugin / mig-manager labels and status.allocatable (see
// docs/wire/gfd-labels.md).
#ifndef GPU_TENANCY_TOPOLOGY_SUPPLY_H_
#define GPU_TENANCY_TOPOLOGY_SUPPLY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/resource_counts.h"
#include "topology/wellknown.h"

namespace topology {

enum class ResourceKind { kWholeGpu, kMigInstance, kSharedReplica };

struct OfferedResource {
  std::string name;  // "nvidia.com/mig-3g.40gb"
  size_t key = 0;    // ResourceKey(name)
  ResourceKind kind = ResourceKind::kWholeGpu;
  SharingMode mode = SharingMode::kExclusive;
  int64_t allocatable = 0;
  std::string mig_profile;  // "3g.40gb" for MIG instances and shared MIG replicas
  // Memory one unit gives a pod: the MIG instance's memory or the whole GPU's. For a shared
  // replica it is the memory of the GPU behind it, which all its replicas share.
  std::optional<int64_t> memory_mib;
};

struct NodeSupply {
  std::string name;
  std::string product;                    // GFD product label as found
  const GpuModel* model = nullptr;        // null for products the catalog does not know
  std::optional<int64_t> gpu_memory_mib;  // per physical GPU
  int replicas_per_gpu = 1;
  std::vector<OfferedResource> resources;  // sorted by name
  std::string pool;                        // label value, or derived from the sharing labels
  // nullopt: no GPUs, or labelled with a pool that a policy defining pools lacks.
  std::optional<SharingMode> pool_mode;
  bool pool_labelled = false;
  // Non-empty while mig-manager reconfigures the node ("pending", "rebooting", "failed") or
  // has paused the device plugin for it.
  std::string mig_unsettled;
  // Non-empty when mig-manager reports the node settled but it shows a geometry other than its
  // nvidia.com/mig.config predicts (by the catalog's mig-parted config, else NVIDIA's default
  // configs): the reason, naming the config and the differences (topology/mig_drift.h). mig-manager
  // re-cuts such a node when it next runs.
  std::string mig_drift;

  // The offer of a resource, or null. The second form takes a demand's entry and hashes nothing.
  const OfferedResource* Find(absl::string_view resource) const;
  const OfferedResource* Find(const ResourceCount& resource) const;
  bool HasGpus() const { return !resources.empty(); }
  // Physical GPUs behind a shared resource (allocatable / replicas), at least 1.
  int64_t SharedGpuCount(const OfferedResource& shared) const;
};

// Classifies one extended resource name the way the device plugin advertises it on this node.
// Returns nullopt for names that are not GPU resources (cpu, memory, hugepages...).
struct ResourceClass {
  ResourceKind kind;
  SharingMode mode;
  std::string mig_profile;
};
std::optional<ResourceClass> ClassifyResource(absl::string_view resource, const Labels& node_labels,
                                              const Policy& policy);

NodeSupply BuildNodeSupply(const NodeFacts& node, const Catalog& catalog, const Policy& policy);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_SUPPLY_H_
