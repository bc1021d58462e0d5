#include "wire/device_annotations.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "topology/wellknown.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::JsonValue;
using common::JsonWriter;
using common::ParseJson;
using common::WriteString;
namespace {

void Strings(JsonWriter& w, const std::vector<std::string>& values) {
  w.StartArray();
  for (const std::string& v : values) WriteString(w, v);
  w.EndArray();
}

absl::Status InvalidAnnotation(absl::string_view annotation, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(annotation, ": ", what));
}

// A JSON array of strings at `path`, into `out`.
absl::Status ReadStrings(const JsonValue& value, absl::string_view annotation,
                         absl::string_view path, std::vector<std::string>& out) {
  if (!value.IsArray())
    return InvalidAnnotation(annotation, absl::StrCat(path, " must be a list of IDs"));
  for (const JsonValue& item : value.GetArray()) {
    if (!item.IsString()) {
      return InvalidAnnotation(annotation, absl::StrCat(path, " must hold strings only"));
    }
    out.emplace_back(AsStringView(item));
  }
  return absl::OkStatus();
}

constexpr absl::string_view kPod = topology::kPodDevicesAnnotation;
constexpr absl::string_view kNode = topology::kNodeDevicesAnnotation;

}  // namespace

std::string EncodePodDevices(const PodDevicesAnnotation& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("node");
  WriteString(w, value.node);
  w.Key("containers");
  w.StartArray();
  for (const topology::ContainerDevices& c : value.containers) {
    w.StartObject();
    w.Key("name");
    WriteString(w, c.container);
    w.Key("devices");
    w.StartObject();
    for (const topology::ResourceDevices& r : c.resources) {
      w.Key(r.resource.data(), static_cast<rapidjson::SizeType>(r.resource.size()));
      Strings(w, r.ids);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::StatusOr<PodDevicesAnnotation> DecodePodDevices(absl::string_view json) {
  absl::StatusOr<rapidjson::Document> doc = ParseJson(json);
  if (!doc.ok()) return InvalidAnnotation(kPod, doc.status().message());
  if (!doc->IsObject()) return InvalidAnnotation(kPod, "must be a JSON object");
  PodDevicesAnnotation out;
  const JsonValue* node = FindMember(*doc, "node");
  if (!node || !node->IsString()) return InvalidAnnotation(kPod, "node must be a string");
  out.node = std::string(AsStringView(*node));
  const JsonValue* containers = FindMember(*doc, "containers");
  if (!containers || !containers->IsArray())
    return InvalidAnnotation(kPod, "containers must be a list");
  for (const JsonValue& c : containers->GetArray()) {
    const std::string at = absl::StrCat("containers[", out.containers.size(), "]");
    const JsonValue* name = c.IsObject() ? FindMember(c, "name") : nullptr;
    if (!name || !name->IsString())
      return InvalidAnnotation(kPod, absl::StrCat(at, ".name must be a string"));
    topology::ContainerDevices container{std::string(AsStringView(*name)), {}};
    const JsonValue* devices = FindMember(c, "devices");
    if (!devices || !devices->IsObject()) {
      return InvalidAnnotation(kPod, absl::StrCat(at, ".devices must be an object"));
    }
    for (auto it = devices->MemberBegin(); it != devices->MemberEnd(); ++it) {
      topology::ResourceDevices r{std::string(AsStringView(it->name)), {}};
      absl::Status read =
          ReadStrings(it->value, kPod, absl::StrCat(at, ".devices[\"", r.resource, "\"]"), r.ids);
      if (!read.ok()) return read;
      container.resources.push_back(std::move(r));
    }
    out.containers.push_back(std::move(container));
  }
  return out;
}

std::string EncodeNodeGpus(const topology::NodeGpus& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("gpus");
  w.StartArray();
  for (const topology::NodeGpu& g : value.gpus) {
    w.StartObject();
    w.Key("id");
    WriteString(w, g.id);
    if (!g.mig.empty()) {
      w.Key("mig");
      Strings(w, g.mig);
    }
    w.EndObject();
  }
  w.EndArray();
  if (!value.unplaced_mig.empty()) {
    w.Key("unplacedMig");
    Strings(w, value.unplaced_mig);
  }
  if (!value.pods.empty()) {
    w.Key("pods");
    w.StartObject();
    for (const topology::PodDeviceRecord& p : value.pods) {
      w.Key(p.uid.data(), static_cast<rapidjson::SizeType>(p.uid.size()));
      w.StartObject();
      for (const topology::ResourceDevices& r : p.resources) {
        w.Key(r.resource.data(), static_cast<rapidjson::SizeType>(r.resource.size()));
        Strings(w, r.ids);
      }
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::StatusOr<topology::NodeGpus> DecodeNodeGpus(absl::string_view json) {
  absl::StatusOr<rapidjson::Document> doc = ParseJson(json);
  if (!doc.ok()) return InvalidAnnotation(kNode, doc.status().message());
  if (!doc->IsObject()) return InvalidAnnotation(kNode, "must be a JSON object");
  topology::NodeGpus out;
  const JsonValue* gpus = FindMember(*doc, "gpus");
  if (!gpus || !gpus->IsArray()) return InvalidAnnotation(kNode, "gpus must be a list");
  for (const JsonValue& g : gpus->GetArray()) {
    const std::string at = absl::StrCat("gpus[", out.gpus.size(), "]");
    const JsonValue* id = g.IsObject() ? FindMember(g, "id") : nullptr;
    if (!id || !id->IsString())
      return InvalidAnnotation(kNode, absl::StrCat(at, ".id must be a string"));
    topology::NodeGpu gpu{std::string(AsStringView(*id)), {}};
    if (const JsonValue* mig = FindMember(g, "mig")) {
      absl::Status read = ReadStrings(*mig, kNode, absl::StrCat(at, ".mig"), gpu.mig);
      if (!read.ok()) return read;
    }
    out.gpus.push_back(std::move(gpu));
  }
  if (const JsonValue* unplaced = FindMember(*doc, "unplacedMig")) {
    absl::Status read = ReadStrings(*unplaced, kNode, "unplacedMig", out.unplaced_mig);
    if (!read.ok()) return read;
  }
  if (const JsonValue* pods = FindMember(*doc, "pods")) {
    if (!pods->IsObject()) return InvalidAnnotation(kNode, "pods must be an object");
    for (auto p = pods->MemberBegin(); p != pods->MemberEnd(); ++p) {
      topology::PodDeviceRecord record{std::string(AsStringView(p->name)), {}};
      const std::string at = absl::StrCat("pods[\"", record.uid, "\"]");
      if (!p->value.IsObject())
        return InvalidAnnotation(kNode, absl::StrCat(at, " must be an object"));
      for (auto r = p->value.MemberBegin(); r != p->value.MemberEnd(); ++r) {
        topology::ResourceDevices resource{std::string(AsStringView(r->name)), {}};
        absl::Status read = ReadStrings(
            r->value, kNode, absl::StrCat(at, "[\"", resource.resource, "\"]"), resource.ids);
        if (!read.ok()) return read;
        record.resources.push_back(std::move(resource));
      }
      // As a record is compared: resources by name, IDs sorted.
      std::sort(record.resources.begin(), record.resources.end(),
                [](const auto& a, const auto& b) { return a.resource < b.resource; });
      for (topology::ResourceDevices& r : record.resources) std::sort(r.ids.begin(), r.ids.end());
      out.pods.push_back(std::move(record));
    }
    std::sort(out.pods.begin(), out.pods.end(),
              [](const auto& a, const auto& b) { return a.uid < b.uid; });
  }
  return out;
}

}  // namespace wire
