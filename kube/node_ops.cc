#include "kube/node_ops.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "kube/objects.h"
#include "topology/quantity.h"
#include "topology/reconfigure_rules.h"
#include "topology/wellknown.h"

namespace kube {
namespace {

using common::FindMember;
using common::FindNonNull;
using common::JsonValue;
using common::StringOr;

constexpr char kMergePatch[] = "application/merge-patch+json";

// `what` names the call in the error, e.g. "get node gpu-1".
absl::Status CallError(absl::string_view what, const ApiResponse& r) {
  std::string text = absl::StrCat(what, ": HTTP ", r.status, ": ", DescribeError(r));
  if (r.status == 404) return absl::NotFoundError(text);
  if (r.status == 401 || r.status == 403) return absl::PermissionDeniedError(text);
  if (r.status == 409) return absl::AbortedError(text);
  return absl::UnavailableError(text);
}

absl::Status Expect(absl::string_view what, const absl::StatusOr<ApiResponse>& r,
                    std::initializer_list<int> ok) {
  if (!r.ok()) return absl::UnavailableError(absl::StrCat(what, ": ", r.status().message()));
  for (int code : ok) {
    if (r->status == code) return absl::OkStatus();
  }
  return CallError(what, *r);
}

std::map<std::string, std::string> StringMap(const JsonValue* obj) {
  std::map<std::string, std::string> out;
  if (obj == nullptr || !obj->IsObject()) return out;
  for (auto it = obj->MemberBegin(); it != obj->MemberEnd(); ++it) {
    if (it->value.IsString()) {
      out.emplace(common::AsStringView(it->name), common::AsStringView(it->value));
    }
  }
  return out;
}

void AddGpuResources(const JsonValue& containers, std::vector<std::string>& out) {
  if (!containers.IsArray()) return;
  for (const JsonValue& c : containers.GetArray()) {
    const JsonValue* resources = FindNonNull(c, "resources");
    if (resources == nullptr) continue;
    for (const char* part : {"limits", "requests"}) {
      const JsonValue* m = FindNonNull(*resources, part);
      if (m == nullptr || !m->IsObject()) continue;
      for (auto it = m->MemberBegin(); it != m->MemberEnd(); ++it) {
        std::string name(common::AsStringView(it->name));
        absl::StatusOr<topology::Quantity> q =
            topology::Quantity::Parse(common::AsStringView(it->value));
        if (!topology::IsGpuResource(name) || !q.ok() || q->milli() <= 0) continue;
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      }
    }
  }
}

PodFacts ParsePod(const JsonValue& pod) {
  PodFacts p;
  if (const JsonValue* meta = FindNonNull(pod, "metadata")) {
    p.namespace_name = std::string(StringOr(*meta, "namespace"));
    p.name = std::string(StringOr(*meta, "name"));
    p.uid = std::string(StringOr(*meta, "uid"));
    p.terminating = FindNonNull(*meta, "deletionTimestamp") != nullptr;
    if (const JsonValue* refs = FindNonNull(*meta, "ownerReferences"); refs && refs->IsArray()) {
      for (const JsonValue& ref : refs->GetArray()) {
        const JsonValue* controller = FindMember(ref, "controller");
        if (controller == nullptr || !controller->IsBool() || !controller->GetBool()) continue;
        p.owner = PodOwner{std::string(StringOr(ref, "kind")), std::string(StringOr(ref, "name")),
                           std::string(StringOr(ref, "uid"))};
      }
    }
  }
  if (const JsonValue* spec = FindNonNull(pod, "spec")) {
    p.node = std::string(StringOr(*spec, "nodeName"));
    for (const char* list : {"containers", "initContainers"}) {
      if (const JsonValue* c = FindNonNull(*spec, list)) AddGpuResources(*c, p.gpu_resources);
    }
  }
  if (const JsonValue* status = FindNonNull(pod, "status")) {
    p.phase = std::string(StringOr(*status, "phase"));
    if (const JsonValue* conds = FindNonNull(*status, "conditions"); conds && conds->IsArray()) {
      for (const JsonValue& c : conds->GetArray()) {
        if (StringOr(c, "type") == "Ready") p.ready = StringOr(c, "status") == "True";
      }
    }
  }
  return p;
}

absl::StatusOr<std::vector<PodFacts>> ListPods(Api& api, const std::string& path) {
  absl::StatusOr<ApiResponse> r = api.Get(path);
  RETURN_IF_ERROR(Expect("list pods", r, {200}));
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(r->body));
  std::vector<PodFacts> out;
  const JsonValue* items = FindNonNull(doc, "items");
  if (items == nullptr || !items->IsArray()) return out;
  for (const JsonValue& item : items->GetArray()) out.push_back(ParsePod(item));
  return out;
}

}  // namespace

std::optional<std::string> NodeFacts::Label(absl::string_view key) const {
  auto it = labels.find(std::string(key));
  if (it == labels.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<NodeFacts> ParseNode(absl::string_view json) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(json));
  const JsonValue* meta = FindNonNull(doc, "metadata");
  if (meta == nullptr || !meta->IsObject()) {
    return absl::InvalidArgumentError("node: metadata missing");
  }
  NodeFacts n;
  n.name = std::string(StringOr(*meta, "name"));
  n.uid = std::string(StringOr(*meta, "uid"));
  n.resource_version = std::string(StringOr(*meta, "resourceVersion"));
  n.labels = StringMap(FindNonNull(*meta, "labels"));
  if (const JsonValue* spec = FindNonNull(doc, "spec")) {
    const JsonValue* u = FindMember(*spec, "unschedulable");
    n.unschedulable = u != nullptr && u->IsBool() && u->GetBool();
  }
  n.offer.labels = n.labels;
  if (const JsonValue* status = FindNonNull(doc, "status")) {
    for (const auto& [name, text] : StringMap(FindNonNull(*status, "allocatable"))) {
      if (!absl::StartsWith(name, topology::kNvidiaResourcePrefix)) continue;
      absl::StatusOr<topology::Quantity> q = topology::Quantity::Parse(text);
      if (q.ok()) n.offer.allocatable[name] = q->Value();
    }
  }
  return n;
}

absl::StatusOr<NodeFacts> GetNode(Api& api, const std::string& node) {
  absl::StatusOr<ApiResponse> r = api.Get(absl::StrCat("/api/v1/nodes/", node));
  RETURN_IF_ERROR(Expect(absl::StrCat("get node ", node), r, {200}));
  return ParseNode(r->body);
}

absl::StatusOr<std::vector<PodFacts>> ListPodsOnNode(Api& api, const std::string& node) {
  return ListPods(api, absl::StrCat("/api/v1/pods?fieldSelector=spec.nodeName%3D", node));
}

absl::StatusOr<std::vector<PodFacts>> ListPodsInNamespace(Api& api, const std::string& ns) {
  return ListPods(api, absl::StrCat("/api/v1/namespaces/", ns, "/pods"));
}

absl::StatusOr<int> OwnerReplicas(Api& api, const std::string& ns, const PodOwner& owner) {
  std::string plural;
  if (owner.kind == "ReplicaSet") plural = "replicasets";
  if (owner.kind == "StatefulSet") plural = "statefulsets";
  if (owner.kind == "Deployment") plural = "deployments";
  if (plural.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(owner.kind, " has no replica count"));
  }
  std::string what = absl::StrCat("get ", owner.kind, " ", ns, "/", owner.name);
  absl::StatusOr<ApiResponse> r =
      api.Get(absl::StrCat("/apis/apps/v1/namespaces/", ns, "/", plural, "/", owner.name));
  RETURN_IF_ERROR(Expect(what, r, {200}));
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(r->body));
  const JsonValue* spec = FindNonNull(doc, "spec");
  const JsonValue* replicas = spec == nullptr ? nullptr : FindNonNull(*spec, "replicas");
  if (replicas == nullptr) return 1;  // the API's default
  if (!replicas->IsInt()) return absl::InvalidArgumentError(absl::StrCat(what, ": bad replicas"));
  return replicas->GetInt();
}

absl::Status SetUnschedulable(Api& api, const std::string& node, bool value) {
  return Expect(
      absl::StrCat(value ? "cordon " : "uncordon ", node),
      api.Patch(absl::StrCat("/api/v1/nodes/", node), UnschedulablePatchJson(value), kMergePatch),
      {200});
}

absl::Status SetNodeLabels(
    Api& api, const std::string& node,
    const std::vector<std::pair<std::string, std::optional<std::string>>>& labels) {
  return Expect(
      absl::StrCat("label node ", node),
      api.Patch(absl::StrCat("/api/v1/nodes/", node), LabelsPatchJson(labels), kMergePatch), {200});
}

absl::StatusOr<Eviction> EvictPod(Api& api, const PodFacts& pod) {
  std::string what = absl::StrCat("evict pod ", pod.Key());
  absl::StatusOr<ApiResponse> r = api.Post(
      absl::StrCat("/api/v1/namespaces/", pod.namespace_name, "/pods/", pod.name, "/eviction"),
      EvictionJson(pod.namespace_name, pod.name));
  if (!r.ok()) return absl::UnavailableError(absl::StrCat(what, ": ", r.status().message()));
  if (r->status == 200 || r->status == 201) return Eviction{EvictionResult::kEvicted, ""};
  if (r->status == 404) return Eviction{EvictionResult::kGone, ""};
  if (r->status == 429) return Eviction{EvictionResult::kBlocked, DescribeError(*r)};
  return CallError(what, *r);
}

absl::Status WatchNode(Api& api, const std::string& node, const std::string& resource_version,
                       const std::function<bool(const NodeFacts&)>& on_node, Api::Stream* stream) {
  std::string path = absl::StrCat("/api/v1/nodes?watch=1&fieldSelector=metadata.name%3D", node,
                                  "&resourceVersion=", resource_version, "&timeoutSeconds=300");
  absl::Status bad;
  absl::StatusOr<int> status = api.StreamLines(
      path,
      [&](absl::string_view line) {
        absl::StatusOr<rapidjson::Document> event = common::ParseJson(line);
        if (!event.ok()) return true;
        absl::string_view type = StringOr(*event, "type");
        const JsonValue* object = FindNonNull(*event, "object");
        if (object == nullptr || (type != "ADDED" && type != "MODIFIED")) {
          if (type == "DELETED") {
            bad = absl::NotFoundError(absl::StrCat("node ", node, " was deleted"));
            return false;
          }
          return true;  // BOOKMARK; an ERROR (410) ends the stream and the caller re-reads
        }
        absl::StatusOr<NodeFacts> facts = ParseNode(common::ToJson(*object));
        return !facts.ok() || !on_node(*facts);
      },
      stream, 330);
  if (!bad.ok()) return bad;
  if (!status.ok()) return status.status();
  if (*status == 401 || *status == 403) {
    return absl::PermissionDeniedError(absl::StrCat("watch node ", node, ": HTTP ", *status));
  }
  if (*status != 200) {
    return absl::UnavailableError(absl::StrCat("watch node ", node, ": HTTP ", *status));
  }
  return absl::OkStatus();
}

absl::Status PostNodeEvent(Api& api, const NodeFacts& node, bool warning, absl::string_view reason,
                           absl::string_view message) {
  std::string body =
      EventJson(NodeEvent{node.name, node.uid, warning, std::string(reason), std::string(message)},
                absl::Now());
  return Expect("post event", api.Post("/api/v1/namespaces/default/events", body), {200, 201});
}

absl::StatusOr<std::string> GetConfigMap(Api& api, const std::string& ns, const std::string& name) {
  absl::StatusOr<ApiResponse> r =
      api.Get(absl::StrCat("/api/v1/namespaces/", ns, "/configmaps/", name));
  RETURN_IF_ERROR(Expect(absl::StrCat("get configmap ", ns, "/", name), r, {200}));
  return r->body;
}

absl::StatusOr<std::string> CreateSmokePod(Api& api, const std::string& ns, const std::string& node,
                                           const std::string& image, const std::string& resource) {
  std::string body = SmokePodJson(node, image, resource);
  absl::StatusOr<ApiResponse> r = api.Post(absl::StrCat("/api/v1/namespaces/", ns, "/pods"), body);
  RETURN_IF_ERROR(Expect("create smoke pod", r, {200, 201}));
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(r->body));
  PodFacts created = ParsePod(doc);
  if (created.name.empty()) return absl::InternalError("create smoke pod: no name in the reply");
  return created.name;
}

absl::StatusOr<PodFacts> GetPod(Api& api, const std::string& ns, const std::string& name) {
  absl::StatusOr<ApiResponse> r = api.Get(absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name));
  RETURN_IF_ERROR(Expect(absl::StrCat("get pod ", ns, "/", name), r, {200}));
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(r->body));
  return ParsePod(doc);
}

absl::Status DeletePod(Api& api, const std::string& ns, const std::string& name) {
  return Expect(absl::StrCat("delete pod ", ns, "/", name),
                api.Delete(absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name)),
                {200, 202, 404});
}

}  // namespace kube
