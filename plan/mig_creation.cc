#include "plan/mig_creation.h"

#include <algorithm>
#include <utility>

namespace plan {
namespace {

using topology::CheckLayout;
using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;

// Largest first: the wide instances have the fewest valid starts.
bool LargerProfile(const MigProfile* a, const MigProfile* b) {
  if (a->memory_slices != b->memory_slices) return a->memory_slices > b->memory_slices;
  if (a->compute_slices != b->compute_slices) return a->compute_slices > b->compute_slices;
  return a->name < b->name;
}

}  // namespace

std::optional<std::vector<PlacedInstance>> SimulateCreate(
    const GpuModel& gpu, const std::vector<const MigProfile*>& order) {
  std::vector<bool> used(gpu.memory_slices, false);
  std::vector<PlacedInstance> layout;
  for (const MigProfile* p : order) {
    std::vector<int> starts = p->placements;
    std::sort(starts.rbegin(), starts.rend());
    bool placed = false;
    for (int start : starts) {
      if (start < 0 || start + p->memory_slices > gpu.memory_slices) continue;
      bool free = true;
      for (int s = start; s < start + p->memory_slices; ++s) free = free && !used[s];
      if (!free) continue;
      for (int s = start; s < start + p->memory_slices; ++s) used[s] = true;
      layout.push_back({p, start});
      placed = true;
      break;
    }
    if (!placed) return std::nullopt;
  }
  if (!CheckLayout(gpu, layout).ok()) return std::nullopt;
  std::sort(layout.begin(), layout.end(),
            [](const PlacedInstance& a, const PlacedInstance& b) { return a.start < b.start; });
  return layout;
}

CreationOrder PlanCreation(const GpuModel& gpu, const std::vector<PlacedInstance>& layout) {
  std::vector<const MigProfile*> items;
  for (const PlacedInstance& inst : layout) items.push_back(inst.profile);
  std::sort(items.begin(), items.end(), LargerProfile);
  CreationOrder out;
  // At most 7 instances: at most 5040 orders, each replayed in a few steps.
  std::vector<const MigProfile*> order = items;
  do {
    if (auto created = SimulateCreate(gpu, order)) {
      out.order = order;
      out.layout = *std::move(created);
      out.verified = true;
      return out;
    }
  } while (std::next_permutation(order.begin(), order.end(), LargerProfile));
  out.order = items;
  out.layout = layout;
  std::sort(out.layout.begin(), out.layout.end(),
            [](const PlacedInstance& a, const PlacedInstance& b) { return a.start < b.start; });
  return out;
}

}  // namespace plan
