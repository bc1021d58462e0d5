// Test support, part of the kube-apiserver emulation: the pods/binding subresource (see
// apiserver_binding.h).
#include "test/support/apiserver_binding.h"

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "test/support/apiserver_objects.h"

namespace testing_support::apiserver {

Reply Bind(ObjectStore& store, absl::string_view ns, absl::string_view name,
           absl::string_view body) {
  const ResourceInfo& info = Info(Resource::kPods);
  absl::StatusOr<rapidjson::Document> binding = common::ParseJson(body);
  if (!binding.ok()) return BadRequest(binding.status().message());
  std::string binding_name = MetaString(*binding, "name");
  if (binding_name != name) {
    return BadRequest("name in URL does not match name in Binding object");
  }
  std::string binding_ns = MetaString(*binding, "namespace");
  if (!binding_ns.empty() && binding_ns != ns) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the "
        "request");
  }
  const Value* target = common::FindMember(*binding, "target");
  std::string node = target == nullptr ? "" : StringAt(*target, "name");
  std::string target_kind = target == nullptr ? "" : StringAt(*target, "kind");
  if (!target_kind.empty() && target_kind != "Node") {
    return Invalid("Binding", "", "Binding", name, "target.kind", "FieldValueNotSupported",
                   absl::StrCat("Unsupported value: \"", target_kind,
                                "\": supported values: \"Node\", \"<empty>\""));
  }
  if (node.empty()) {
    return Invalid("Binding", "", "Binding", name, "target.name", "FieldValueRequired",
                   "Required value");
  }
  std::string key = KeyFor(info, ns, name);
  const std::string* cur = store.Current(Resource::kPods, key);
  if (cur == nullptr) return NotFound(info, name);
  std::string old_json = *cur;
  rapidjson::Document pod;
  pod.Parse(old_json.c_str(), old_json.size());
  Alloc& a = pod.GetAllocator();
  std::string uid = MetaString(*binding, "uid");
  if (!uid.empty() && uid != MetaString(pod, "uid")) {
    return Conflict("pods", "", "pods", name,
                    absl::StrCat("Precondition failed: UID in precondition: ", uid,
                                 ", UID in object meta: ", MetaString(pod, "uid")));
  }
  auto bind_conflict = [&](absl::string_view why) {
    return Conflict("pods/binding", "", "pods/binding", name, why);
  };
  if (!MetaString(pod, "deletionTimestamp").empty()) {
    return bind_conflict(
        absl::StrCat("pod ", name, " is being deleted, cannot be assigned to a host"));
  }
  std::string assigned = FieldValue(pod, "spec.nodeName");
  if (!assigned.empty()) {
    return bind_conflict(
        absl::StrCat("pod ", name, " is already assigned to node \"", assigned, "\""));
  }
  const Value* spec = common::FindMember(pod, "spec");
  const Value* gates = spec == nullptr ? nullptr : common::FindMember(*spec, "schedulingGates");
  if (gates != nullptr && gates->IsArray() && !gates->Empty()) {
    return bind_conflict(absl::StrCat("pod ", name, " has non-empty .spec.schedulingGates"));
  }
  SetString(EnsureObject(pod, "spec", a), "nodeName", node, a);
  const Value* bmeta = common::FindMember(*binding, "metadata");
  const Value* annotations = bmeta == nullptr ? nullptr : common::FindMember(*bmeta, "annotations");
  if (annotations != nullptr && annotations->IsObject()) {
    Value& pod_annotations = EnsureObject(EnsureObject(pod, "metadata", a), "annotations", a);
    for (auto m = annotations->MemberBegin(); m != annotations->MemberEnd(); ++m) {
      SetMember(pod_annotations, absl::string_view(m->name.GetString(), m->name.GetStringLength()),
                Value(m->value, a), a);
    }
  }
  // podutil.UpdatePodCondition(PodScheduled=True).
  Value& status = EnsureObject(pod, "status", a);
  Value* conditions = Mutable(status, "conditions");
  if (conditions == nullptr || !conditions->IsArray()) {
    SetMember(status, "conditions", Value(rapidjson::kArrayType), a);
    conditions = Mutable(status, "conditions");
  }
  Value* scheduled = nullptr;
  for (Value& c : conditions->GetArray()) {
    if (StringAt(c, "type") == "PodScheduled") scheduled = &c;
  }
  if (scheduled == nullptr) {
    Value c(rapidjson::kObjectType);
    SetString(c, "type", "PodScheduled", a);
    SetString(c, "status", "True", a);
    SetMember(c, "lastProbeTime", Value(), a);
    SetString(c, "lastTransitionTime", Now3339(), a);
    conditions->PushBack(c, a);
  } else if (StringAt(*scheduled, "status") != "True") {
    SetString(*scheduled, "status", "True", a);
    SetString(*scheduled, "lastTransitionTime", Now3339(), a);
    EraseMember(*scheduled, "reason");
    EraseMember(*scheduled, "message");
  }
  store.Commit(Resource::kPods, key, "MODIFIED", pod, "v1", &old_json);
  return StatusReply(201, "", "", nullptr);
}

}  // namespace testing_support::apiserver
