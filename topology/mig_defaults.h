// NVIDIA's default mig-parted configs, known without the file. The GPU operator installs them as
// its default-mig-parted-config ConfigMap (mig-parted ships the same as
// deployments/systemd/config-default.yaml), and a node labelled nvidia.com/mig.config=<name> with
// one of these names is cut by mig-manager as follows, on every GPU of the node:
//
//   all-disabled    MIG off: each GPU a whole GPU
//   all-enabled     MIG on, no instances
//   all-<profile>   as many instances of the profile as the model allows (its max count); the
//                   profile spelled as in resource names, "+" as "." (all-1g.10gb.me)
//   all-balanced    the model's GpuModel::all_balanced cut (2x 1g + 1x 2g + 1x 3g of its own
//                   sizes on 7-slice GPUs; 2x 1g.6gb + 1x 2g.12gb on A30)
//
// The file names each all-<profile> once and pins its count per device ID; for every model of the
// catalog that count is the profile's max count, which is what this reads. Pure.
//
//   absl::StatusOr<MigPartedLayout> l = DefaultMigLayout("all-1g.10gb", *h100);  // 7x 1g.10gb
//   ASSIGN_OR_RETURN(NodeGeometry g, ResolveGeometry(*l, *h100, /*gpu_count=*/8));
#ifndef GPU_TENANCY_TOPOLOGY_MIG_DEFAULTS_H_
#define GPU_TENANCY_TOPOLOGY_MIG_DEFAULTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/mig_parted.h"

namespace topology {

inline constexpr absl::string_view kAllDisabled = "all-disabled";
inline constexpr absl::string_view kAllEnabled = "all-enabled";
inline constexpr absl::string_view kAllBalanced = "all-balanced";

// The layout NVIDIA's default config `name` applies to GPUs of `model`, as one entry for every
// GPU. NotFound, saying why, when `name` is not a default name, names a profile the model does
// not have, or is all-balanced for a model the default config gives no balanced cut.
[[nodiscard]] absl::StatusOr<MigPartedLayout> DefaultMigLayout(absl::string_view name,
                                                               const GpuModel& model);

// Every default name that applies to `model`: all-disabled, all-enabled, all-balanced when it
// has a cut, then all-<profile> in the catalog's profile order.
std::vector<std::string> DefaultMigLayoutNames(const GpuModel& model);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_MIG_DEFAULTS_H_
