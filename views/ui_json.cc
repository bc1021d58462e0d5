#include "views/ui_json.h"

#include <utility>

#include "absl/status/status.h"
#include "common/plan_input.h"
#include "plan/document.h"
#include "plan/plan.h"
#include "plan/render.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace views {
namespace ui_json {

template <typename T>
void OptionalInt(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::optional<T>& v) {
  if (v) {
    w.Int64(*v);
  } else {
    w.Null();
  }
}

void WriteProfile(rapidjson::Writer<rapidjson::StringBuffer>& w, const topology::MigProfile& p) {
  w.StartObject();
  w.Key("name");
  w.String(p.name.c_str());
  w.Key("id");
  OptionalInt(w, p.id);
  w.Key("computeSlices");
  w.Int(p.compute_slices);
  w.Key("memorySlices");
  w.Int(p.memory_slices);
  w.Key("memoryMiB");
  OptionalInt(w, p.memory_mib);
  w.Key("maxCount");
  w.Int(p.max_count);
  w.Key("placements");
  w.StartArray();
  for (int start : p.placements) w.Int(start);
  w.EndArray();
  w.EndObject();
}

}  // namespace ui_json

std::string CatalogJson(const topology::Catalog& catalog) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("models");
  w.StartArray();
  for (const topology::GpuModel& m : catalog.models()) {
    w.StartObject();
    w.Key("model");
    w.String(m.model.c_str());
    w.Key("products");
    w.StartArray();
    for (const std::string& p : m.product_labels) w.String(p.c_str());
    w.EndArray();
    w.Key("memoryMiB");
    ui_json::OptionalInt(w, m.total_memory_mib);
    w.Key("computeSlices");
    w.Int(m.compute_slices);
    w.Key("memorySlices");
    w.Int(m.memory_slices);
    w.Key("maxInstances");
    w.Int(m.max_instances);
    w.Key("profiles");
    w.StartArray();
    for (const topology::MigProfile& p : m.profiles) ui_json::WriteProfile(w, p);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

absl::StatusOr<std::string> PlanJson(absl::string_view input_text, const topology::Catalog& catalog,
                                     const topology::Policy& policy) {
  absl::StatusOr<plan::PlanInput> input = common::ParsePlanInput(input_text);
  if (!input.ok()) return absl::InvalidArgumentError(input.status().message());
  input->memory_annotation = policy.memory_annotation;
  absl::StatusOr<plan::Plan> made = plan::MakePlan(*input, catalog);
  if (!made.ok()) return absl::InvalidArgumentError(made.status().message());
  return plan::RenderJson(plan::BuildDocument(*std::move(made)));
}

}  // namespace views
