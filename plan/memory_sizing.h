// Step 1 of the planner: how much GPU memory a workload needs, term by term, so a person can
// check the arithmetic. Either from a model description (weights + peak KV cache + runtime
// workspace + headroom) or from a measured high-water mark (+ headroom).
//
//   ASSIGN_OR_RETURN(plan::MemorySizing sizing, plan::SizeMemory(workload.memory));
//   for (const plan::MemoryTerm& t : sizing.terms) ...  // "weights", "kv-cache", ...
#ifndef GPU_TENANCY_PLAN_MEMORY_SIZING_H_
#define GPU_TENANCY_PLAN_MEMORY_SIZING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plan/quantity_text.h"

namespace plan {

// Documented defaults of the memory model.
inline constexpr double kDefaultBytesPerParameter = 2.0;  // fp16 / bf16 weights
inline constexpr double kDefaultKvBytesPerElement = 2.0;  // fp16 KV cache
inline constexpr int64_t kDefaultWorkspaceBytes = kGiB;   // CUDA context, cuBLAS workspace,
                                                          // activations of one batch
inline constexpr double kDefaultHeadroomPercent = 10.0;   // of everything above

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

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MEMORY_SIZING_H_
