#include "wire/mig_parted_codec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "common/yaml_json.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::FindNonNull;
using common::IndexPath;
using common::JoinPath;
using common::JsonValue;
using common::ParseJson;
using common::StringOr;
using common::YamlToJson;
namespace {

absl::Status Bad(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<std::vector<std::string>> StringOrList(const JsonValue& v, absl::string_view path) {
  std::vector<std::string> out;
  if (v.IsString()) {
    out.emplace_back(AsStringView(v));
    return out;
  }
  if (!v.IsArray()) return Bad(path, "expected a string or a list of strings");
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    if (!v[i].IsString()) return Bad(IndexPath(path, i), "expected a string");
    out.emplace_back(AsStringView(v[i]));
  }
  return out;
}

absl::StatusOr<topology::MigPartedEntry> ParseEntry(const JsonValue& v, const std::string& path) {
  if (!v.IsObject()) return Bad(path, "expected a mapping");
  topology::MigPartedEntry e;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string key(AsStringView(it->name));
    std::string at = JoinPath(path, key);
    const JsonValue& value = it->value;
    if (key == "device-filter") {
      ASSIGN_OR_RETURN(e.device_filter, StringOrList(value, at));
    } else if (key == "devices") {
      if (value.IsString() && AsStringView(value) == "all") {
        e.all_devices = true;
      } else if (value.IsArray()) {
        e.all_devices = false;
        for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
          if (!value[i].IsInt()) return Bad(IndexPath(at, i), "expected a GPU index");
          e.devices.push_back(value[i].GetInt());
        }
      } else {
        return Bad(at, "expected \"all\" or a list of GPU indexes");
      }
    } else if (key == "mig-enabled") {
      if (!value.IsBool()) return Bad(at, "expected true or false");
      e.mig_enabled = value.GetBool();
    } else if (key == "mig-devices") {
      if (value.IsNull()) continue;
      if (!value.IsObject()) return Bad(at, "expected a mapping of profile to count");
      for (auto d = value.MemberBegin(); d != value.MemberEnd(); ++d) {
        std::string profile(AsStringView(d->name));
        if (!d->value.IsInt()) return Bad(JoinPath(at, profile), "expected a whole number");
        e.mig_devices.emplace_back(profile, d->value.GetInt());
      }
    } else {
      return Bad(at, "unknown field");
    }
  }
  if (!v.HasMember("devices")) return Bad(path, "devices is required");
  if (!v.HasMember("mig-enabled")) return Bad(path, "mig-enabled is required");
  return e;
}

absl::StatusOr<topology::MigPartedFile> FromJson(const JsonValue& root) {
  const JsonValue* config = &root;
  if (const JsonValue* plan = FindNonNull(root, "migParted")) config = plan;
  if (!config->IsObject()) return Bad("(top)", "expected a mapping");
  absl::string_view version = StringOr(*config, "version");
  if (version != "v1") {
    return Bad("version", absl::StrCat("expected v1, got \"", version, "\""));
  }
  const JsonValue* configs = FindNonNull(*config, "mig-configs");
  if (configs == nullptr || !configs->IsObject()) {
    return Bad("mig-configs", "expected a mapping of config names to entries");
  }
  topology::MigPartedFile out;
  for (auto it = configs->MemberBegin(); it != configs->MemberEnd(); ++it) {
    topology::MigPartedLayout layout;
    layout.name = std::string(AsStringView(it->name));
    std::string path = JoinPath("mig-configs", layout.name);
    if (!it->value.IsArray() || it->value.Empty()) return Bad(path, "expected a list of entries");
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
      ASSIGN_OR_RETURN(topology::MigPartedEntry e, ParseEntry(it->value[i], IndexPath(path, i)));
      layout.entries.push_back(std::move(e));
    }
    out.layouts.push_back(std::move(layout));
  }
  return out;
}

}  // namespace

absl::StatusOr<topology::MigPartedFile> ParseMigPartedConfig(absl::string_view text) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, YamlToJson(text));
  return FromJson(doc);
}

absl::StatusOr<topology::MigPartedFile> ParseMigPartedConfigMap(absl::string_view configmap_json) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(configmap_json));
  const JsonValue* data = FindNonNull(doc, "data");
  if (data == nullptr || !data->IsObject() || data->MemberCount() == 0) {
    return Bad("ConfigMap data", "empty; expected a mig-parted config under config.yaml");
  }
  const JsonValue* text = FindMember(*data, "config.yaml");
  if (text == nullptr && data->MemberCount() == 1) text = &data->MemberBegin()->value;
  if (text == nullptr || !text->IsString()) {
    return Bad("ConfigMap data", "no config.yaml key (and more than one key to choose from)");
  }
  absl::StatusOr<topology::MigPartedFile> parsed = ParseMigPartedConfig(AsStringView(*text));
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ConfigMap data config.yaml: ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace wire
