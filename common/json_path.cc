#include "common/json_path.h"

#include "absl/strings/str_cat.h"

namespace common {

void JsonPath::AppendTo(std::string& out) const {
  if (parent_) parent_->AppendTo(out);
  if (is_index_) {
    absl::StrAppend(&out, "[", index_, "]");
  } else if (parent_ && !out.empty()) {
    absl::StrAppend(&out, ".", key_);
  } else {
    absl::StrAppend(&out, key_);
  }
}

std::string JsonPath::str() const {
  std::string out;
  AppendTo(out);
  return out;
}

// Each helper answers the common case itself and leaves the error, and its wording, to the
// string-path namesake, which reaches the same verdict.
absl::StatusOr<absl::string_view> RequireString(const JsonValue& object, absl::string_view key,
                                                const JsonPath& path) {
  const JsonValue* v = FindMember(object, key);
  if (v && v->IsString()) return AsStringView(*v);
  return RequireString(object, key, path.str());
}

absl::StatusOr<const JsonValue*> RequireObject(const JsonValue& object, absl::string_view key,
                                               const JsonPath& path) {
  const JsonValue* v = FindMember(object, key);
  if (v && v->IsObject()) return v;
  return RequireObject(object, key, path.str());
}

absl::StatusOr<const JsonValue*> OptionalObject(const JsonValue& object, absl::string_view key,
                                                const JsonPath& path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v || v->IsObject()) return v;
  return OptionalObject(object, key, path.str());
}

absl::StatusOr<const JsonValue*> OptionalArray(const JsonValue& object, absl::string_view key,
                                               const JsonPath& path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v || v->IsArray()) return v;
  return OptionalArray(object, key, path.str());
}

}  // namespace common
