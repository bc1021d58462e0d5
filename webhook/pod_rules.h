// What the pod rows of the rule table (rule_table.h) read: a Pod parsed once into a PodView
// (the parts of the Pod the rules care about), and how the webhook sees resource names. The pod
// rules, each appending Violations whose message starts with the rule id:
//
//   device-annotation               gpu-tenancy.io/devices written by anyone but the node agent
//                                   of the pod's node (device_annotation_rules.h)
//   unknown-tenant                  GPU requests, claims for GPUs or device access from a
//                                   namespace no tenant owns, when the policy denies unknown
//                                   tenants (CPU-only pods pass)
//   tier-shared                     sharing modes (resources, GPU memory, selected pools) the
//                                   tenant's tier does not allow
//   fail-requests-greater-than-one  more than 1 of a shared resource in one container
//   device-access                   privileged, CAP_SYS_ADMIN, device/MPS host paths, hostIPC,
//                                   NVIDIA_* / CUDA_MPS_* env, unless the tier has deviceAccess
//   tenant-limits                   GPU memory per pod, MIG profiles, shared replicas per pod
//   invalid-gpu-request             GPU requests the model cannot read (a bad memory annotation)
//   priority-class                  a PriorityClass the tenant may not use (any pod of the
//                                   tenant: priority decides whom a pod may preempt)
//   dra-extended-resource           a DRA extended resource whose class selects a device the
//                                   tenant may not use (device_class_rules.h)
//   unknown-demand                  a GPU vendor's resource name, or a device class, the
//                                   service does not read (denied or warned by the tier)
//   preset-node                     a GPU pod created with spec.nodeName set, which the node it
//                                   names would refuse at the extender (tier, capacity, quota)
//   scheduler-name                  a GPU pod naming a scheduler other than the one gpu-tenancy
//                                   extends (admission.schedulerName): denied where unknown
//                                   demand is, a warning otherwise
//   tenant-quota                    a pod over its tenant's quota (quota_rules.h)
//
// UPDATE: every pod field these rules read is immutable once the pod exists (resources,
// containers, volumes, hostIPC, nodeSelector, affinity) except the annotations, so on UPDATE
// only the rows that read those run (tenant-limits on GPU memory, invalid-gpu-request,
// device-annotation), and those only look at what changed. Ephemeral containers arrive through
// the pods/ephemeralcontainers subresource; the rows then see just those containers (kubectl
// debug --privileged is device access like any other).
#ifndef GPU_TENANCY_WEBHOOK_POD_RULES_H_
#define GPU_TENANCY_WEBHOOK_POD_RULES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/json.h"
#include "topology/demand.h"
#include "topology/dra/model.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/snapshot.h"
#include "webhook/verdict.h"

namespace webhook {

enum class ContainerList { kContainer, kInit, kEphemeral };

// A container as the rules see it: its facts (resources and the ways to a device past the
// device plugin, topology::ContainerFacts) and which list it came from.
struct ContainerView : topology::ContainerFacts {
  ContainerList list = ContainerList::kContainer;

  // `container "main"`, `init container "setup"`, `ephemeral container "debugger"`.
  std::string Label() const;
};

// A pool the pod selects by name through nodeSelector or required node affinity (In).
struct PoolSelection {
  std::string pool;
  std::string how;  // "nodeSelector" or "required node affinity"
};

// A container resource name that DRA serves (KEP-5004): deviceclass.resource.kubernetes.io/<class>,
// or a name a DeviceClass maps through extendedResourceName.
struct DraExtendedAsk {
  std::string container;  // ContainerView::Label()
  std::string resource;
  std::string device_class;
  topology::DeviceClassKind class_kind = topology::DeviceClassKind::kUnknown;
};

struct PodView {
  // Parsed at admission, labels are not copied and of the annotations only the policy's GPU
  // memory annotation (all the rules read); every value is still checked as ParsePod checks it.
  // Host paths and hostIPC are read from here.
  topology::PodFacts facts;
  std::vector<ContainerView> containers;  // containers, then initContainers, then ephemeral
  std::vector<PoolSelection> pool_selections;
  // ComputeDemand's answer; an error (a bad memory annotation) is a violation, not a 400.
  absl::StatusOr<topology::GpuDemand> demand = topology::GpuDemand{};
  // The pod's DRA claims that use a GPU device class (GpuClaimUses), each as a phrase:
  // `claim "gpu" (ResourceClaim tenant-a-inference, device class gpu.nvidia.com)`.
  std::vector<std::string> gpu_claims;
  // Its DRA extended resources (DraExtendedAsks), GPU classes and unknown ones.
  std::vector<DraExtendedAsk> dra_extended;

  // Any GPU device or GPU memory resource, the annotation, a claim for GPUs, or a DRA extended
  // resource of a class that is not listed as other.
  bool HasGpuRequests() const;
};

// Reads a Pod object; `namespace_name` stands in when metadata.namespace is empty. InvalidArgument
// naming the JSON path (under `path`) when the object is not a Pod the codecs can read (no
// metadata or spec, quantities that do not parse).
[[nodiscard]] absl::StatusOr<PodView> ParsePodView(const common::JsonValue& pod,
                                                   const topology::Policy& policy,
                                                   absl::string_view namespace_name,
                                                   absl::string_view path);
// The same from facts already read (a live pod): the rules see a pod the same way whichever
// way it came.
PodView PodViewOf(topology::PodFacts facts, const topology::Policy& policy);

// The pod's claims (spec.resourceClaims) whose ResourceClaim or ResourceClaimTemplate in `dra`
// asks for a device class the policy lists as a GPU class. A claim or template the state does
// not hold (yet) cannot be told apart from any other and is not counted; its own admission
// judged it and wrote the tenant's selectors into it.
std::vector<std::string> GpuClaimUses(const topology::PodFacts& pod, const topology::DraState& dra,
                                      const topology::AdmissionAllowList& allow);

// The pod's DRA extended resources, each container and name once: every
// deviceclass.resource.kubernetes.io/<class> name, and (with `dra`) every name a current
// DeviceClass maps through extendedResourceName.
std::vector<DraExtendedAsk> DraExtendedAsks(const PodView& pod, const topology::DraState* dra,
                                            const topology::AdmissionAllowList& allow);

// The scheduler a pod names: spec.schedulerName, "default-scheduler" when unset.
std::string SchedulerOf(const topology::PodFacts& pod);

// How the webhook sees one pod resource name.
enum class ResourceUse {
  kNotGpu,
  kWholeGpu,   // nvidia.com/gpu: a whole GPU, a single-strategy MIG device or a shared replica
  kMig,        // nvidia.com/mig-<profile>
  kMigShared,  // nvidia.com/mig-<profile>.shared
  kShared,     // nvidia.com/gpu.shared and policy.shared_resources
  kMps,        // nvidia.com/* names containing "mps"
  kMemory,     // policy.memory_resources (memory-only fractions share a GPU)
  kOtherGpu,   // any other name in a GPU vendor's domain (kGpuVendorDomains) the service does
               // not read, unless the policy lists it (admission.otherResources)
};
ResourceUse ClassifyPodResource(absl::string_view resource, const topology::Policy& policy);
// Shared replicas: more than one pod on one device, counted in replicas.
bool IsSharedReplica(ResourceUse use);
// The profile of a nvidia.com/mig-<profile>[.shared] name, else "".
std::string MigProfileOf(absl::string_view resource);

// The pod the pods/ephemeralcontainers subresource adds: only its ephemeral containers are new
// (everything else was judged at creation and is immutable), so the rules see those alone.
PodView EphemeralContainersOf(const PodView& pod);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_POD_RULES_H_
