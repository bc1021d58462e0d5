// Loaders for the two configuration files the model needs: the GPU catalog (built in, see
// topology/mig_catalog.yaml) and the tenant policy (YAML; schema in cmd/demo/policy.yaml).
// Errors are InvalidArgument naming the YAML path ("tenants[2].tier: ...").
#ifndef GPU_TENANCY_COMMON_CONFIG_LOADER_H_
#define GPU_TENANCY_COMMON_CONFIG_LOADER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/policy.h"

namespace common {

[[nodiscard]] absl::StatusOr<topology::Catalog> LoadCatalog(absl::string_view yaml_text);

// The catalog compiled into the binary, parsed once. Aborts at start-up if the built-in data is
// broken (a build defect, caught by the catalog tests).
const topology::Catalog& BuiltinCatalog();

[[nodiscard]] absl::StatusOr<topology::Policy> LoadPolicy(absl::string_view yaml_text);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_CONFIG_LOADER_H_
