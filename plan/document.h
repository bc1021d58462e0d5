// What `gpu-tenancy plan` prints, built once from a Plan: the Plan itself plus everything derived
// for people and tools (a summary, nvidia-smi commands, mig-parted configs, device-plugin
// sharing configs, node labels, pod resources, ResourceClaims, the policy's tenants, warnings).
// plan/render.h prints it as text, YAML or JSON; all three read only this document, so they
// cannot disagree.
//
//   ASSIGN_OR_RETURN(plan::Plan p, plan::MakePlan(input, catalog));
//   plan::PlanDocument doc = plan::BuildDocument(std::move(p));
#ifndef GPU_TENANCY_PLAN_DOCUMENT_H_
#define GPU_TENANCY_PLAN_DOCUMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace plan {

struct Summary {
  int gpus_used = 0;
  int gpus_in_fleet = 0;
  int baseline_gpus = 0;  // one whole GPU per workload
  int gpus_saved = 0;
  int baseline_replica_gpus = 0;  // one whole GPU per replica
  int lower_bound = 0;
  bool optimal = false;
  int max_tenants_per_gpu = 0;  // the most tenants one GPU serves (MIG instances or clients)
  std::string baseline;         // what the baseline counts, in words
  std::string text;             // "4 GPUs used vs 7 for one GPU per workload: 3 saved (43%)"
};

struct NodeCommands {
  std::string node;
  std::vector<std::string> commands;
};

// One entry of a mig-parted config: consecutive GPUs of a node cut alike.
struct MigPartedEntry {
  std::vector<int> devices;  // GPU indexes
  bool mig_enabled = false;
  std::vector<std::pair<std::string, int>> mig_devices;  // profile -> instances, largest first
  bool operator==(const MigPartedEntry&) const = default;
};

// One mig-parted config per distinct node layout, named after the first node that uses it.
struct MigPartedConfig {
  std::string name;  // "gpu-tenancy-h100-a"
  std::vector<MigPartedEntry> entries;
};

// A device-plugin sharing config, one per (method, replicas), selected per node by the
// nvidia.com/device-plugin.config label.
struct DevicePluginConfig {
  std::string name;  // "gpu-tenancy-timeslice-4"
  bool mps = false;  // else time-slicing
  int replicas = 0;
};

struct NodeLabels {
  std::string node;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> commands;  // kubectl label ...
};

// The resources and labels of one workload's pods.
struct PodSnippet {
  std::string workload;
  std::string tenant;
  int replicas = 1;
  std::string namespace_name;
  std::string resource;  // "nvidia.com/mig-3g.40gb", "nvidia.com/gpu", "nvidia.com/gpu.shared"
  int64_t count = 1;
  bool spread_over_zones = false;  // mirrored
  // Shared GPUs: the memory annotation (the policy's name) and its value ("6759Mi").
  std::optional<std::pair<std::string, std::string>> memory_annotation;
};

// A DRA claim (NVIDIA k8s-dra-driver-gpu): a ResourceClaimTemplate gives each pod its own MIG
// instance or GPUs; a shared workload's pods share one ResourceClaim.
struct ClaimSnippet {
  std::string name;
  std::string namespace_name;
  Mechanism mechanism = Mechanism::kMig;
  std::string mig_profile;     // kMig
  int gpus = 0;                // kExclusive
  int mps_thread_percent = 0;  // kMps
  std::string pinned_memory;   // kMps: "6759Mi"
  bool shared() const { return mechanism == Mechanism::kTimeslice || mechanism == Mechanism::kMps; }
};

// A tenant of the policy file (tiers "untrusted" and "trusted" as in cmd/demo/policy.yaml).
struct PolicyTenant {
  std::string name;
  std::string tier;
  std::vector<std::string> namespaces;
  int64_t gpu_memory_mib_per_pod = 0;
  std::vector<std::string> mig_profiles;
  bool shared = false;  // one shared replica per pod
  bool mps = false;
  int mps_thread_percent = 100;
  int64_t mps_pinned_mib = 0;
};

struct PolicySection {
  std::vector<PolicyTenant> tenants;
  std::optional<std::string> canary_profile;  // one instance reserved per MIG node
};

struct PlanDocument {
  Plan plan;
  Summary summary;
  std::vector<NodeCommands> nvidia_smi;
  std::vector<MigPartedConfig> mig_configs;
  std::vector<DevicePluginConfig> device_plugin_configs;
  std::vector<NodeLabels> node_labels;
  std::vector<PodSnippet> pods;
  std::vector<ClaimSnippet> claims;
  PolicySection policy;
  std::vector<std::string> warnings;  // the workloads', then the plan's
};

PlanDocument BuildDocument(Plan plan);

// The instances of one MIG GPU per profile ("3g.40gb": 1, ...), largest first.
std::vector<std::pair<std::string, int>> MigDevices(const GpuPlan& gpu);

// How nvidia-smi and mig-parted name a profile in a create order: its id ("9"), else its name.
std::string ProfileArg(const topology::MigProfile& profile);

absl::string_view TrustName(Trust trust);        // "trusted", "untrusted"
absl::string_view LatencyName(Latency latency);  // "sla", "best-effort"

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_DOCUMENT_H_
