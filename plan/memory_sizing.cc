#include "plan/memory_sizing.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace plan {
namespace {

// Larger than any GPU memory we will meet for decades (about 9 PB); keeps int64 arithmetic safe.
constexpr double kMaxBytes = 1e16;

}  // namespace

absl::StatusOr<MemorySizing> SizeMemory(const MemoryInput& input) {
  if (input.high_water_bytes.has_value() == input.model.has_value()) {
    return absl::InvalidArgumentError(
        "memory: give exactly one of highWaterMark (a measured peak) and model (a description)");
  }
  double headroom_pct = input.headroom_percent.value_or(kDefaultHeadroomPercent);
  if (!(headroom_pct >= 0 && headroom_pct <= 400)) {
    return absl::InvalidArgumentError("memory.headroomPercent: must be between 0 and 400");
  }
  if (input.workspace_bytes && (*input.workspace_bytes < 0 || *input.workspace_bytes > kMaxBytes)) {
    return absl::InvalidArgumentError("memory.workspace: must be between 0 and 9 PB");
  }
  MemorySizing out;
  if (input.model) {
    const ModelDescription& m = *input.model;
    out.source = "model";
    struct Check {
      const char* name;
      int64_t value;
    };
    for (Check c : {Check{"parameters", m.parameters}, Check{"layers", m.layers},
                    Check{"kvHeads", m.kv_heads}, Check{"headDim", m.head_dim},
                    Check{"maxTokens", m.max_tokens}, Check{"concurrency", m.concurrency}}) {
      if (c.value <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("memory.model.", c.name, ": must be positive"));
      }
    }
    if (!(m.bytes_per_parameter > 0 && m.bytes_per_parameter <= 16)) {
      return absl::InvalidArgumentError("memory.model.bytesPerParameter: must be in (0, 16]");
    }
    if (!(m.kv_bytes_per_element > 0 && m.kv_bytes_per_element <= 16)) {
      return absl::InvalidArgumentError("memory.model.kvBytesPerElement: must be in (0, 16]");
    }
    double weights = static_cast<double>(m.parameters) * m.bytes_per_parameter;
    double kv = 2.0 * static_cast<double>(m.layers) * static_cast<double>(m.kv_heads) *
                static_cast<double>(m.head_dim) * static_cast<double>(m.max_tokens) *
                static_cast<double>(m.concurrency) * m.kv_bytes_per_element;
    if (weights > kMaxBytes || kv > kMaxBytes) {
      return absl::InvalidArgumentError("memory.model: the model is implausibly large (> 9 PB)");
    }
    out.terms.push_back({"weights", std::llround(weights),
                         absl::StrCat(CountText(m.parameters), " params x ",
                                      NumberText(m.bytes_per_parameter), " B")});
    out.terms.push_back({"kv-cache", std::llround(kv),
                         absl::StrCat("2 (K,V) x ", m.layers, " layers x ", m.kv_heads,
                                      " KV heads x ", m.head_dim, " head dim x ", m.max_tokens,
                                      " tokens x ", Plural(m.concurrency, "sequence", "sequences"),
                                      " x ", NumberText(m.kv_bytes_per_element), " B")});
    if (input.workspace_bytes) {
      out.terms.push_back({"workspace", *input.workspace_bytes, "given"});
    } else {
      out.terms.push_back({"workspace", kDefaultWorkspaceBytes,
                           "default 1 GiB: CUDA context, library workspaces, activations"});
    }
  } else {
    if (*input.high_water_bytes <= 0 || *input.high_water_bytes > kMaxBytes) {
      return absl::InvalidArgumentError("memory.highWaterMark: must be positive and below 9 PB");
    }
    out.source = "high-water mark";
    out.terms.push_back({"measured", *input.high_water_bytes,
                         "measured peak; includes weights, KV cache and workspace"});
    if (input.workspace_bytes) {
      out.terms.push_back(
          {"workspace", *input.workspace_bytes, "given, on top of the measurement"});
    }
  }
  int64_t subtotal = 0;
  for (const MemoryTerm& t : out.terms) subtotal += t.bytes;
  int64_t headroom = std::llround(static_cast<double>(subtotal) * headroom_pct / 100.0);
  out.terms.push_back({"headroom", headroom,
                       absl::StrCat(NumberText(headroom_pct), "% of ", GiBText(subtotal, true),
                                    input.headroom_percent ? "" : " (default)")});
  out.total_bytes = subtotal + headroom;
  out.total_mib = (out.total_bytes + kMiB - 1) / kMiB;
  return out;
}

}  // namespace plan
