// The capacity planner behind `gpu-tenancy plan`: before anything is scheduled, decide which
// isolation each workload gets and how to cut each card.
//
//   1. Size each workload's GPU memory, term by term (plan/memory_sizing.h).
//   2. Choose the mechanism from the workload's trust, latency class and shape
//      (plan/mechanism_choice.h).
//   3. For MIG, choose the smallest profile that holds the memory (plan/mig_profile_choice.h).
//   4. Pack everything onto the fleet with valid MIG placements only, fewest GPUs first, and
//      re-check every produced layout with CheckLayout (plan/mig_packing.h, MakePlan).
//
//   ASSIGN_OR_RETURN(plan::Plan p, plan::MakePlan(input, catalog));
//   for (const plan::GpuPlan& gpu : p.gpus) ...
//
// Pure logic: no I/O. Failures are statuses: InvalidArgument for inconsistent input,
// FailedPrecondition when the catalog lacks a number the plan needs (memory of a model), and
// ResourceExhausted when a workload cannot fit the fleet (the message names the workload).
// plan/document.h turns a Plan into what `gpu-tenancy plan` prints.
#ifndef GPU_TENANCY_PLAN_PLAN_H_
#define GPU_TENANCY_PLAN_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plan/input.h"
#include "plan/mechanism_choice.h"
#include "plan/memory_sizing.h"
#include "topology/catalog.h"

namespace plan {

// CUDA MPS serves at most 48 clients per GPU on Volta and newer.
inline constexpr int kMaxMpsClients = 48;

struct GpuType {
  std::string name;                           // catalog model name, or the fleet's name for others
  const topology::GpuModel* model = nullptr;  // nullptr: not in the catalog, no MIG
  std::optional<int64_t> memory_mib;          // total memory; nullopt when nobody knows it
  bool HasMig() const { return model != nullptr && !model->profiles.empty(); }
};

struct WorkloadPlan {
  WorkloadSpec spec;
  MemorySizing sizing;
  Mechanism mechanism = Mechanism::kExclusive;
  std::string gpu_type;                           // empty for kVmBoundary
  const topology::MigProfile* profile = nullptr;  // kMig
  std::string rounding;                           // how the memory became a profile or GPUs
  int gpus_per_replica = 0;                       // kExclusive
  int replicas = 1;
  std::vector<std::string> replica_zones;  // per replica; empty strings when not mirrored
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;
  int baseline_gpus = 0;          // one GPU per workload (its GPUs for multi-GPU replicas)
  int baseline_replica_gpus = 0;  // one GPU per replica
};

enum class GpuUse { kIdle, kMig, kExclusive, kTimeslice, kMps };
absl::string_view GpuUseName(GpuUse use);  // "idle", "mig", "exclusive", "timeslice", "mps"

// Who holds a MIG instance or a GPU. workload indexes Plan::workloads; -1 for a canary slice.
struct Holder {
  int workload = -1;
  int replica = 0;
  bool canary() const { return workload < 0; }
};

struct PlannedInstance {
  const topology::MigProfile* profile = nullptr;
  int start = 0;
  Holder holder;
};

struct GpuPlan {
  std::string node;
  std::string zone;
  int index = 0;  // GPU index on the node (nvidia-smi -i)
  std::string gpu_type;
  const topology::GpuModel* model = nullptr;
  std::optional<int64_t> memory_mib;
  GpuUse use = GpuUse::kIdle;
  std::vector<PlannedInstance> instances;  // kMig, sorted by start, as the -cgi order creates them
  std::vector<const topology::MigProfile*> create_order;
  bool create_order_verified = false;
  std::vector<Holder> clients;    // kExclusive (one replica), kTimeslice, kMps
  int64_t shared_memory_mib = 0;  // sum of the shared clients' sized memory
};

struct NodePlan {
  std::string name;
  std::string zone;
  std::vector<int> gpus;  // indexes into Plan::gpus
  bool has_mig = false;
  GpuUse full_gpu_mode = GpuUse::kIdle;  // what the node's MIG-disabled GPUs do
  int shared_replicas = 0;               // device-plugin replicas for kTimeslice / kMps nodes
};

struct Plan {
  std::vector<WorkloadPlan> workloads;
  std::vector<GpuType> gpu_types;
  std::vector<NodePlan> nodes;
  std::vector<GpuPlan> gpus;  // every fleet GPU, node by node
  std::optional<std::string> canary_profile;
  std::string memory_annotation;  // PlanInput::memory_annotation
  int gpus_used = 0;
  int baseline_gpus = 0;          // one GPU per workload
  int baseline_replica_gpus = 0;  // one GPU per replica
  int lower_bound = 0;            // no packing can use fewer GPUs than this
  std::vector<std::string> warnings;
};

// Sizes, decides and packs. Order of packing: exclusive replicas (taking GPUs from the end of the
// fleet), MIG instances per GPU type (first fit decreasing, then a bounded exact search when that
// uses more GPUs than slice counting says is needed; GPUs open from the start of the fleet),
// canary slices, then shared clients (by memory, one sharing method per node as the device
// plugin requires). Every MIG layout is re-checked with CheckLayout; a failure there is Internal.
[[nodiscard]] absl::StatusOr<Plan> MakePlan(const PlanInput& input,
                                            const topology::Catalog& catalog);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_PLAN_H_
