// The GPU catalog: which GPU models exist, how their MIG profiles are shaped, and where each
// profile may be placed. Facts only: a value nobody has confirmed stays std::nullopt instead of
// being guessed. The built-in data lives in topology/mig_catalog.yaml and is loaded by
// common/catalog_loader; this header only defines the types and the lookups.
//
//   const GpuModel* h100 = catalog.MatchProduct("NVIDIA-H100-80GB-HBM3-MIG-3g.40gb");
//   const MigProfile* p = h100->FindProfile("3g.40gb");   // p->memory_slices == 4
#ifndef GPU_TENANCY_TOPOLOGY_CATALOG_H_
#define GPU_TENANCY_TOPOLOGY_CATALOG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace topology {

struct MigPartedFile;  // topology/mig_parted.h

struct MigProfile {
  std::string name;                   // as nvidia-smi prints it: "3g.40gb", "1g.10gb+me"
  std::optional<int> id;              // `nvidia-smi mig -cgi` profile id
  std::optional<int64_t> memory_mib;  // driver-dependent; prefer the node's GFD label
  std::optional<int> sm_count;
  int compute_slices = 0;
  int memory_slices = 0;  // placement size
  int max_count = 0;
  std::vector<int> placements;  // valid start memory-slice indexes

  // Kubernetes resource suffix: "+" becomes "." ("1g.10gb+me" -> "1g.10gb.me").
  std::string ResourceSuffix() const;
};

struct GpuModel {
  std::string model;                        // "H100-80GB"
  std::vector<std::string> product_labels;  // GFD nvidia.com/gpu.product values
  std::optional<int64_t> total_memory_mib;
  int compute_slices = 0;
  int memory_slices = 0;
  int max_instances = 0;
  std::vector<MigProfile> profiles;
  // NVIDIA's `all-balanced` cut of one GPU of this model (profile name, instances), as its
  // default mig-parted config writes it; empty when that config has no entry for the model.
  std::vector<std::pair<std::string, int>> all_balanced;

  // Finds a profile by nvidia-smi name or by Kubernetes resource suffix; nullptr if absent.
  const MigProfile* FindProfile(absl::string_view name) const;
};

class Catalog {
 public:
  Catalog() = default;
  explicit Catalog(std::vector<GpuModel> models) : models_(std::move(models)) {}

  const std::vector<GpuModel>& models() const { return models_; }

  // Matches a GFD nvidia.com/gpu.product value, ignoring a "-SHARED" suffix and a
  // "-MIG-<profile>" suffix. Returns nullptr for products not in the catalog.
  const GpuModel* MatchProduct(absl::string_view product) const;
  const GpuModel* FindModel(absl::string_view model) const;

  // Checks the catalog's own consistency (placements inside the GPU, counts positive, the
  // all-balanced cut made of the model's profiles with a valid placement); the
  // loader calls it so a bad data file fails at start, not during a scheduling decision.
  absl::Status Validate() const;

  // The cluster's mig-parted config (mig-manager's): what the names in nvidia.com/mig.config
  // stand for, before NVIDIA's default configs (topology/mig_drift.h); null when not given.
  const MigPartedFile* mig_parted() const { return mig_parted_.get(); }
  // This catalog, reading nvidia.com/mig.config names through `mig_parted` (may be null).
  Catalog WithMigParted(std::shared_ptr<const MigPartedFile> mig_parted) const;

 private:
  std::vector<GpuModel> models_;
  std::shared_ptr<const MigPartedFile> mig_parted_;
};

// Splits a GFD product label into the parent product and the MIG profile of the single
// strategy ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb" -> {"NVIDIA-A100-SXM4-40GB", "1g.5gb"}), and drops
// a "-SHARED" suffix. `mig_profile` is empty when there is none.
struct ProductName {
  std::string parent;
  std::string mig_profile;
  bool shared = false;
};
ProductName SplitProduct(absl::string_view product);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_CATALOG_H_
