#include "common/json.h"

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

}  // namespace

absl::StatusOr<rapidjson::Document> ParseJson(absl::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", doc.GetErrorOffset(),
                                                   ": ",
                                                   rapidjson::GetParseError_En(doc.GetParseError())));
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
