// Re-cuts proposed from pending MIG demand on device-plugin nodes. There, geometry changes only
// through mig-manager, and the reconfigure gate drains every GPU pod of the node first, so a
// re-cut costs the node's GPU pods and their tenants whichever GPU changes. The search assigns
// each pending pod to a node as it stands (instances free today), to a re-cut node, or to
// nothing, and keeps the assignment that serves the most pods, then drains the fewest pods, then
// the fewest tenants, then re-cuts the fewest nodes. A re-cut geometry always keeps room for the
// instances the node's pods held (they come back after the drain) and for the canary reserve.
//
//   RecutProposal p = ProposeRecuts(problem);
//   for (const NodeRecut& r : p.recuts) ... problem.nodes[r.node].name, r.gpus ...
#ifndef GPU_TENANCY_PLAN_MIG_RECUT_H_
#define GPU_TENANCY_PLAN_MIG_RECUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace plan {

// A node the search may re-cut: MIG mixed strategy, settled, in a MIG pool.
struct RecutNode {
  std::string name;
  const topology::GpuModel* model = nullptr;
  int gpus = 0;  // the GPUs a new geometry cuts (whole GPUs its pods hold stay as they are)
  // Instances a new geometry must offer: those the node's pods hold, and the canary reserve.
  std::vector<const topology::MigProfile*> keep;
  // Instances free today, by profile name ("3g.40gb"), outside any canary reserve.
  std::map<std::string, int64_t, std::less<>> free_now;
  int drained_pods = 0;                      // GPU pods a re-cut drains
  std::vector<std::string> drained_tenants;  // their tenants, distinct and sorted
};

// A pending pod that asks for MIG instances only.
struct RecutPod {
  std::string name;  // "namespace/name"
  std::string tenant;
  std::vector<std::pair<std::string, int64_t>> profiles;  // profile name -> instances
  std::vector<size_t> nodes;  // the nodes its tier and quota let it use, ascending
};

struct RecutProblem {
  std::vector<RecutNode> nodes;
  std::vector<RecutPod> pods;
};

// What an assignment achieves. Better: more pods served, then fewer pods drained, then fewer
// tenants drained, then fewer nodes re-cut.
struct RecutCost {
  int served = 0;
  int drained_pods = 0;
  int drained_tenants = 0;  // distinct over every re-cut node
  int recut_nodes = 0;
  bool BetterThan(const RecutCost& other) const;
  bool operator==(const RecutCost&) const = default;
};

struct NodeRecut {
  size_t node = 0;
  // The new layout of each GPU the geometry cuts (RecutNode::gpus of them), sorted by start.
  std::vector<std::vector<topology::PlacedInstance>> gpus;
  std::vector<size_t> pods;  // the pending pods it serves, ascending
};

struct RecutProposal {
  std::vector<NodeRecut> recuts;                    // by node, ascending
  std::vector<std::pair<size_t, size_t>> fits_now;  // (pod, node): on instances free today
  std::vector<size_t> unserved;                     // ascending
  RecutCost cost;
  // False when the search stopped at its step budget: the proposal is valid but may not be the
  // least disruptive.
  bool exhaustive = true;
};

// The least disruptive set of re-cuts for the problem's pending pods.
RecutProposal ProposeRecuts(const RecutProblem& problem, int64_t step_budget = 200'000);

// A geometry for `gpus` GPUs of `model` offering at least `profiles`: packed with valid
// placements, then each GPU's leftover space cut into the model's smallest profile so nothing
// stays idle and uncut. nullopt when the profiles need more GPUs.
std::optional<std::vector<std::vector<topology::PlacedInstance>>> RecutGeometry(
    const topology::GpuModel& model, int gpus,
    const std::vector<const topology::MigProfile*>& profiles);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_MIG_RECUT_H_
