#include "common/json.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {
namespace {

absl::string_view TypeName(const JsonValue& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "boolean";
    case rapidjson::kObjectType: return "object";
    case rapidjson::kArrayType: return "array";
    case rapidjson::kStringType: return "string";
    case rapidjson::kNumberType: return "number";
  }
  return "value";
}

absl::Status WrongType(absl::string_view path, absl::string_view want, const JsonValue& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", want, ", got ", TypeName(got)));
}

// Deepest nesting accepted. Kubernetes objects stay far below it; the limit exists because
// RapidJSON's Accept() (the encoder) and copies recurse per level, so a 100,000-deep value
// echoed back (a Node in a names-and-objects filter reply) would overflow a worker's stack.
constexpr size_t kMaxDepth = 512;

// Iterative, so the check itself cannot overflow the stack.
bool DeeperThan(const JsonValue& root, size_t limit) {
  std::vector<std::pair<const JsonValue*, size_t>> pending = {{&root, 1}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (depth > limit) return true;
    if (value->IsObject()) {
      for (auto it = value->MemberBegin(); it != value->MemberEnd(); ++it) {
        if (it->value.IsObject() || it->value.IsArray()) pending.push_back({&it->value, depth + 1});
      }
    } else if (value->IsArray()) {
      for (const JsonValue& item : value->GetArray()) {
        if (item.IsObject() || item.IsArray()) pending.push_back({&item, depth + 1});
      }
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<rapidjson::Document> ParseJson(absl::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", doc.GetErrorOffset(),
                                                   ": ",
                                                   rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (DeeperThan(doc, kMaxDepth)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: nested deeper than ", kMaxDepth, " levels"));
  }
  return doc;
}

const JsonValue* FindMember(const JsonValue& object, absl::string_view key) {
  if (!object.IsObject()) return nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (absl::string_view(it->name.GetString(), it->name.GetStringLength()) == key) {
      return &it->value;
    }
  }
  return nullptr;
}

const JsonValue* FindMemberIgnoreCase(const JsonValue& object, absl::string_view key) {
  if (!object.IsObject()) return nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (absl::EqualsIgnoreCase(absl::string_view(it->name.GetString(), it->name.GetStringLength()),
                               key)) {
      return &it->value;
    }
  }
  return nullptr;
}

const JsonValue* FindNonNull(const JsonValue& object, absl::string_view key) {
  const JsonValue* v = FindMember(object, key);
  return v && !v->IsNull() ? v : nullptr;
}

absl::string_view AsStringView(const JsonValue& value) {
  return value.IsString() ? absl::string_view(value.GetString(), value.GetStringLength())
                          : absl::string_view();
}

absl::string_view StringOr(const JsonValue& object, absl::string_view key,
                          absl::string_view fallback) {
  const JsonValue* v = FindMember(object, key);
  return v && v->IsString() ? AsStringView(*v) : fallback;
}

absl::StatusOr<absl::string_view> RequireString(const JsonValue& object, absl::string_view key,
                                               absl::string_view path) {
  const JsonValue* v = FindMember(object, key);
  if (!v) return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, key), ": missing"));
  if (!v->IsString()) return WrongType(JoinPath(path, key), "string", *v);
  return AsStringView(*v);
}

absl::StatusOr<const JsonValue*> RequireObject(const JsonValue& object, absl::string_view key,
                                               absl::string_view path) {
  const JsonValue* v = FindMember(object, key);
  if (!v) return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, key), ": missing"));
  if (!v->IsObject()) return WrongType(JoinPath(path, key), "object", *v);
  return v;
}

absl::StatusOr<const JsonValue*> OptionalObject(const JsonValue& object, absl::string_view key,
                                                absl::string_view path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return nullptr;
  if (!v->IsObject()) return WrongType(JoinPath(path, key), "object", *v);
  return v;
}

absl::StatusOr<const JsonValue*> OptionalArray(const JsonValue& object, absl::string_view key,
                                               absl::string_view path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return nullptr;
  if (!v->IsArray()) return WrongType(JoinPath(path, key), "array", *v);
  return v;
}

std::string ToJson(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string JoinPath(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string IndexPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

}  // namespace common
