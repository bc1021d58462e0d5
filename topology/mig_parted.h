// A node's MIG geometry as mig-parted describes it, and what the node must offer once mig-manager
// has applied it. A mig-parted config names layouts ("mig-configs"); each layout is a list of
// entries that cut some GPUs alike. Reconfiguring a node means setting nvidia.com/mig.config to
// one of those names, so before doing it we check the layout fits the node's GPU model (valid
// placements included) and predict the allocatable the device plugin will advertise afterwards.
//
//   ASSIGN_OR_RETURN(NodeGeometry g, ResolveGeometry(*config, *model, /*gpu_count=*/2));
//   ExpectedOffer want = PredictOffer(g, MigStrategy::kMixed, parent_product);
//   std::vector<std::string> diffs = CompareOffer(want, observed);  // empty: the node matches
#ifndef GPU_TENANCY_TOPOLOGY_MIG_PARTED_H_
#define GPU_TENANCY_TOPOLOGY_MIG_PARTED_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace topology {

// One entry of a mig-parted layout.
struct MigPartedEntry {
  std::vector<std::string> device_filter;  // PCI device IDs ("0x233010DE"); empty: every GPU
  bool all_devices = true;                 // `devices: all`
  std::vector<int> devices;                // else the GPU indexes
  bool mig_enabled = false;
  std::vector<std::pair<std::string, int>> mig_devices;  // profile -> instances per GPU
};

struct MigPartedLayout {
  std::string name;
  std::vector<MigPartedEntry> entries;
};

struct MigPartedFile {
  std::vector<MigPartedLayout> layouts;  // in file order
  const MigPartedLayout* Find(absl::string_view name) const;
  std::vector<std::string> Names() const;
};

// What one GPU of the node becomes: MIG disabled (a whole GPU), or MIG instances.
struct GpuGeometry {
  int index = 0;
  bool mig_enabled = false;
  std::vector<PlacedInstance> instances;  // a valid layout, sorted by start
};

struct NodeGeometry {
  std::string layout;
  std::vector<GpuGeometry> gpus;  // one per GPU index 0..count-1
  // Entries left out because their device filter names other GPUs (their profiles do not exist
  // on this model): the node's PCI IDs are not in its labels, so this is the only clue we have.
  std::vector<std::string> skipped;
};

// Applies `layout` to a node of `gpu_count` GPUs of `model`. InvalidArgument naming the entry and
// the reason when a profile does not exist on the model, an index is out of range, a GPU is cut
// twice or left out, or the instances have no valid placement on one GPU.
[[nodiscard]] absl::StatusOr<NodeGeometry> ResolveGeometry(const MigPartedLayout& layout,
                                                           const GpuModel& model, int gpu_count);

enum class MigStrategy { kSingle, kMixed };

// What the node must show once the geometry is applied.
struct ExpectedOffer {
  MigStrategy strategy = MigStrategy::kMixed;
  // Allocatable counts that matter: every nvidia.com/mig-<profile> the node has or should have
  // (mixed), and nvidia.com/gpu (whole GPUs in mixed; every instance in single).
  std::map<std::string, int64_t> allocatable;
  std::optional<std::string> product;  // single: nvidia.com/gpu.product
};

// InvalidArgument for the single strategy when GPUs are cut differently (GFD then labels the
// node <parent>-MIG-INVALID and advertises nothing).
[[nodiscard]] absl::StatusOr<ExpectedOffer> PredictOffer(const NodeGeometry& geometry,
                                                         MigStrategy strategy,
                                                         absl::string_view parent_product);

// What a node shows: its GPU allocatable and labels.
struct ObservedOffer {
  std::map<std::string, int64_t> allocatable;  // nvidia.com/* resources only
  std::map<std::string, std::string> labels;
};

// The ways the node differs from what was expected, one line each, e.g.
// "nvidia.com/mig-1g.10gb: expected 14, node shows 7"; empty when it matches. Resources absent
// on one side count as 0; in mixed, any nvidia.com/mig-* the node shows is compared.
std::vector<std::string> CompareOffer(const ExpectedOffer& expected, const ObservedOffer& observed);

// The node's offer as it stands, as the expectation to come back to after a rollback.
ExpectedOffer OfferOf(const ObservedOffer& observed, MigStrategy strategy);

// "2x 3g.40gb + 1x 1g.10gb" per GPU, "MIG disabled" for whole GPUs: "GPU 0: 1x 7g.80gb".
std::vector<std::string> DescribeGeometry(const NodeGeometry& geometry);

// The smallest profile (fewest memory slices, then compute slices) among the geometry's
// instances; nullptr when MIG is disabled on every GPU.
const MigProfile* SmallestProfile(const NodeGeometry& geometry);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_MIG_PARTED_H_
