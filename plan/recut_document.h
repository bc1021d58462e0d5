// What `gpu-tenancy plan --from-cluster` prints, and the one-line advice `explain` gives: the
// proposed re-cuts as mig-parted configs and the `gpu-tenancy reconfigure` commands that apply
// them. It proposes only; a person (or an automation they own) runs the commands. JSON and YAML
// print one tree (plan/document_tree.h), whose `migParted` key `reconfigure --mig-parted-config`
// reads, so the YAML output feeds the commands unchanged. Pure.
//
//   RecutInput in = RecutInputFromCluster(snapshot, policy, pods);
//   RecutProposal p = ProposeRecuts(in.problem);
//   ASSIGN_OR_RETURN(std::string text, RecutText(in, p));
#ifndef GPU_TENANCY_PLAN_RECUT_DOCUMENT_H_
#define GPU_TENANCY_PLAN_RECUT_DOCUMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plan/document.h"
#include "plan/document_tree.h"
#include "plan/mig_recut.h"
#include "plan/recut_input.h"

namespace plan {

// The file the commands name: the YAML output saved as is.
inline constexpr absl::string_view kRecutConfigFile = "recut.yaml";

// "gpu-tenancy-recut-<node>": the mig-parted config (and nvidia.com/mig.config value) of a re-cut.
std::string RecutConfigName(absl::string_view node);

// One mig-parted config per re-cut node.
std::vector<MigPartedConfig> RecutMigPartedConfigs(const RecutInput& input,
                                                   const RecutProposal& proposal);

// "GPU 0: 1x 3g.40gb + 4x 1g.10gb", one per GPU of the re-cut.
std::vector<std::string> DescribeRecut(const NodeRecut& recut);

// "2 GPU pods of 1 tenant", "no GPU pods".
std::string DrainText(const RecutNode& node);

// summary, recuts, fitNow, unserved, skipped, migParted.
Tree RecutTree(const RecutInput& input, const RecutProposal& proposal);

// For people: each re-cut with what it serves and drains and its command, then the config.
[[nodiscard]] absl::StatusOr<std::string> RecutText(const RecutInput& input,
                                                    const RecutProposal& proposal);

// explain's line for a pod that fits no node as things stand ("" when no re-cut serves it):
// "fits if mig-b is re-cut to gpu-tenancy-recut-mig-b [GPU 0: 1x 3g.40gb + 4x 1g.10gb]
// (drains 2 GPU pods of 1 tenant)".
std::string RecutAdvice(const RecutInput& input, const RecutProposal& proposal);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_RECUT_DOCUMENT_H_
