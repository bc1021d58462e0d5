#include "plan/mig_packing.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace plan {
namespace {

using topology::CheckLayout;
using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;
using topology::PlaceProfiles;

// The search behind PackMigItems: first fit decreasing, then the bounded exact search.
class MigPacker {
 public:
  MigPacker(const GpuModel& model, std::vector<MigItem> items, std::vector<std::string> gpu_zones)
      : model_(model), items_(std::move(items)), zones_(std::move(gpu_zones)) {
    for (size_t i = 0; i < items_.size(); ++i) order_.push_back(static_cast<int>(i));
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
      const MigProfile* pa = items_[a].profile;
      const MigProfile* pb = items_[b].profile;
      if (pa->memory_slices != pb->memory_slices) return pa->memory_slices > pb->memory_slices;
      if (pa->compute_slices != pb->compute_slices) return pa->compute_slices > pb->compute_slices;
      if (pa != pb) return pa->name < pb->name;
      // Zone-bound items first (they have fewer GPUs to choose from), twins side by side.
      const std::string& za = items_[a].zone;
      const std::string& zb = items_[b].zone;
      if (za.empty() != zb.empty()) return !za.empty();
      return za < zb;
    });
    used_.assign(zones_.size(), false);
  }

  MigPacking Run() {
    MigPacking out;
    int failed = FirstFit();
    if (failed >= 0) {
      out.failed_item = failed;
      best_bins_ = std::numeric_limits<int>::max();
    }
    int memory = 0, compute = 0;
    for (const MigItem& item : items_) {
      memory += item.profile->memory_slices;
      compute += item.profile->compute_slices;
    }
    int lower = std::max((memory + model_.memory_slices - 1) / model_.memory_slices,
                         (compute + model_.compute_slices - 1) / model_.compute_slices);
    if (best_bins_ > lower) {
      bins_.clear();
      std::fill(used_.begin(), used_.end(), false);
      assignment_.assign(items_.size(), -1);
      Search(0);
    }
    if (best_.empty()) return out;
    out.failed_item = -1;
    out.gpu_of_item = best_;
    return out;
  }

 private:
  struct Bin {
    int gpu = 0;
    std::vector<const MigProfile*> profiles;
  };

  bool ZoneOk(int gpu, const MigItem& item) const {
    return item.zone.empty() || zones_[gpu] == item.zone;
  }

  bool Fits(const Bin& bin, const MigProfile* p) const {
    std::vector<const MigProfile*> candidate = bin.profiles;
    candidate.push_back(p);
    return PlaceProfiles(model_, candidate).has_value();
  }

  // First fit decreasing over bins in the order they were opened; new bins take the first free
  // GPU (in preference order) whose zone suits. Returns the item it could not place, or -1.
  int FirstFit() {
    bins_.clear();
    assignment_.assign(items_.size(), -1);
    for (int i : order_) {
      const MigItem& item = items_[i];
      int chosen = -1;
      for (size_t b = 0; b < bins_.size() && chosen < 0; ++b) {
        if (ZoneOk(bins_[b].gpu, item) && Fits(bins_[b], item.profile))
          chosen = static_cast<int>(b);
      }
      if (chosen < 0) {
        for (size_t g = 0; g < zones_.size() && chosen < 0; ++g) {
          if (used_[g] || !ZoneOk(static_cast<int>(g), item)) continue;
          if (!PlaceProfiles(model_, {item.profile})) break;
          used_[g] = true;
          bins_.push_back({static_cast<int>(g), {}});
          chosen = static_cast<int>(bins_.size()) - 1;
        }
      }
      if (chosen < 0) return i;
      bins_[chosen].profiles.push_back(item.profile);
      assignment_[i] = bins_[chosen].gpu;
    }
    best_ = assignment_;
    best_bins_ = static_cast<int>(bins_.size());
    return -1;
  }

  void Search(size_t k) {
    if (budget_-- <= 0) return;
    int open = static_cast<int>(bins_.size());
    if (open >= best_bins_) return;
    // Slice counting: the remaining items need at least this many more GPUs.
    int memory = 0, compute = 0;
    for (size_t r = k; r < order_.size(); ++r) {
      memory += items_[order_[r]].profile->memory_slices;
      compute += items_[order_[r]].profile->compute_slices;
    }
    for (const Bin& bin : bins_) {
      for (const MigProfile* p : bin.profiles) {
        memory += p->memory_slices;
        compute += p->compute_slices;
      }
    }
    int need = std::max((memory + model_.memory_slices - 1) / model_.memory_slices,
                        (compute + model_.compute_slices - 1) / model_.compute_slices);
    if (need >= best_bins_) return;
    if (k == order_.size()) {
      best_ = assignment_;
      best_bins_ = open;
      return;
    }
    int i = order_[k];
    const MigItem& item = items_[i];
    // Equal items go to bins in non-decreasing order: permutations of twins are not retried.
    int first_bin = 0;
    if (k > 0) {
      int prev = order_[k - 1];
      if (items_[prev].profile == item.profile && items_[prev].zone == item.zone) {
        first_bin = last_bin_[prev];
      }
    }
    std::set<std::pair<int, std::vector<const MigProfile*>>> tried;  // (zone id, contents)
    for (int b = first_bin; b < open; ++b) {
      Bin& bin = bins_[b];
      if (!ZoneOk(bin.gpu, item)) continue;
      std::vector<const MigProfile*> key = bin.profiles;
      std::sort(key.begin(), key.end());
      if (!tried.insert({ZoneId(bin.gpu), key}).second) continue;
      if (!Fits(bin, item.profile)) continue;
      bin.profiles.push_back(item.profile);
      assignment_[i] = bin.gpu;
      last_bin_[i] = b;
      Search(k + 1);
      bins_[b].profiles.pop_back();
      if (budget_ <= 0) return;
    }
    // A new GPU: the first free one of each zone the item may use.
    std::set<std::string> zones_tried;
    for (size_t g = 0; g < zones_.size(); ++g) {
      if (used_[g] || !ZoneOk(static_cast<int>(g), item) || !zones_tried.insert(zones_[g]).second)
        continue;
      used_[g] = true;
      bins_.push_back({static_cast<int>(g), {item.profile}});
      assignment_[i] = static_cast<int>(g);
      last_bin_[i] = open;
      Search(k + 1);
      bins_.pop_back();
      used_[g] = false;
      if (budget_ <= 0) return;
    }
    assignment_[i] = -1;
  }

  int ZoneId(int gpu) const {
    for (size_t g = 0; g < zones_.size(); ++g) {
      if (zones_[g] == zones_[gpu]) return static_cast<int>(g);
    }
    return gpu;
  }

  const GpuModel& model_;
  std::vector<MigItem> items_;
  std::vector<std::string> zones_;
  std::vector<int> order_;
  std::vector<bool> used_;
  std::vector<Bin> bins_;
  std::vector<int> assignment_;  // per item: GPU index
  std::map<int, int> last_bin_;  // per item: bin position chosen on the current path
  std::vector<int> best_;
  int best_bins_ = std::numeric_limits<int>::max();
  int64_t budget_ = 200'000;
};

}  // namespace

MigPacking PackMigItems(const GpuModel& model, std::vector<MigItem> items,
                        std::vector<std::string> gpu_zones) {
  return MigPacker(model, std::move(items), std::move(gpu_zones)).Run();
}

absl::StatusOr<std::vector<std::vector<PlacedInstance>>> PackProfiles(
    const GpuModel& gpu, const std::vector<const MigProfile*>& profiles) {
  std::vector<MigItem> items;
  for (const MigProfile* p : profiles) {
    bool ours = p != nullptr && !gpu.profiles.empty() && p >= &gpu.profiles.front() &&
                p <= &gpu.profiles.back();
    if (!ours) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile ", p ? p->name : "(null)", " is not one of ", gpu.model, "'s"));
    }
    items.push_back({p, ""});
  }
  // As many GPUs as instances: always enough.
  MigPacking packing = PackMigItems(gpu, items, std::vector<std::string>(items.size(), ""));
  if (packing.gpu_of_item.empty() && !items.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(items[packing.failed_item].profile->name,
                                                   " fits no empty ", gpu.model,
                                                   " (catalog error)"));
  }
  std::map<int, std::vector<const MigProfile*>> bins;
  for (size_t i = 0; i < items.size(); ++i)
    bins[packing.gpu_of_item[i]].push_back(items[i].profile);
  std::vector<std::vector<PlacedInstance>> layouts;
  for (const auto& [g, bin] : bins) {
    std::optional<std::vector<PlacedInstance>> layout = PlaceProfiles(gpu, bin);
    if (!layout) return absl::InternalError("packer produced a GPU PlaceProfiles cannot lay out");
    absl::Status s = CheckLayout(gpu, *layout);
    if (!s.ok())
      return absl::InternalError(absl::StrCat("packer produced an invalid layout: ", s.message()));
    layouts.push_back(*std::move(layout));
  }
  return layouts;
}

}  // namespace plan
