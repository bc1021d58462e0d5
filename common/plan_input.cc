#include "common/plan_input.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "common/yaml_fields.h"
#include "common/yaml_json.h"
#include "topology/quantity.h"

namespace common {
namespace {

using plan::FleetNode;
using plan::MemoryInput;
using plan::ModelDescription;
using plan::PlanInput;
using plan::WorkloadSpec;

struct Defaults {
  std::optional<double> headroom_percent;
  std::optional<int64_t> workspace_bytes;
  std::optional<double> bytes_per_parameter;
  std::optional<double> kv_bytes_per_element;
};

absl::Status ParseModel(Fields& f, const Defaults& defaults, ModelDescription& m) {
  const JsonValue* params = f.Get("parameters");
  std::string params_path = f.Path("parameters");
  if (!params) return Fields::Bad(params_path, "missing (e.g. 7B or 7000000000)");
  if (params->IsString()) {
    absl::StatusOr<int64_t> n = ParseParameterCount(AsStringView(*params));
    if (!n.ok()) return Fields::Bad(params_path, n.status().message());
    m.parameters = *n;
  } else if (params->IsNumber() && params->GetDouble() >= 1 && params->GetDouble() <= 1e15) {
    m.parameters = std::llround(params->GetDouble());
  } else {
    return Fields::Bad(params_path, "expected a count such as 7B, 13B or 7000000000");
  }
  ASSIGN_OR_RETURN(std::optional<double> bpp, f.Number("bytesPerParameter", 0.125, 16));
  m.bytes_per_parameter =
      bpp.value_or(defaults.bytes_per_parameter.value_or(plan::kDefaultBytesPerParameter));
  ASSIGN_OR_RETURN(std::optional<double> kvb, f.Number("kvBytesPerElement", 0.125, 16));
  m.kv_bytes_per_element =
      kvb.value_or(defaults.kv_bytes_per_element.value_or(plan::kDefaultKvBytesPerElement));
  struct IntField {
    const char* key;
    int64_t* out;
    int64_t max;
    bool required;
  };
  for (IntField field :
       {IntField{"layers", &m.layers, 10'000, true}, IntField{"kvHeads", &m.kv_heads, 10'000, true},
        IntField{"headDim", &m.head_dim, 100'000, true},
        IntField{"maxTokens", &m.max_tokens, 100'000'000, true},
        IntField{"concurrency", &m.concurrency, 1'000'000, false}}) {
    ASSIGN_OR_RETURN(std::optional<int64_t> v, f.IntInRange(field.key, 1, field.max));
    if (!v && field.required) return Fields::Bad(f.Path(field.key), "missing");
    if (v) *field.out = *v;
  }
  return absl::OkStatus();
}

absl::Status ParseMemory(Fields& f, const Defaults& defaults, MemoryInput& memory) {
  ASSIGN_OR_RETURN(memory.high_water_bytes, f.Bytes("highWaterMark"));
  ASSIGN_OR_RETURN(std::optional<Fields> model, f.Object("model"));
  if (memory.high_water_bytes.has_value() == model.has_value()) {
    return Fields::Bad(
        f.Path("highWaterMark"),
        "give exactly one of highWaterMark (a measured peak) and model (a description)");
  }
  if (model) {
    ModelDescription m;
    RETURN_IF_ERROR(ParseModel(*model, defaults, m));
    RETURN_IF_ERROR(model->NoUnknownKeys());
    memory.model = m;
  }
  ASSIGN_OR_RETURN(memory.workspace_bytes, f.Bytes("workspace"));
  // The default workspace belongs to the model path only; a measurement already includes it.
  if (!memory.workspace_bytes && memory.model) memory.workspace_bytes = defaults.workspace_bytes;
  ASSIGN_OR_RETURN(memory.headroom_percent, f.Number("headroomPercent", 0, 400));
  if (!memory.headroom_percent) memory.headroom_percent = defaults.headroom_percent;
  return absl::OkStatus();
}

absl::Status ParseWorkload(Fields& f, const Defaults& defaults, WorkloadSpec& w) {
  ASSIGN_OR_RETURN(w.name, f.String("name", true));
  ASSIGN_OR_RETURN(w.tenant, f.String("tenant", true));
  ASSIGN_OR_RETURN(w.namespace_name, f.String("namespace", false));
  ASSIGN_OR_RETURN(std::string trust, f.Enum("trust", {"trusted", "untrusted"}, nullptr));
  w.trust = trust == "untrusted" ? plan::Trust::kUntrusted : plan::Trust::kTrusted;
  ASSIGN_OR_RETURN(std::string latency, f.Enum("latency", {"sla", "best-effort"}, "best-effort"));
  w.latency = latency == "sla" ? plan::Latency::kSla : plan::Latency::kBestEffort;
  ASSIGN_OR_RETURN(w.training, f.Bool("training"));
  ASSIGN_OR_RETURN(std::optional<int64_t> replicas, f.IntInRange("replicas", 1, 10'000));
  w.replicas = static_cast<int>(replicas.value_or(0));
  ASSIGN_OR_RETURN(w.mirrored, f.Bool("mirrored"));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_gpus, f.IntInRange("maxGpus", 1, 64));
  w.max_gpus = static_cast<int>(max_gpus.value_or(1));
  ASSIGN_OR_RETURN(w.vm_boundary, f.Bool("vmBoundary"));
  ASSIGN_OR_RETURN(std::string sharing, f.Enum("sharing", {"auto", "timeslice", "mps"}, "auto"));
  w.sharing = sharing == "mps"         ? plan::SharingHint::kMps
              : sharing == "timeslice" ? plan::SharingHint::kTimeslice
                                       : plan::SharingHint::kAuto;
  ASSIGN_OR_RETURN(w.gpu, f.String("gpu", false));
  ASSIGN_OR_RETURN(std::optional<Fields> memory, f.Object("memory"));
  if (!memory) return Fields::Bad(f.Path("memory"), "missing (highWaterMark or model)");
  RETURN_IF_ERROR(ParseMemory(*memory, defaults, w.memory));
  return memory->NoUnknownKeys();
}

}  // namespace

absl::StatusOr<int64_t> ParseParameterCount(absl::string_view text) {
  std::string s = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
    }
    if (scale != 1) s.pop_back();
  }
  double value = 0;
  if (s.empty() || !absl::SimpleAtod(s, &value) || !(value * scale >= 1) || value * scale > 1e15) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a parameter count such as 7B, 13B or 350M"));
  }
  return std::llround(value * scale);
}

absl::StatusOr<PlanInput> ParsePlanInput(absl::string_view yaml_text) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, YamlToJson(yaml_text));
  if (!doc.IsObject()) return absl::InvalidArgumentError("plan input: expected a mapping");
  Fields root(doc, "");
  PlanInput input;

  Defaults defaults;
  ASSIGN_OR_RETURN(std::optional<Fields> d, root.Object("defaults"));
  if (d) {
    ASSIGN_OR_RETURN(defaults.headroom_percent, d->Number("headroomPercent", 0, 400));
    ASSIGN_OR_RETURN(defaults.workspace_bytes, d->Bytes("workspace"));
    ASSIGN_OR_RETURN(defaults.bytes_per_parameter, d->Number("bytesPerParameter", 0.125, 16));
    ASSIGN_OR_RETURN(defaults.kv_bytes_per_element, d->Number("kvBytesPerElement", 0.125, 16));
    RETURN_IF_ERROR(d->NoUnknownKeys());
  }

  RETURN_IF_ERROR(root.List("fleet", true, [&](Fields& f) -> absl::Status {
    FleetNode node;
    ASSIGN_OR_RETURN(node.name, f.String("node", true));
    ASSIGN_OR_RETURN(node.gpu, f.String("gpu", true));
    ASSIGN_OR_RETURN(std::optional<int64_t> count, f.IntInRange("count", 1, 64));
    node.count = static_cast<int>(count.value_or(1));
    ASSIGN_OR_RETURN(node.zone, f.String("zone", false));
    ASSIGN_OR_RETURN(std::optional<int64_t> memory, f.Bytes("memory"));
    if (memory) node.memory_mib = *memory / plan::kMiB;
    if (memory && *node.memory_mib == 0) return Fields::Bad(f.Path("memory"), "less than 1 MiB");
    input.fleet.push_back(std::move(node));
    return absl::OkStatus();
  }));

  RETURN_IF_ERROR(root.List("workloads", true, [&](Fields& f) -> absl::Status {
    WorkloadSpec w;
    RETURN_IF_ERROR(ParseWorkload(f, defaults, w));
    input.workloads.push_back(std::move(w));
    return absl::OkStatus();
  }));

  ASSIGN_OR_RETURN(std::optional<Fields> canary, root.Object("canary"));
  if (canary) {
    ASSIGN_OR_RETURN(std::string profile, canary->String("profile", true));
    input.canary_profile = profile;
    RETURN_IF_ERROR(canary->NoUnknownKeys());
  }
  RETURN_IF_ERROR(root.NoUnknownKeys());
  return input;
}

}  // namespace common
