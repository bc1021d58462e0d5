#include "common/yaml_fields.h"

#include "absl/strings/str_cat.h"
#include "topology/quantity.h"

namespace common {

absl::Status Fields::Bad(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

const JsonValue* Fields::Get(absl::string_view key) {
  seen_.insert(std::string(key));
  return FindNonNull(object_, key);
}

absl::StatusOr<std::string> Fields::String(absl::string_view key, bool required) {
  const JsonValue* v = Get(key);
  if (!v) {
    if (required) return Bad(Path(key), "missing");
    return std::string();
  }
  if (!v->IsString()) return Bad(Path(key), "expected a string");
  std::string s(AsStringView(*v));
  if (required && s.empty()) return Bad(Path(key), "must not be empty");
  return s;
}

absl::StatusOr<std::string> Fields::Enum(absl::string_view key,
                                         std::initializer_list<const char*> allowed,
                                         const char* fallback) {
  ASSIGN_OR_RETURN(std::string value, String(key, fallback == nullptr));
  if (value.empty() && fallback) return std::string(fallback);
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return value;
    absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  }
  return Bad(Path(key), absl::StrCat("\"", value, "\" is not one of ", list));
}

absl::StatusOr<std::optional<int64_t>> Fields::Int(absl::string_view key, bool required) {
  const JsonValue* v = Get(key);
  if (!v) {
    if (required) return Bad(Path(key), "missing");
    return std::optional<int64_t>();
  }
  if (!v->IsInt64()) return Bad(Path(key), "expected an integer");
  return std::optional<int64_t>(v->GetInt64());
}

absl::StatusOr<std::optional<int64_t>> Fields::IntInRange(absl::string_view key, int64_t min,
                                                          int64_t max) {
  const JsonValue* v = Get(key);
  if (!v) return std::optional<int64_t>();
  if (!v->IsInt64() || v->GetInt64() < min || v->GetInt64() > max) {
    return Bad(Path(key), absl::StrCat("expected an integer from ", min, " to ", max));
  }
  return std::optional<int64_t>(v->GetInt64());
}

absl::StatusOr<std::optional<double>> Fields::Number(absl::string_view key, double min,
                                                     double max) {
  const JsonValue* v = Get(key);
  if (!v) return std::optional<double>();
  if (!v->IsNumber() || !(v->GetDouble() >= min && v->GetDouble() <= max)) {
    return Bad(Path(key), absl::StrCat("expected a number from ", min, " to ", max));
  }
  return std::optional<double>(v->GetDouble());
}

absl::StatusOr<bool> Fields::Bool(absl::string_view key, bool fallback) {
  const JsonValue* v = Get(key);
  if (!v) return fallback;
  if (!v->IsBool()) return Bad(Path(key), "expected true or false");
  return v->GetBool();
}

absl::StatusOr<std::vector<std::string>> Fields::Strings(absl::string_view key) {
  std::vector<std::string> out;
  const JsonValue* v = Get(key);
  if (!v) return out;
  if (!v->IsArray()) return Bad(Path(key), "expected a list");
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    if (!(*v)[i].IsString()) return Bad(IndexPath(Path(key), i), "expected a string");
    out.push_back(std::string(AsStringView((*v)[i])));
  }
  return out;
}

absl::StatusOr<std::vector<int>> Fields::Ints(absl::string_view key) {
  std::vector<int> out;
  const JsonValue* v = Get(key);
  if (!v) return out;
  if (!v->IsArray()) return Bad(Path(key), "expected a list");
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    if (!(*v)[i].IsInt()) return Bad(IndexPath(Path(key), i), "expected an integer");
    out.push_back((*v)[i].GetInt());
  }
  return out;
}

absl::StatusOr<std::optional<topology::Quantity>> Fields::Quantity(absl::string_view key,
                                                                   absl::string_view example) {
  const JsonValue* v = Get(key);
  if (!v) return std::optional<topology::Quantity>();
  if (!v->IsString()) {
    return Bad(Path(key), absl::StrCat("expected a quantity such as \"", example, "\""));
  }
  absl::StatusOr<topology::Quantity> q = topology::Quantity::Parse(AsStringView(*v));
  if (!q.ok()) return Bad(Path(key), q.status().message());
  return std::optional<topology::Quantity>(*q);
}

absl::StatusOr<std::optional<int64_t>> Fields::Bytes(absl::string_view key) {
  ASSIGN_OR_RETURN(std::optional<topology::Quantity> q, Quantity(key, "16Gi"));
  if (!q) return std::optional<int64_t>();
  if (q->IsNegative() || q->IsZero()) return Bad(Path(key), "must be positive");
  return std::optional<int64_t>(q->Value());
}

absl::StatusOr<std::optional<int64_t>> Fields::MemoryMiB(absl::string_view key) {
  ASSIGN_OR_RETURN(std::optional<topology::Quantity> q, Quantity(key, "40Gi"));
  if (!q) return std::optional<int64_t>();
  if (q->IsNegative()) return Bad(Path(key), "must not be negative");
  return std::optional<int64_t>(q->ValueMiB());
}

absl::StatusOr<std::optional<Fields>> Fields::Object(absl::string_view key) {
  const JsonValue* v = Get(key);
  if (!v) return std::optional<Fields>();
  if (!v->IsObject()) return Bad(Path(key), "expected a mapping");
  return std::optional<Fields>(Fields(*v, Path(key)));
}

absl::Status Fields::NoUnknownKeys() const {
  for (auto it = object_.MemberBegin(); it != object_.MemberEnd(); ++it) {
    std::string key(AsStringView(it->name));
    if (!seen_.count(key)) return Bad(Path(key), "unknown field");
  }
  return absl::OkStatus();
}

}  // namespace common
