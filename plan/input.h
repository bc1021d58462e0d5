// What the planner is asked: the fleet (nodes and their GPUs) and the workloads (who runs what,
// how trusted, how latency-bound, how much memory). common/plan_input.h reads it from YAML;
// plan::MakePlan (plan/plan.h) answers it.
#ifndef GPU_TENANCY_PLAN_INPUT_H_
#define GPU_TENANCY_PLAN_INPUT_H_

#include <optional>
#include <string>
#include <vector>

#include "plan/memory_sizing.h"
#include "topology/policy.h"

namespace plan {

enum class Trust { kTrusted, kUntrusted };
enum class Latency { kSla, kBestEffort };
// How a trusted best-effort workload shares a GPU when the planner may choose.
enum class SharingHint { kAuto, kTimeslice, kMps };

struct WorkloadSpec {
  std::string name;
  std::string tenant;
  std::string namespace_name;  // defaults to the tenant name
  Trust trust = Trust::kTrusted;
  Latency latency = Latency::kBestEffort;
  bool training = false;     // needs a whole GPU's memory bandwidth (and P2P, which MIG lacks)
  int replicas = 0;          // 0: 1, or one per zone when mirrored
  bool mirrored = false;     // spread replicas evenly over the fleet's zones
  int max_gpus = 1;          // whole GPUs one replica may span; 1 means no multi-GPU
  bool vm_boundary = false;  // the tenant requires a VM boundary (vGPU or passthrough)
  SharingHint sharing = SharingHint::kAuto;
  std::string gpu;  // fleet GPU type to use; empty: the planner picks
  MemoryInput memory;
};

struct FleetNode {
  std::string name;
  std::string zone;  // empty: no zone
  std::string gpu;   // catalog model ("H100-80GB"), GFD product label, or any name (then
                     // memory_mib is required and the GPU has no MIG)
  int count = 1;
  std::optional<int64_t> memory_mib;  // overrides or supplies the GPU's total memory
};

struct PlanInput {
  std::vector<FleetNode> fleet;
  std::vector<WorkloadSpec> workloads;
  // Keep one MIG instance of this profile free on every node with MIG GPUs, for canary pods.
  // Models without a profile of that name get their smallest profile.
  std::optional<std::string> canary_profile;
  // How shared pods declare their memory to the extender: the policy's memoryAnnotation.
  std::string memory_annotation = std::string(topology::kDefaultMemoryAnnotation);
};

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_INPUT_H_
