// YAML to JSON, so YAML inputs (cluster files from `kubectl -o yaml`, policies, manifests) go
// through the same JSON codecs as the wire. Plain scalars become null, booleans and numbers by
// the YAML 1.2 core schema; quoted scalars stay strings.
#ifndef GPU_TENANCY_COMMON_YAML_JSON_H_
#define GPU_TENANCY_COMMON_YAML_JSON_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"

namespace common {

// Every document of a multi-document stream ("---" separated); empty documents are dropped.
// InvalidArgument with the line and column of a syntax error.
[[nodiscard]] absl::StatusOr<std::vector<rapidjson::Document>> YamlDocumentsToJson(
    absl::string_view text);

// Exactly one document. JSON is valid YAML, so JSON text works too.
[[nodiscard]] absl::StatusOr<rapidjson::Document> YamlToJson(absl::string_view text);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_YAML_JSON_H_
