// Test support, part of the kube-apiserver emulation: PATCH bodies (merge, strategic merge as
// merge, JSON Patch; see apiserver_patch.h).
#include "test/support/apiserver_patch.h"

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "rapidjson/pointer.h"
#include "test/support/apiserver_objects.h"
#include "webhook/json_patch.h"

namespace testing_support::apiserver {
namespace {

// {"op": OP, "path": PATH[, "value": copy of *value]}
Value Operation(absl::string_view op, absl::string_view path, const Value* value, Alloc& a) {
  Value out(rapidjson::kObjectType);
  SetString(out, "op", op, a);
  SetString(out, "path", path, a);
  if (value != nullptr) SetMember(out, "value", Value(*value, a), a);
  return out;
}

}  // namespace

void ApplyMergePatch(Value& target, const Value& patch, Alloc& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto m = patch.MemberBegin(); m != patch.MemberEnd(); ++m) {
    absl::string_view name(m->name.GetString(), m->name.GetStringLength());
    if (absl::StartsWith(name, "$")) continue;
    if (m->value.IsNull()) {
      EraseMember(target, name);
      continue;
    }
    if (Value* existing = Mutable(target, name)) {
      ApplyMergePatch(*existing, m->value, a);
      continue;
    }
    Value v;
    ApplyMergePatch(v, m->value, a);
    target.AddMember(Value(m->name, a), v, a);
  }
}

absl::Status ApplyJsonPatch(rapidjson::Document& doc, const Value& ops) {
  if (!ops.IsArray()) return webhook::ApplyPatch(ops, doc);
  // The operations since the last move or copy, for webhook::ApplyPatch as they were sent.
  rapidjson::Document run(rapidjson::kArrayType);
  Alloc& a = run.GetAllocator();
  for (const Value& op : ops.GetArray()) {
    const std::string kind = StringAt(op, "op");
    if (kind != "move" && kind != "copy") {
      run.PushBack(Value(op, a), a);
      continue;
    }
    RETURN_IF_ERROR(webhook::ApplyPatch(run, doc));
    run.Clear();
    const std::string from = StringAt(op, "from");
    const rapidjson::Pointer pointer(from.c_str(), from.size());
    const Value* value = pointer.IsValid() ? pointer.Get(doc) : nullptr;
    if (value == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(kind, ": missing path ", from));
    }
    // The value is copied here, before the remove below takes it out of `doc`.
    Value add = Operation("add", StringAt(op, "path"), value, a);
    if (kind == "move") run.PushBack(Operation("remove", from, nullptr, a), a);
    run.PushBack(add, a);
    RETURN_IF_ERROR(webhook::ApplyPatch(run, doc));
    run.Clear();
  }
  return webhook::ApplyPatch(run, doc);
}

std::optional<Reply> ApplyPatchBody(absl::string_view content_type, absl::string_view body,
                                    rapidjson::Document& doc) {
  absl::StatusOr<rapidjson::Document> patch = common::ParseJson(body);
  if (!patch.ok()) return BadRequest(patch.status().message());
  if (content_type == "application/merge-patch+json" ||
      content_type == "application/strategic-merge-patch+json") {
    if (!patch->IsObject()) return BadRequest("a merge patch must be a JSON object");
    ApplyMergePatch(doc, *patch, doc.GetAllocator());
    return std::nullopt;
  }
  if (content_type == "application/json-patch+json") {
    absl::Status s = ApplyJsonPatch(doc, *patch);
    if (!s.ok()) return StatusReply(422, "Invalid", s.message(), nullptr);
    return std::nullopt;
  }
  return StatusReply(
      415, "UnsupportedMediaType",
      absl::StrCat("the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml"),
      nullptr);
}

}  // namespace testing_support::apiserver
