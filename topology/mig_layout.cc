#include "topology/mig_layout.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace topology {
namespace {

bool Search(const GpuModel& gpu, const std::vector<const MigProfile*>& todo, size_t next,
            std::vector<bool>& used_slices, std::vector<PlacedInstance>& placed) {
  if (next == todo.size()) return true;
  const MigProfile* p = todo[next];
  for (int start : p->placements) {
    if (start + p->memory_slices > gpu.memory_slices) continue;
    bool free = true;
    for (int s = start; s < start + p->memory_slices; ++s) free &= !used_slices[s];
    if (!free) continue;
    for (int s = start; s < start + p->memory_slices; ++s) used_slices[s] = true;
    placed.push_back({p, start});
    if (Search(gpu, todo, next + 1, used_slices, placed)) return true;
    placed.pop_back();
    for (int s = start; s < start + p->memory_slices; ++s) used_slices[s] = false;
  }
  return false;
}

}  // namespace

absl::Status CheckLayout(const GpuModel& gpu, const std::vector<PlacedInstance>& layout) {
  std::vector<const MigProfile*> owner(gpu.memory_slices, nullptr);
  std::map<const MigProfile*, int> counts;
  int compute = 0;
  for (const PlacedInstance& inst : layout) {
    const MigProfile& p = *inst.profile;
    if (std::find(p.placements.begin(), p.placements.end(), inst.start) == p.placements.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(p.name, " cannot start at memory slice ", inst.start, " on ", gpu.model));
    }
    for (int s = inst.start; s < inst.start + p.memory_slices; ++s) {
      if (s >= gpu.memory_slices) {
        return absl::InvalidArgumentError(
            absl::StrCat(p.name, " at ", inst.start, " runs past ", gpu.model, "'s memory slices"));
      }
      if (owner[s]) {
        return absl::InvalidArgumentError(absl::StrCat(p.name, " at ", inst.start, " overlaps ",
                                                       owner[s]->name, " on memory slice ", s));
      }
      owner[s] = &p;
    }
    if (++counts[&p] > p.max_count) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", p.max_count, " ", p.name, " on one ", gpu.model));
    }
    compute += p.compute_slices;
  }
  if (compute > gpu.compute_slices) {
    return absl::InvalidArgumentError(absl::StrCat("layout uses ", compute, " compute slices, ",
                                                   gpu.model, " has ", gpu.compute_slices));
  }
  return absl::OkStatus();
}

std::optional<std::vector<PlacedInstance>> PlaceProfiles(
    const GpuModel& gpu, const std::vector<const MigProfile*>& profiles) {
  std::vector<const MigProfile*> todo = profiles;
  // Wide instances have the fewest valid starts; placing them first avoids the "1g first
  // blocks the 3g" trap that `nvidia-smi mig -cgi` falls into.
  std::stable_sort(todo.begin(), todo.end(), [](const MigProfile* a, const MigProfile* b) {
    return a->memory_slices > b->memory_slices;
  });
  std::vector<bool> used(gpu.memory_slices, false);
  std::vector<PlacedInstance> placed;
  if (!Search(gpu, todo, 0, used, placed)) return std::nullopt;
  if (!CheckLayout(gpu, placed).ok()) return std::nullopt;  // count or compute limits
  std::sort(placed.begin(), placed.end(),
            [](const PlacedInstance& a, const PlacedInstance& b) { return a.start < b.start; });
  return placed;
}

std::vector<std::pair<const MigProfile*, int>> CountProfiles(
    const std::vector<const MigProfile*>& profiles) {
  std::vector<std::pair<const MigProfile*, int>> counts;
  for (const MigProfile* p : profiles) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == p; });
    if (it == counts.end()) {
      counts.emplace_back(p, 1);
    } else {
      ++it->second;
    }
  }
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.first->memory_slices, a.first->compute_slices) >
           std::make_pair(b.first->memory_slices, b.first->compute_slices);
  });
  return counts;
}

std::vector<std::pair<const MigProfile*, int>> CountProfiles(
    const std::vector<PlacedInstance>& layout) {
  std::vector<const MigProfile*> profiles;
  for (const PlacedInstance& i : layout) profiles.push_back(i.profile);
  return CountProfiles(profiles);
}

}  // namespace topology
