#include "topology/catalog.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "topology/mig_layout.h"

namespace topology {

std::string MigProfile::ResourceSuffix() const { return absl::StrReplaceAll(name, {{"+", "."}}); }

const MigProfile* GpuModel::FindProfile(absl::string_view name) const {
  for (const MigProfile& p : profiles) {
    if (p.name == name || p.ResourceSuffix() == name) return &p;
  }
  return nullptr;
}

ProductName SplitProduct(absl::string_view product) {
  ProductName out;
  if (absl::EndsWith(product, "-SHARED")) {
    out.shared = true;
    product.remove_suffix(7);
  }
  size_t mig = product.rfind("-MIG-");
  if (mig != absl::string_view::npos) {
    out.mig_profile = std::string(product.substr(mig + 5));
    product = product.substr(0, mig);
  }
  out.parent = std::string(product);
  return out;
}

const GpuModel* Catalog::MatchProduct(absl::string_view product) const {
  std::string parent = SplitProduct(product).parent;
  for (const GpuModel& m : models_) {
    for (const std::string& label : m.product_labels) {
      if (label == parent) return &m;
    }
  }
  return nullptr;
}

const GpuModel* Catalog::FindModel(absl::string_view model) const {
  for (const GpuModel& m : models_) {
    if (m.model == model) return &m;
  }
  return nullptr;
}

Catalog Catalog::WithMigParted(std::shared_ptr<const MigPartedFile> mig_parted) const {
  Catalog out = *this;
  out.mig_parted_ = std::move(mig_parted);
  return out;
}

absl::Status Catalog::Validate() const {
  for (const GpuModel& m : models_) {
    if (m.memory_slices <= 0 || m.compute_slices <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("catalog model ", m.model, ": no slices"));
    }
    for (const MigProfile& p : m.profiles) {
      std::string where = absl::StrCat("catalog model ", m.model, " profile ", p.name, ": ");
      if (p.memory_slices <= 0 || p.compute_slices <= 0 || p.max_count <= 0) {
        return absl::InvalidArgumentError(where + "slices and max_count must be positive");
      }
      if (p.placements.empty()) return absl::InvalidArgumentError(where + "no placements");
      for (int start : p.placements) {
        if (start < 0 || start + p.memory_slices > m.memory_slices) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "placement ", start, " runs past the GPU's memory slices"));
        }
      }
    }
    if (!m.all_balanced.empty()) {
      std::vector<const MigProfile*> cut;
      for (const auto& [name, count] : m.all_balanced) {
        const MigProfile* p = m.FindProfile(name);
        if (p == nullptr || count <= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "catalog model ", m.model, " allBalanced: ", name,
              p == nullptr ? " is not one of its profiles" : " needs a positive count"));
        }
        cut.insert(cut.end(), count, p);
      }
      if (!PlaceProfiles(m, cut)) {
        return absl::InvalidArgumentError(
            absl::StrCat("catalog model ", m.model, " allBalanced has no valid placement"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace topology
