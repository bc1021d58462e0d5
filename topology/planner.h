// The capacity planner behind `gpu-tenancy plan`: before anything is scheduled, decide which
// isolation each workload gets and how to cut each card.
//
//   1. Size each workload's GPU memory, term by term: weights + peak KV cache + runtime workspace
//      + headroom for a model description, or a measured high-water mark + headroom.
//   2. Choose the mechanism from the workload's trust, latency class and shape (ChooseMechanism).
//   3. For MIG, choose the smallest profile of the GPU model that holds the memory and say why
//      (ChooseProfile: "needs 17.65 GiB -> 2g.20gb (19.62 GiB); 1g.10gb holds only 9.75 GiB").
//   4. Pack everything onto the fleet with valid MIG placements only, fewest GPUs first, and
//      re-check every produced layout with CheckLayout (MakePlan).
//
//   ASSIGN_OR_RETURN(topology::Plan plan, topology::MakePlan(input, catalog));
//   for (const topology::GpuPlan& gpu : plan.gpus) ...
//
// Pure logic: no I/O. Failures are statuses: InvalidArgument for inconsistent input,
// FailedPrecondition when the catalog lacks a number the plan needs (memory of a model), and
// ResourceExhausted when a workload cannot fit the fleet (the message names the workload).
#ifndef GPU_TENANCY_TOPOLOGY_PLANNER_H_
#define GPU_TENANCY_TOPOLOGY_PLANNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace topology {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Documented defaults of the memory model.
inline constexpr double kDefaultBytesPerParameter = 2.0;  // fp16 / bf16 weights
inline constexpr double kDefaultKvBytesPerElement = 2.0;  // fp16 KV cache
inline constexpr int64_t kDefaultWorkspaceBytes = kGiB;   // CUDA context, cuBLAS workspace,
                                                          // activations of one batch
inline constexpr double kDefaultHeadroomPercent = 10.0;   // of everything above
// CUDA MPS serves at most 48 clients per GPU on Volta and newer.
inline constexpr int kMaxMpsClients = 48;

enum class Trust { kTrusted, kUntrusted };
enum class Latency { kSla, kBestEffort };
// How a trusted best-effort workload shares a GPU when the planner may choose.
enum class SharingHint { kAuto, kTimeslice, kMps };

// The isolation a workload gets. kVmBoundary is not something the cluster can provide: the plan
// reports it and places nothing.
enum class Mechanism { kMig, kExclusive, kTimeslice, kMps, kVmBoundary };
absl::string_view MechanismName(Mechanism m);  // "mig", "exclusive", "timeslice", "mps", "vm"

// ---- Memory sizing ----------------------------------------------------------------------------

// A transformer served for inference or fine-tuned. KV cache per token is
// 2 (K and V) x layers x kv_heads x head_dim x kv_bytes_per_element.
struct ModelDescription {
  int64_t parameters = 0;                                  // 7'000'000'000 for a 7B model
  double bytes_per_parameter = kDefaultBytesPerParameter;  // 1 for int8, 0.5 for int4
  int64_t layers = 0;
  int64_t kv_heads = 0;  // key/value heads (fewer than attention heads with GQA/MQA)
  int64_t head_dim = 0;
  int64_t max_tokens = 0;   // context length of one sequence (prompt + generated)
  int64_t concurrency = 1;  // sequences in flight at the peak
  double kv_bytes_per_element = kDefaultKvBytesPerElement;
};

// Exactly one of high_water_bytes and model is set.
struct MemoryInput {
  std::optional<int64_t> high_water_bytes;  // measured peak (e.g. nvidia-smi / DCGM FB_USED)
  std::optional<ModelDescription> model;
  // Model path: defaults to kDefaultWorkspaceBytes. High-water path: only added when given,
  // since a measurement already includes the runtime's workspace.
  std::optional<int64_t> workspace_bytes;
  std::optional<double> headroom_percent;  // default kDefaultHeadroomPercent
};

struct MemoryTerm {
  std::string name;  // "weights", "kv-cache", "workspace", "measured", "headroom"
  int64_t bytes = 0;
  std::string how;  // the arithmetic, for people: "13B params x 2 B"
};

struct MemorySizing {
  std::string source;  // "model" or "high-water mark"
  std::vector<MemoryTerm> terms;
  int64_t total_bytes = 0;
  int64_t total_mib = 0;  // rounded up
};

// InvalidArgument for a missing or doubled source, non-positive sizes, or absurd totals.
[[nodiscard]] absl::StatusOr<MemorySizing> SizeMemory(const MemoryInput& input);

// "17.65 GiB": two decimals, rounded up (a need) or down (a capacity, as nvidia-smi prints).
std::string GiBText(int64_t bytes, bool round_up);

// ---- Workloads and fleet ---------------------------------------------------------------------

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
};

// ---- Decisions ----------------------------------------------------------------------------

struct MechanismChoice {
  Mechanism mechanism = Mechanism::kExclusive;
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;
};

// The decision table, before sizing (a MIG workload too large for any profile later becomes
// exclusive). `gpu_name` only appears in the texts.
//   VM boundary                    -> vm (reported, not placed; vGPU is licensed per concurrent
//   vGPU) training                       -> exclusive whole GPUs untrusted                      ->
//   MIG; exclusive where the GPU has no MIG SLA-bound (trusted)            -> MIG; MPS (or
//   time-slicing if asked) without MIG, warned trusted best-effort / bursty   -> time-slicing, or
//   MPS with memory limits if asked
MechanismChoice ChooseMechanism(const WorkloadSpec& workload, absl::string_view gpu_name,
                                bool gpu_has_mig);

struct ProfileChoice {
  const MigProfile* profile = nullptr;  // nullptr: no profile short of the whole card holds it
  std::string explanation;
};

// The smallest profile (by memory) holding `need_bytes`, skipping attribute variants (+me) and
// the whole-card profile (a 7g instance is a whole GPU with less memory). Among profiles of
// equal memory it takes the one whose compute share matches its memory share (2g.20gb over
// 1g.20gb, 3g.40gb over 4g.40gb). FailedPrecondition when the catalog has no memory for the
// model's profiles.
[[nodiscard]] absl::StatusOr<ProfileChoice> ChooseProfile(const GpuModel& gpu, int64_t need_bytes);

// Packs MIG instances onto as few GPUs of one model as it can: first fit decreasing, then, if
// that beats no lower bound, a depth-first search with symmetry breaking (bounded, exact for
// planning-sized inputs). Each layout is placed by PlaceProfiles and re-checked by CheckLayout.
// InvalidArgument if a profile does not belong to the model or fits no empty GPU.
[[nodiscard]] absl::StatusOr<std::vector<std::vector<PlacedInstance>>> PackProfiles(
    const GpuModel& gpu, const std::vector<const MigProfile*>& profiles);

// Replays `nvidia-smi mig -cgi a,b,c` on an empty GPU, assuming the driver gives each instance
// the highest free placement of its profile. That assumption is the one consistent with NVIDIA's
// documented example (on A100-40GB `-cgi 19,19,14,9` fails, `-cgi 9,19,14,19` succeeds).
// nullopt when some instance finds no free placement or the result breaks a layout rule.
std::optional<std::vector<PlacedInstance>> SimulateCreate(
    const GpuModel& gpu, const std::vector<const MigProfile*>& order);

struct CreationOrder {
  std::vector<const MigProfile*> order;  // for -cgi
  std::vector<PlacedInstance> layout;    // what that order creates, sorted by start
  bool verified = false;  // false: no order reproduces the layout; use explicit placements
};
// An order of the layout's instances that SimulateCreate turns into a valid layout of the same
// instances, trying largest-first first. Falls back to largest-first with verified = false.
CreationOrder PlanCreation(const GpuModel& gpu, const std::vector<PlacedInstance>& layout);

// ---- The plan -------------------------------------------------------------------------------

struct GpuType {
  std::string name;                   // catalog model name, or the fleet's name for others
  const GpuModel* model = nullptr;    // nullptr: not in the catalog, no MIG
  std::optional<int64_t> memory_mib;  // total memory; nullopt when nobody knows it
  bool HasMig() const { return model != nullptr && !model->profiles.empty(); }
};

struct WorkloadPlan {
  WorkloadSpec spec;
  MemorySizing sizing;
  Mechanism mechanism = Mechanism::kExclusive;
  std::string gpu_type;                 // empty for kVmBoundary
  const MigProfile* profile = nullptr;  // kMig
  std::string rounding;                 // how the memory became a profile or whole GPUs
  int gpus_per_replica = 0;             // kExclusive
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
  const MigProfile* profile = nullptr;
  int start = 0;
  Holder holder;
};

struct GpuPlan {
  std::string node;
  std::string zone;
  int index = 0;  // GPU index on the node (nvidia-smi -i)
  std::string gpu_type;
  const GpuModel* model = nullptr;
  std::optional<int64_t> memory_mib;
  GpuUse use = GpuUse::kIdle;
  std::vector<PlannedInstance> instances;  // kMig, sorted by start, as the -cgi order creates them
  std::vector<const MigProfile*> create_order;
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
[[nodiscard]] absl::StatusOr<Plan> MakePlan(const PlanInput& input, const Catalog& catalog);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PLANNER_H_
