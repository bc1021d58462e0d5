// MIG drift: a MIG node that mig-manager reports settled (nvidia.com/mig.config.state=success)
// while it advertises a geometry other than its nvidia.com/mig.config predicts, because it was
// cut by hand, half-applied, or the config behind the name changed. mig-manager applies the named
// config again whenever it runs (a restart, an upgrade, a reboot), destroying the instances the
// node offers now: the filter refuses such a node (Rule::kMigDrift, through
// NodeSupply::mig_drift), the audit fails it, and the contract guard lists it.
//
// Contract of CheckMigDrift, a pure function of one node's labels and resources:
// - Only a MIG node (nvidia.com/mig.strategy mixed or single) with a nvidia.com/mig.config and
//   state success is compared; anything else is kNotApplicable (a node being reconfigured is the
//   MIG reconfiguration rule's, never drift).
// - The layout is the given mig-parted file's when it names it, else NVIDIA's default of that
//   name (topology/mig_defaults.h); a name neither knows is kNotCompared, as is a node whose GPU
//   model the catalog lacks or whose GPU count is not labelled.
// - What the node advertises: status.capacity's nvidia.com/* entries when it has any (a device
//   the plugin found unhealthy is still there, so a failed GPU is not drift), else allocatable.
//   Time-sliced replicas count as the instances behind them (divided by the resource's GFD
//   `.replicas` label, `.shared` names folded onto the plain ones).
// - Mixed strategy: every nvidia.com/mig-* count and nvidia.com/gpu are compared with the
//   prediction for nvidia.com/gpu.count GPUs. Single strategy: GFD counts MIG devices in
//   nvidia.com/gpu.count, so only the profile in nvidia.com/gpu.product is compared.
// - kConfigInvalid: the named layout cannot apply to this node at all (a profile the model lacks,
//   no valid placement, or GPUs cut differently under the single strategy).
//
//   MigDrift d = CheckMigDrift(node.facts, catalog);
//   if (d.drifted()) Report(node.facts.name, d.why);
#ifndef GPU_TENANCY_TOPOLOGY_MIG_DRIFT_H_
#define GPU_TENANCY_TOPOLOGY_MIG_DRIFT_H_

#include <string>
#include <vector>

#include "topology/catalog.h"
#include "topology/facts.h"
#include "topology/mig_parted.h"

namespace topology {

enum class MigDriftVerdict {
  kNotApplicable,  // not a settled MIG node with a config: nothing to compare
  kMatches,        // the node shows what its config predicts
  kDrifted,        // it shows something else
  kNotCompared,    // the prediction cannot be made (unknown config name, GPU model or count)
  kConfigInvalid,  // the config cannot apply to this node
};

enum class MigLayoutSource { kNone, kFile, kDefaults };

struct MigDrift {
  MigDriftVerdict verdict = MigDriftVerdict::kNotApplicable;
  std::string config;  // the nvidia.com/mig.config value, "" when absent
  MigLayoutSource source = MigLayoutSource::kNone;
  // kDrifted: one line per difference, "nvidia.com/mig-1g.10gb: expected 7, node shows 4".
  std::vector<std::string> differences;
  // One line, "" for kMatches. kDrifted: the filter's reason, "MIG geometry differs from
  // nvidia.com/mig.config=all-1g.10gb (state success): mig-manager is about to re-cut it;
  // nvidia.com/mig-1g.10gb: expected 7, node shows 4". Otherwise why nothing was compared, or why
  // the config cannot apply.
  std::string why;

  bool drifted() const { return verdict == MigDriftVerdict::kDrifted; }
};

// Config names resolve through the catalog's mig-parted file (Catalog::mig_parted), else NVIDIA's
// defaults only. Never fails: every outcome is a verdict.
MigDrift CheckMigDrift(const NodeFacts& node, const Catalog& catalog);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_MIG_DRIFT_H_
