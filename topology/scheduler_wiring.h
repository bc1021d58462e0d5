// The resource names kube-scheduler must send to the extender. kube-scheduler calls an extender
// only for pods that request one of its managedResources, so a GPU name missing from that list
// is placed by kube-scheduler alone: no pool check, no quota, no assume cache. The list is
// derived from the catalog and the policy instead of written by hand, so a new GPU model or a
// configured shared name cannot be forgotten (`gpu-tenancy scheduler-config` prints it).
//
//   for (const ManagedResource& r : ManagedResources(BuiltinCatalog(), policy)) ...
#ifndef GPU_TENANCY_TOPOLOGY_SCHEDULER_WIRING_H_
#define GPU_TENANCY_TOPOLOGY_SCHEDULER_WIRING_H_

#include <string>
#include <vector>

#include "topology/catalog.h"
#include "topology/facts.h"
#include "topology/policy.h"

namespace topology {

// Where a managed name comes from, for the comments of the generated configuration.
enum class ManagedKind {
  kWholeGpu,          // nvidia.com/gpu
  kSharedGpu,         // nvidia.com/gpu.shared (time-slicing or MPS, renamed)
  kMig,               // nvidia.com/mig-<profile> of a catalog model
  kSharedMig,         // nvidia.com/mig-<profile>.shared: a MIG instance time-sliced
  kConfiguredShared,  // the policy's sharedResources
  kMemory,            // the policy's memoryResources: virtual, advertised by no node
  // deviceclass.resource.kubernetes.io/<class> of the policy's GPU device classes (those named
  // without a '*'): DRA extended resources, which no node's allocatable lists either.
  kDraClass,
};

struct ManagedResource {
  std::string name;
  ManagedKind kind = ManagedKind::kWholeGpu;
  // True for the virtual memory names only: no node advertises them, so kube-scheduler's own
  // fit check would reject every node; the extender alone counts them.
  bool ignored_by_scheduler = false;

  bool operator==(const ManagedResource&) const = default;
};

// Every GPU resource name the catalog and the policy imply, each once, in a stable order:
// nvidia.com/gpu and nvidia.com/gpu.shared; every MIG profile of every model as the NVIDIA
// device plugin names it ("+" written "."), in catalog order; the same profiles with ".shared";
// the configured shared names; the memory names; the implicit DRA extended resource of each
// GPU device class the policy names.
std::vector<ManagedResource> ManagedResources(const Catalog& catalog, const Policy& policy);

// Keeps the names some node advertises in its allocatable, and every memory and DRA class name
// (no node advertises those; they are what a pod declares). A name dropped here is one no node can
// satisfy today, so kube-scheduler would leave such a pod pending without the extender too;
// after a node gains a new MIG geometry the list must be regenerated.
std::vector<ManagedResource> AdvertisedOnly(const std::vector<ManagedResource>& resources,
                                            const std::vector<NodeFacts>& nodes);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_SCHEDULER_WIRING_H_
