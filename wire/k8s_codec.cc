#include "wire/k8s_codec.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "common/json_path.h"
#include "common/yaml_json.h"
#include "topology/wellknown.h"
#include "wire/device_annotations.h"
#include "wire/disruption_budget_codec.h"
#include "wire/dra_codec.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::FindNonNull;
using common::IndexPath;
using common::JoinPath;
using common::JsonPath;
using common::JsonValue;
using common::OptionalArray;
using common::OptionalObject;
using common::ParseJson;
using common::RequireObject;
using common::RequireString;
using common::StringOr;
using common::ToJson;
using common::YamlToJson;

using topology::ContainerFacts;
using topology::Labels;
using topology::NodeFacts;
using topology::PodFacts;
using topology::Quantity;
using topology::ResourceList;

namespace {

// The paths of a pod's fields are spelled out only when an error names them (common/json_path.h):
// admission decodes every pod it reviews.
absl::StatusOr<Quantity> QuantityAt(const JsonValue& value, const JsonPath& path) {
  // The common case here; anything else, and every error's wording, from the string-path
  // namesake.
  if (value.IsString()) {
    absl::StatusOr<Quantity> q = Quantity::Parse(AsStringView(value));
    if (q.ok()) return q;
  }
  return ParseQuantityValue(value, path.str());
}

absl::StatusOr<ResourceList> ResourceListAt(const JsonValue& value, const JsonPath& path) {
  ResourceList out;
  if (value.IsNull()) return out;
  if (!value.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(path.str(), ": expected object"));
  }
  for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it) {
    absl::string_view key = AsStringView(it->name);
    ASSIGN_OR_RETURN(Quantity q, QuantityAt(it->value, JsonPath(path, key)));
    out.insert_or_assign(std::string(key), q);
  }
  return out;
}

}  // namespace

absl::StatusOr<Quantity> ParseQuantityValue(const JsonValue& value, absl::string_view path) {
  if (value.IsString()) {
    absl::StatusOr<Quantity> q = Quantity::Parse(AsStringView(value));
    if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", q.status().message()));
    return q;
  }
  if (value.IsInt64()) {
    int64_t units = value.GetInt64();
    if (units > INT64_MAX / 1000 || units < INT64_MIN / 1000) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": quantity too large"));
    }
    return Quantity::FromUnits(units);
  }
  if (value.IsNumber()) {
    // Kubernetes parses an unquoted number's own text. The shortest text that round-trips is
    // that text for any number a person writes ("0.1", "1234567.5"); StrCat's six significant
    // digits would turn 1234567.5 into 1.23457e+06.
    char text[64];
    std::to_chars_result written = std::to_chars(text, text + sizeof(text), value.GetDouble());
    absl::StatusOr<Quantity> q =
        Quantity::Parse(absl::string_view(text, static_cast<size_t>(written.ptr - text)));
    if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", q.status().message()));
    return q;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": quantity must be a string or number"));
}

absl::StatusOr<ResourceList> ParseResourceList(const JsonValue& value, absl::string_view path) {
  return ResourceListAt(value, JsonPath(path));
}

namespace {

// ParseStringMap storing only the keys `keep` accepts (every value is checked all the same).
template <typename Keep>
absl::StatusOr<Labels> ParseStringMapKeeping(const JsonValue& value, const JsonPath& path,
                                             Keep keep) {
  Labels out;
  if (value.IsNull()) return out;
  if (!value.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(path.str(), ": expected object"));
  }
  for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it) {
    absl::string_view key = AsStringView(it->name);
    if (!it->value.IsString()) {
      return absl::InvalidArgumentError(
          absl::StrCat(JsonPath(path, key).str(), ": expected string value"));
    }
    if (keep(key)) out.insert_or_assign(std::string(key), std::string(AsStringView(it->value)));
  }
  return out;
}

}  // namespace

absl::StatusOr<Labels> ParseStringMap(const JsonValue& value, absl::string_view path) {
  return ParseStringMapKeeping(value, JsonPath(path), [](absl::string_view) { return true; });
}

namespace {

struct Metadata {
  std::string name, namespace_name, uid;
  std::string created;  // creationTimestamp
  Labels labels, annotations;
};

const PodMetadataFilter kKeepAll{};

// The node agent's annotations, read for what they say. One that does not decode only means
// nothing is known (the agent writes nothing else, and the webhook lets nobody else write).
template <typename T>
std::optional<T> DecodedAnnotation(const JsonValue& object, absl::string_view key,
                                   absl::StatusOr<T> (*decode)(absl::string_view)) {
  std::optional<std::string> value = AnnotationOf(&object, key);
  if (!value) return std::nullopt;
  absl::StatusOr<T> decoded = decode(*value);
  if (!decoded.ok()) return std::nullopt;
  return *std::move(decoded);
}

absl::StatusOr<Metadata> ParseMetadata(const JsonValue& object, const JsonPath& path,
                                       bool name_required,
                                       const PodMetadataFilter& keep = kKeepAll) {
  Metadata m;
  const JsonPath meta_path(path, "metadata");
  ASSIGN_OR_RETURN(const JsonValue* meta, RequireObject(object, "metadata", path));
  if (name_required) {
    ASSIGN_OR_RETURN(absl::string_view name, RequireString(*meta, "name", meta_path));
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(meta_path.str(), ".name: empty"));
    }
    m.name = std::string(name);
  } else {
    m.name = std::string(StringOr(*meta, "name"));
  }
  m.namespace_name = std::string(StringOr(*meta, "namespace"));
  m.uid = std::string(StringOr(*meta, "uid"));
  m.created = std::string(StringOr(*meta, "creationTimestamp"));
  if (const JsonValue* labels = FindMember(*meta, "labels")) {
    ASSIGN_OR_RETURN(m.labels,
                     ParseStringMapKeeping(*labels, JsonPath(meta_path, "labels"),
                                           [&](absl::string_view) { return keep.all_labels; }));
  }
  if (const JsonValue* annotations = FindMember(*meta, "annotations")) {
    ASSIGN_OR_RETURN(m.annotations,
                     ParseStringMapKeeping(*annotations, JsonPath(meta_path, "annotations"),
                                           [&](absl::string_view key) {
                                             return keep.all_annotations ||
                                                    std::find(keep.annotations.begin(),
                                                              keep.annotations.end(),
                                                              key) != keep.annotations.end();
                                           }));
  }
  return m;
}

// What device-access reads of a container. The API server has validated field types before
// anyone reads a pod; a hand-written manifest with a wrong type simply does not count as asking
// for the thing.
void ReadDeviceAccess(const JsonValue& c, ContainerFacts& facts) {
  if (const JsonValue* sc = FindNonNull(c, "securityContext"); sc && sc->IsObject()) {
    const JsonValue* privileged = FindNonNull(*sc, "privileged");
    facts.privileged = privileged && privileged->IsBool() && privileged->GetBool();
    if (const JsonValue* caps = FindNonNull(*sc, "capabilities"); caps && caps->IsObject()) {
      if (const JsonValue* add = FindNonNull(*caps, "add"); add && add->IsArray()) {
        for (const JsonValue& cap : add->GetArray()) {
          if (cap.IsString()) facts.capabilities_added.emplace_back(AsStringView(cap));
        }
      }
    }
  }
  if (const JsonValue* env = FindNonNull(c, "env"); env && env->IsArray()) {
    for (const JsonValue& e : env->GetArray()) {
      if (!e.IsObject()) continue;
      absl::string_view name = StringOr(e, "name");
      if (std::find(std::begin(topology::kDeviceEnvNames), std::end(topology::kDeviceEnvNames),
                    name) == std::end(topology::kDeviceEnvNames)) {
        continue;
      }
      facts.env.push_back({std::string(name), std::string(StringOr(e, "value"))});
    }
  }
}

// Host path volumes, hostIPC, the node selector and the required node affinity's `In`
// expressions: what admission reads of a pod besides its containers.
void ReadPlacementAndHostAccess(const JsonValue& spec, topology::PodFacts& facts) {
  if (const JsonValue* volumes = FindNonNull(spec, "volumes"); volumes && volumes->IsArray()) {
    for (const JsonValue& v : volumes->GetArray()) {
      const JsonValue* host_path = FindNonNull(v, "hostPath");
      if (!host_path) continue;
      facts.host_paths.push_back(
          {std::string(StringOr(v, "name")), std::string(StringOr(*host_path, "path"))});
    }
  }
  const JsonValue* host_ipc = FindNonNull(spec, "hostIPC");
  facts.host_ipc = host_ipc && host_ipc->IsBool() && host_ipc->GetBool();
  if (const JsonValue* selector = FindNonNull(spec, "nodeSelector");
      selector && selector->IsObject()) {
    for (auto it = selector->MemberBegin(); it != selector->MemberEnd(); ++it) {
      if (it->value.IsString()) {
        facts.node_selector.emplace(AsStringView(it->name), AsStringView(it->value));
      }
    }
  }
  const JsonValue* affinity = FindNonNull(spec, "affinity");
  const JsonValue* node = affinity ? FindNonNull(*affinity, "nodeAffinity") : nullptr;
  const JsonValue* required =
      node ? FindNonNull(*node, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  const JsonValue* terms = required ? FindNonNull(*required, "nodeSelectorTerms") : nullptr;
  if (!terms || !terms->IsArray()) return;
  for (const JsonValue& term : terms->GetArray()) {
    const JsonValue* exprs = FindNonNull(term, "matchExpressions");
    if (!exprs || !exprs->IsArray()) continue;
    for (const JsonValue& e : exprs->GetArray()) {
      if (StringOr(e, "operator") != "In") continue;
      const JsonValue* values = FindNonNull(e, "values");
      if (!values || !values->IsArray()) continue;
      topology::NodeAffinityIn in{std::string(StringOr(e, "key")), {}};
      for (const JsonValue& v : values->GetArray()) {
        if (v.IsString()) in.values.emplace_back(AsStringView(v));
      }
      facts.required_affinity_in.push_back(std::move(in));
    }
  }
}

absl::StatusOr<std::vector<ContainerFacts>> ParseContainers(const JsonValue& spec,
                                                            absl::string_view key,
                                                            const JsonPath& path) {
  std::vector<ContainerFacts> out;
  ASSIGN_OR_RETURN(const JsonValue* list, OptionalArray(spec, key, path));
  if (!list) return out;
  const JsonPath list_path(path, key);
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const JsonValue& c = (*list)[i];
    const JsonPath c_path(list_path, i);
    if (!c.IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat(c_path.str(), ": expected object"));
    }
    ContainerFacts facts;
    facts.name = std::string(StringOr(c, "name"));
    facts.restartable = StringOr(c, "restartPolicy") == "Always";
    ASSIGN_OR_RETURN(const JsonValue* resources, OptionalObject(c, "resources", c_path));
    if (resources) {
      const JsonPath r_path(c_path, "resources");
      if (const JsonValue* req = FindMember(*resources, "requests")) {
        ASSIGN_OR_RETURN(facts.requests, ResourceListAt(*req, JsonPath(r_path, "requests")));
      }
      if (const JsonValue* lim = FindMember(*resources, "limits")) {
        ASSIGN_OR_RETURN(facts.limits, ResourceListAt(*lim, JsonPath(r_path, "limits")));
      }
    }
    ReadDeviceAccess(c, facts);
    out.push_back(std::move(facts));
  }
  return out;
}

}  // namespace

absl::StatusOr<NodeFacts> ParseNode(const JsonValue& node, absl::string_view path) {
  if (!node.IsObject()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected object"));
  ASSIGN_OR_RETURN(Metadata meta, ParseMetadata(node, JsonPath(path), /*name_required=*/true));
  NodeFacts facts;
  facts.name = std::move(meta.name);
  facts.labels = std::move(meta.labels);
  facts.reported_gpus = DecodedAnnotation(node, topology::kNodeDevicesAnnotation, DecodeNodeGpus);
  ASSIGN_OR_RETURN(const JsonValue* status, OptionalObject(node, "status", path));
  if (status) {
    if (const JsonValue* alloc = FindMember(*status, "allocatable")) {
      ASSIGN_OR_RETURN(
          facts.allocatable,
          ParseResourceList(*alloc, JoinPath(JoinPath(path, "status"), "allocatable")));
    }
    if (const JsonValue* capacity = FindMember(*status, "capacity")) {
      ASSIGN_OR_RETURN(
          ResourceList all,
          ParseResourceList(*capacity, JoinPath(JoinPath(path, "status"), "capacity")));
      // Only the GPU entries: a node's model keeps nothing it never reads.
      for (auto& [name, quantity] : all) {
        if (absl::StartsWith(name, topology::kNvidiaResourcePrefix)) {
          facts.gpu_capacity.emplace(name, quantity);
        }
      }
    }
  }
  ASSIGN_OR_RETURN(const JsonValue* spec, OptionalObject(node, "spec", path));
  if (spec) {
    ASSIGN_OR_RETURN(const JsonValue* taints,
                     OptionalArray(*spec, "taints", JoinPath(path, "spec")));
    if (taints) {
      for (const JsonValue& t : taints->GetArray()) {
        facts.taints.push_back({std::string(StringOr(t, "key")), std::string(StringOr(t, "value")),
                                std::string(StringOr(t, "effect"))});
      }
    }
  }
  return facts;
}

absl::StatusOr<PodFacts> ParsePod(const JsonValue& pod, absl::string_view path) {
  return ParsePod(pod, path, kKeepAll);
}

absl::StatusOr<PodFacts> ParsePod(const JsonValue& pod, absl::string_view path,
                                  const PodMetadataFilter& keep) {
  if (!pod.IsObject()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected object"));
  const JsonPath root(path);
  ASSIGN_OR_RETURN(Metadata meta, ParseMetadata(pod, root, /*name_required=*/false, keep));
  PodFacts facts;
  facts.name = std::move(meta.name);
  facts.namespace_name = std::move(meta.namespace_name);
  facts.uid = std::move(meta.uid);
  facts.created = std::move(meta.created);
  facts.labels = std::move(meta.labels);
  facts.annotations = std::move(meta.annotations);
  facts.device_report = DecodedAnnotation(pod, topology::kPodDevicesAnnotation, DecodePodDevices);
  const JsonPath spec_path(root, "spec");
  ASSIGN_OR_RETURN(const JsonValue* spec, RequireObject(pod, "spec", root));
  facts.node_name = std::string(StringOr(*spec, "nodeName"));
  facts.priority_class_name = std::string(StringOr(*spec, "priorityClassName"));
  facts.scheduler_name = std::string(StringOr(*spec, "schedulerName"));
  facts.never_preempts = StringOr(*spec, "preemptionPolicy") == "Never";
  if (const JsonValue* priority = FindNonNull(*spec, "priority")) {
    if (!priority->IsInt()) {
      return absl::InvalidArgumentError(
          absl::StrCat(JsonPath(spec_path, "priority").str(), ": expected a 32-bit integer"));
    }
    facts.priority = priority->GetInt();
  }
  ASSIGN_OR_RETURN(facts.containers, ParseContainers(*spec, "containers", spec_path));
  ASSIGN_OR_RETURN(facts.init_containers, ParseContainers(*spec, "initContainers", spec_path));
  ASSIGN_OR_RETURN(facts.ephemeral_containers,
                   ParseContainers(*spec, "ephemeralContainers", spec_path));
  ReadPlacementAndHostAccess(*spec, facts);
  if (const JsonValue* overhead = FindMember(*spec, "overhead")) {
    ASSIGN_OR_RETURN(facts.overhead, ResourceListAt(*overhead, JsonPath(spec_path, "overhead")));
  }
  ASSIGN_OR_RETURN(const JsonValue* status, OptionalObject(pod, "status", root));
  if (status) facts.phase = std::string(StringOr(*status, "phase"));
  ASSIGN_OR_RETURN(const JsonValue* claims, OptionalArray(*spec, "resourceClaims", spec_path));
  if (claims) {
    for (const JsonValue& c : claims->GetArray()) {
      if (!c.IsObject()) {
        return absl::InvalidArgumentError(
            absl::StrCat(JsonPath(spec_path, "resourceClaims").str(), ": expected objects"));
      }
      facts.resource_claims.push_back({std::string(StringOr(c, "name")),
                                       std::string(StringOr(c, "resourceClaimName")),
                                       std::string(StringOr(c, "resourceClaimTemplateName"))});
    }
    // A template's claim is named in the status once the claim controller made it.
    ASSIGN_OR_RETURN(const JsonValue* statuses,
                     status
                         ? OptionalArray(*status, "resourceClaimStatuses", JsonPath(root, "status"))
                         : absl::StatusOr<const JsonValue*>(nullptr));
    if (statuses) {
      for (const JsonValue& st : statuses->GetArray()) {
        for (topology::PodClaimRef& ref : facts.resource_claims) {
          if (ref.claim.empty() && ref.name == StringOr(st, "name")) {
            ref.claim = std::string(StringOr(st, "resourceClaimName"));
          }
        }
      }
    }
  }
  return facts;
}

absl::StatusOr<topology::ClusterData> ParseClusterList(const JsonValue& list) {
  if (!list.IsObject()) return absl::InvalidArgumentError("cluster file: expected a List object");
  absl::string_view list_kind = StringOr(list, "kind");
  absl::string_view default_kind = absl::EndsWith(list_kind, "List") && list_kind != "List"
                                       ? absl::StripSuffix(list_kind, "List")
                                       : absl::string_view();
  ASSIGN_OR_RETURN(const JsonValue* items, OptionalArray(list, "items", ""));
  topology::ClusterData data;
  if (!items) {
    // A single object is a one-item list.
    if (list_kind == "Node" || list_kind == "Pod" || list_kind == "Namespace") {
      default_kind = list_kind;
      items = nullptr;
    } else {
      return absl::InvalidArgumentError("cluster file: no items (expected kubectl's List output)");
    }
  }
  auto take = [&](const JsonValue& item, std::string path) -> absl::Status {
    absl::string_view kind = StringOr(item, "kind", default_kind);
    // DRA objects of older API versions (v1alpha2's classic claims) mean something else under
    // similar keys: like kinds the model does not read, they are left out.
    absl::string_view api_version = StringOr(item, "apiVersion");
    if (absl::StartsWith(api_version, "resource.k8s.io/") && api_version != "resource.k8s.io/v1" &&
        api_version != "resource.k8s.io/v1beta2" && api_version != "resource.k8s.io/v1beta1") {
      return absl::OkStatus();
    }
    if (kind == "Node") {
      ASSIGN_OR_RETURN(topology::NodeFacts node, ParseNode(item, path));
      data.nodes.push_back(std::move(node));
    } else if (kind == "Pod") {
      ASSIGN_OR_RETURN(topology::PodFacts pod, ParsePod(item, path));
      data.pods.push_back(std::move(pod));
    } else if (kind == "Namespace") {
      ASSIGN_OR_RETURN(Metadata meta, ParseMetadata(item, JsonPath(path), /*name_required=*/true));
      data.namespace_labels.insert_or_assign(meta.name, std::move(meta.labels));
    } else if (kind == "ResourceSlice") {
      ASSIGN_OR_RETURN(topology::DraSlice slice, ParseResourceSlice(item, path));
      data.dra_slices.push_back(std::move(slice));
    } else if (kind == "ResourceClaim") {
      ASSIGN_OR_RETURN(topology::DraClaim claim, ParseResourceClaim(item, path));
      data.dra_claims.push_back(std::move(claim));
    } else if (kind == "ResourceClaimTemplate") {
      ASSIGN_OR_RETURN(topology::DraClaim claim_template, ParseResourceClaimTemplate(item, path));
      data.dra_claim_templates.push_back(std::move(claim_template));
    } else if (kind == "PodDisruptionBudget") {
      ASSIGN_OR_RETURN(topology::DisruptionBudget budget, ParseDisruptionBudget(item, path));
      data.disruption_budgets.push_back(std::move(budget));
    } else if (kind == "DeviceClass") {
      ASSIGN_OR_RETURN(topology::DraDeviceClass device_class, ParseDeviceClass(item, path));
      data.dra_classes.push_back(std::move(device_class));
    }
    return absl::OkStatus();
  };
  if (!items) {
    RETURN_IF_ERROR(take(list, std::string(list_kind)));
    return data;
  }
  for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
    RETURN_IF_ERROR(take((*items)[i], IndexPath("items", i)));
  }
  return data;
}

absl::StatusOr<topology::ClusterData> ParseClusterText(absl::string_view text) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObjectText(text));
  return ParseClusterList(doc);
}

absl::StatusOr<rapidjson::Document> ParseObjectText(absl::string_view text) {
  absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(text);
  if (!trimmed.empty() && (trimmed[0] == '{' || trimmed[0] == '[')) return ParseJson(text);
  return YamlToJson(text);
}

std::optional<std::string> AnnotationOf(const JsonValue* object, absl::string_view key) {
  if (!object || !object->IsObject()) return std::nullopt;
  const JsonValue* meta = FindNonNull(*object, "metadata");
  if (!meta || !meta->IsObject()) return std::nullopt;
  const JsonValue* annotations = FindNonNull(*meta, "annotations");
  if (!annotations || !annotations->IsObject()) return std::nullopt;
  const JsonValue* value = FindMember(*annotations, key);
  if (!value) return std::nullopt;
  if (value->IsString()) return std::string(AsStringView(*value));
  return ToJson(*value);
}

}  // namespace wire
