// Every label, annotation and resource name the project reads or writes, in one place: those
// NVIDIA's GPU Feature Discovery, device plugin and MIG manager publish, and our own
// gpu-tenancy.io names. Policy fields that make a name
// configurable take their defaults from here.
#ifndef GPU_TENANCY_TOPOLOGY_WELLKNOWN_H_
#define GPU_TENANCY_TOPOLOGY_WELLKNOWN_H_

#include "absl/strings/string_view.h"

namespace topology {

// NVIDIA node labels (GPU Feature Discovery, MIG manager).
inline constexpr absl::string_view kProductLabel = "nvidia.com/gpu.product";
inline constexpr absl::string_view kGpuCountLabel = "nvidia.com/gpu.count";
inline constexpr absl::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr absl::string_view kReplicasLabel = "nvidia.com/gpu.replicas";
inline constexpr absl::string_view kSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
inline constexpr absl::string_view kMigStrategyLabel = "nvidia.com/mig.strategy";
inline constexpr absl::string_view kMigConfigLabel = "nvidia.com/mig.config";
inline constexpr absl::string_view kMigConfigStateLabel = "nvidia.com/mig.config.state";
// The GPU operator's component switches; the MIG manager sets them to kPausedForMigChange while
// it reconfigures a node.
inline constexpr absl::string_view kDeployLabelPrefix = "nvidia.com/gpu.deploy.";
inline constexpr absl::string_view kPausedForMigChange = "paused-for-mig-change";

// NVIDIA device-plugin resources.
inline constexpr absl::string_view kNvidiaResourcePrefix = "nvidia.com/";
// The environment variables that reach GPUs past the device plugin (the NVIDIA container
// runtime reads them); PodFacts keeps only these of a container's environment.
inline constexpr absl::string_view kDeviceEnvNames[] = {
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_MPS_PIPE_DIRECTORY"};
// Resource-name domains of GPU vendors' device plugins: a name there that the service does not
// know is unknown demand, never "not a GPU".
inline constexpr absl::string_view kGpuVendorDomains[] = {"nvidia.com/", "amd.com/",
                                                          "gpu.intel.com/", "habana.ai/"};
inline constexpr absl::string_view kGpuResource = "nvidia.com/gpu";
inline constexpr absl::string_view kSharedSuffix = ".shared";
inline constexpr absl::string_view kMigResourcePrefix = "nvidia.com/mig-";

// Ours, on pods: who the pod belongs to and where bind put it (written by bind and by the
// mutating webhook, read by audits, dashboards and the extender after a restart).
inline constexpr absl::string_view kTenantLabel = "gpu-tenancy.io/tenant";
inline constexpr absl::string_view kTierLabel = "gpu-tenancy.io/tier";
inline constexpr absl::string_view kTenantAnnotation = "gpu-tenancy.io/tenant";
inline constexpr absl::string_view kTierAnnotation = "gpu-tenancy.io/tier";
inline constexpr absl::string_view kPoolAnnotation = "gpu-tenancy.io/pool";
inline constexpr absl::string_view kMigProfileAnnotation = "gpu-tenancy.io/mig-profile";
// Fair sharing: "guaranteed" or "borrowed", how bind placed a fair-sharing tenant's pod
// (topology/fair_share.h). A record of the decision; what is borrowed now is recomputed.
inline constexpr absl::string_view kShareAnnotation = "gpu-tenancy.io/share";
inline constexpr absl::string_view kGpuIndexAnnotation = "gpu-tenancy.io/gpu-index";
inline constexpr absl::string_view kSchedulingPolicyAnnotation = "gpu-tenancy.io/scheduling-policy";
// Ours, written by the node agent from the kubelet's PodResources API (topology/device_ids.h):
// on a pod, the device IDs each container got; on a node, its GPUs' device IDs.
inline constexpr absl::string_view kPodDevicesAnnotation = "gpu-tenancy.io/devices";
inline constexpr absl::string_view kNodeDevicesAnnotation = "gpu-tenancy.io/gpu-devices";
// Namespaces the admission webhooks never see (their namespaceSelector leaves them out: the
// control plane's pods and the service's own). Nothing there went through the webhooks' rules;
// the device annotations are guarded there by kube-apiserver's own admission policies, and a
// report is believed only as its node's agent recorded it (topology/device_report.h).
inline constexpr absl::string_view kWebhookExemptNamespaces[] = {"kube-system",
                                                                 "gpu-tenancy-system"};

// Ours, defaults of configurable policy fields.
inline constexpr absl::string_view kDefaultPoolLabel = "gpu-tenancy.io/pool";
inline constexpr absl::string_view kDefaultCanaryLabel = "gpu-tenancy.io/canary";
inline constexpr absl::string_view kDefaultMemoryAnnotation = "gpu-tenancy.io/gpu-memory";
inline constexpr absl::string_view kDefaultMemoryResources[] = {"nvidia.com/gpu.memory",
                                                                "nvidia.com/gpumem"};

// Ours, on what `gpu-tenancy plan` writes: the workload a pod snippet belongs to.
inline constexpr absl::string_view kWorkloadLabel = "gpu-tenancy.io/workload";
// Kubernetes' zone label, which the plan spreads replicas over.
inline constexpr absl::string_view kZoneLabel = "topology.kubernetes.io/zone";

// Ours, on the extender's own pods: the replica holding the lease (the Service selects it).
inline constexpr absl::string_view kLeaderLabel = "gpu-tenancy.io/extender-leader";

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_WELLKNOWN_H_
