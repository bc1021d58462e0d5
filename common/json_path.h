// A JSON path for decoder errors, spelled out only when an error names it. A decoder passes one
// down as it descends; each level points at its parent, so the paths of a document that
// decodes cleanly cost a few stack words, not a heap string per level (a watch event names a
// dozen levels, and the live state decodes thousands of events a second).
//
//   JsonPath root("resourceclaim");
//   JsonPath spec(root, "spec");              // "resourceclaim.spec"
//   JsonPath first(requests, 0);              // "resourceclaim.spec.devices.requests[0]"
//   ASSIGN_OR_RETURN(const JsonValue* s, OptionalObject(object, "status", root));
//
// The helpers below behave as their string-path namesakes in common/json.h and word their
// errors the same. A path refers to its parent and to its key's characters: both must outlive
// it, as they do when each level lives on the stack of the function that reads it.
#ifndef GPU_TENANCY_COMMON_JSON_PATH_H_
#define GPU_TENANCY_COMMON_JSON_PATH_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"

namespace common {

class JsonPath {
 public:
  // The root's text as JoinPath would start it: "" makes the first key the whole path.
  explicit JsonPath(absl::string_view root) : key_(root) {}
  JsonPath(const JsonPath& parent, absl::string_view key) : parent_(&parent), key_(key) {}
  JsonPath(const JsonPath& parent, size_t index)
      : parent_(&parent), index_(index), is_index_(true) {}
  JsonPath(const JsonPath&) = delete;  // children point at it: it stays where it was made
  JsonPath& operator=(const JsonPath&) = delete;

  // "a.b[2].c", as JoinPath and IndexPath would have built it level by level.
  std::string str() const;

 private:
  void AppendTo(std::string& out) const;

  const JsonPath* parent_ = nullptr;
  absl::string_view key_;
  size_t index_ = 0;
  bool is_index_ = false;
};

[[nodiscard]] absl::StatusOr<absl::string_view> RequireString(const JsonValue& object,
                                                              absl::string_view key,
                                                              const JsonPath& path);
[[nodiscard]] absl::StatusOr<const JsonValue*> RequireObject(const JsonValue& object,
                                                             absl::string_view key,
                                                             const JsonPath& path);
[[nodiscard]] absl::StatusOr<const JsonValue*> OptionalObject(const JsonValue& object,
                                                              absl::string_view key,
                                                              const JsonPath& path);
[[nodiscard]] absl::StatusOr<const JsonValue*> OptionalArray(const JsonValue& object,
                                                             absl::string_view key,
                                                             const JsonPath& path);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_JSON_PATH_H_
