// Reads mig-parted configs (NVIDIA mig-parted's `version: v1` / `mig-configs` format, as in
// mig-manager's ConfigMap) into topology::MigPartedFile. Also takes what `gpu-tenancy plan -o
// yaml` writes, whose `migParted` key holds such a config, so a plan feeds `reconfigure`
// without editing.
//
//   ASSIGN_OR_RETURN(topology::MigPartedFile f, wire::ParseMigPartedConfig(text));
//   const topology::MigPartedLayout* layout = f.Find("all-1g.10gb");
#ifndef GPU_TENANCY_WIRE_MIG_PARTED_CODEC_H_
#define GPU_TENANCY_WIRE_MIG_PARTED_CODEC_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/mig_parted.h"

namespace wire {

// YAML or JSON. InvalidArgument naming the field ("mig-configs.custom[0].devices: ...").
[[nodiscard]] absl::StatusOr<topology::MigPartedFile> ParseMigPartedConfig(absl::string_view text);

// A ConfigMap (JSON, as the API returns it) whose data holds a mig-parted config: the key
// `config.yaml` (mig-manager's default), else its only key. InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<topology::MigPartedFile> ParseMigPartedConfigMap(
    absl::string_view configmap_json);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_MIG_PARTED_CODEC_H_
