// DRA extended resources (KEP-5004, DRAExtendedResource): a pod that asks for a class's
// extendedResourceName (`nvidia.com/gpu` on the NVIDIA chart's gpu.nvidia.com class) or for
// `deviceclass.resource.kubernetes.io/<class>` in its container limits gets devices of that
// class from kube-scheduler, which makes an extended-resource claim for it at PreBind. A node
// cannot offer one name both ways, so on a node without device-plugin allocatable of the name
// the fit counts the node's free devices of the class instead:
//   devices the class's selectors match on the node
//   - those allocated claims hold (a multi-allocatable device only once the shares claims
//     hold of it leave too little for one more, topology/dra/capacity.h)
//   - what pods bound or assumed there ask of the name, unless their extended-resource claim
//     is allocated already (then its devices are in the line above).
// Pure; the per-node counts are built once with the DraState, so a fit reads counts.
//
//   FitResult r = FitWithDra(demand, pod, node, snapshot.dra());
//   // "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 2 free)"
#ifndef GPU_TENANCY_TOPOLOGY_DRA_EXTENDED_RESOURCES_H_
#define GPU_TENANCY_TOPOLOGY_DRA_EXTENDED_RESOURCES_H_

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "topology/demand.h"
#include "topology/dra/model.h"
#include "topology/facts.h"
#include "topology/fit.h"
#include "topology/snapshot.h"

namespace topology {

// The implicit name every device class may be requested under (ResourceDeviceClassPrefix).
inline constexpr absl::string_view kDeviceClassResourcePrefix =
    "deviceclass.resource.kubernetes.io/";

// Fills the set's extended_resources, node_counts (an entry per node with devices, allocated
// 0, no results), counted_for and slot_on_node from its devices and classes (MakeDraDeviceSet calls
// it). When two classes name the same extendedResourceName, the API says the one created later wins
// and, on a tie, the lexicographically first name; creation times are not in the model, so the
// lexicographically first name wins. A device is counted for a class when all the class's selectors
// are true for it; one whose selectors are not evaluated or fail is not counted, and the class's
// DraClassOnNode says so. Devices of slices not tied to one node are not counted.
void IndexDraExtendedResources(DraDeviceSet& set);
// An allocated claim's result with the index in DraState::devices() of the device it names.
struct DraHeldResult {
  uint32_t device = 0;
  const DraAllocationResult* result = nullptr;
};
using DraHeldResults = absl::InlinedVector<DraHeldResult, 4>;

// Add (sign +1) or remove (sign -1) an allocated claim's part of state.node_counts (a result
// per entry of `held_results`, the shares among them with what they consume, and each
// class's `allocated` and `shared`: a device counts once, however many results name it), and
// of extended_claim_pods. DraState::PutClaim and EraseClaim call them.
void CountDraHeldDevices(DraState& state, absl::Span<const DraHeldResult> held_results, int sign);
void CountDraExtendedClaimPods(DraState& state, const DraClaim& claim, int sign);

// The class that backs `resource` as a DRA extended resource, or null.
const DraDeviceClass* DraExtendedClass(const DraState& dra, absl::string_view resource);

// ComputeDemand keeps GPU names only (nvidia.com/*); this adds the pod's requests of the other
// names a class backs (deviceclass.resource.kubernetes.io/<class>, or an extendedResourceName
// outside nvidia.com/), with the same effective-request rules. InvalidArgument for a
// fractional or negative count, naming the resource.
[[nodiscard]] absl::Status AddDraExtendedDemand(const PodFacts& pod, const DraState& dra,
                                                GpuDemand& demand);
// ComputeDemand, then AddDraExtendedDemand: what every accounting and decision path counts.
[[nodiscard]] absl::StatusOr<GpuDemand> ComputeDemandWithDra(const PodFacts& pod,
                                                             const Policy& policy,
                                                             const DraState& dra);

// True when some of the demand's names are backed by a DRA class, so nodes without
// device-plugin allocatable of them need FitWithDra rather than Fit.
bool DemandUsesDra(const GpuDemand& demand, const DraState& dra);

// Fit for one node, with the demand's DRA-backed names counted on the node's devices of their
// class where the node has no device-plugin allocatable of the name (the rest goes through
// Fit as usual). Rules: kDraExceedsNode (unresolvable: fewer matching devices than asked),
// kDraExhausted (unschedulable: claims and pending pods hold them), kTierResource (the devices
// are whole GPUs, exclusive, MIG devices, mig, or multi-allocatable, timeslice (mig-shared for
// MIG devices), and the tier may not use one of the kinds the node's matching devices are: the
// allocator may give any), and Fit's own. A pending pod counts as a whole device of its class,
// shared or not, until its claim is allocated. GPU memory asked beside a DRA-backed name is not
// checked against the devices. The result's views point into `demand`, `pod`, `node` and `dra`.
FitResult FitWithDra(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                     const DraState& dra);

// Score with the same split: 0..10 by how full the node's devices of the class would be
// (binpack prefers fuller), 0 when FitWithDra does not fit.
int ScoreWithDra(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                 const DraState& dra);

// The MIG profile the pod's DRA devices on this node have, when they are MIG devices of one
// profile; "" otherwise (for Place's record of the placement).
absl::string_view DraMigProfile(const GpuDemand& demand, const NodeState& node,
                                const DraState& dra);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_EXTENDED_RESOURCES_H_
