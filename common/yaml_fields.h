// Typed reading of one YAML mapping (converted to JSON by common/yaml_json) for the loaders of
// the policy, the MIG catalog and plan inputs. Every error names the field's path
// ("tenants[2].tier: missing"), and NoUnknownKeys() rejects keys nobody read, so a typo
// ("namespace:" for "namespaces:") fails loudly instead of silently meaning nothing.
//
//   Fields root(doc, "");
//   ASSIGN_OR_RETURN(std::string name, root.String("name", /*required=*/true));
//   RETURN_IF_ERROR(root.List("tenants", /*required=*/false, [&](Fields& t) { ... }));
//   RETURN_IF_ERROR(root.NoUnknownKeys());
//
// Every error is InvalidArgument.
#ifndef GPU_TENANCY_COMMON_YAML_FIELDS_H_
#define GPU_TENANCY_COMMON_YAML_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "topology/quantity.h"

namespace common {

class Fields {
 public:
  // `object` must be a JSON object and outlive this; `path` names it in errors ("" for the root).
  Fields(const JsonValue& object, std::string path) : object_(object), path_(std::move(path)) {}

  std::string Path(absl::string_view key) const { return JoinPath(path_, key); }
  // The value, or null when absent or null. Marks `key` as read.
  const JsonValue* Get(absl::string_view key);

  // A required string must be present and not empty; an absent optional one is "".
  absl::StatusOr<std::string> String(absl::string_view key, bool required);
  // One of `allowed`; `fallback` when absent (required when `fallback` is null).
  absl::StatusOr<std::string> Enum(absl::string_view key,
                                   std::initializer_list<const char*> allowed,
                                   const char* fallback);
  absl::StatusOr<std::optional<int64_t>> Int(absl::string_view key, bool required);
  absl::StatusOr<std::optional<int64_t>> IntInRange(absl::string_view key, int64_t min,
                                                    int64_t max);
  absl::StatusOr<std::optional<double>> Number(absl::string_view key, double min, double max);
  absl::StatusOr<bool> Bool(absl::string_view key, bool fallback = false);
  absl::StatusOr<std::vector<std::string>> Strings(absl::string_view key);
  absl::StatusOr<std::vector<int>> Ints(absl::string_view key);
  // A Kubernetes quantity; `example` shows one in the error for a non-string.
  absl::StatusOr<std::optional<topology::Quantity>> Quantity(absl::string_view key,
                                                             absl::string_view example);
  // A positive byte quantity such as "16Gi", in bytes.
  absl::StatusOr<std::optional<int64_t>> Bytes(absl::string_view key);
  // A non-negative byte quantity such as "40Gi", in MiB.
  absl::StatusOr<std::optional<int64_t>> MemoryMiB(absl::string_view key);
  absl::StatusOr<std::optional<Fields>> Object(absl::string_view key);

  // A list of mappings, each handed to `each` with its own Fields and then checked for unknown
  // keys. A required list must be present and not empty.
  template <typename F>
  absl::Status List(absl::string_view key, bool required, F each) {
    const JsonValue* v = Get(key);
    if (!v) return required ? Bad(Path(key), "missing") : absl::OkStatus();
    if (!v->IsArray()) return Bad(Path(key), "expected a list");
    if (required && v->Empty()) return Bad(Path(key), "must not be empty");
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      std::string item_path = IndexPath(Path(key), i);
      if (!(*v)[i].IsObject()) return Bad(item_path, "expected a mapping");
      Fields item((*v)[i], item_path);
      RETURN_IF_ERROR(each(item));
      RETURN_IF_ERROR(item.NoUnknownKeys());
    }
    return absl::OkStatus();
  }

  absl::Status NoUnknownKeys() const;

  static absl::Status Bad(absl::string_view path, absl::string_view what);

 private:
  const JsonValue& object_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace common

#endif  // GPU_TENANCY_COMMON_YAML_FIELDS_H_
