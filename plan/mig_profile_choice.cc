#include "plan/mig_profile_choice.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "plan/quantity_text.h"

namespace plan {
namespace {

using topology::GpuModel;
using topology::MigProfile;

// How far a profile's compute share is from its memory share, scaled to stay in integers:
// |compute / C - memory / M| * C * M.
int ComputeSkew(const GpuModel& gpu, const MigProfile& p) {
  return std::abs(p.compute_slices * gpu.memory_slices - p.memory_slices * gpu.compute_slices);
}

// The balanced choice among profiles of equal memory.
bool BetterProfile(const GpuModel& gpu, const MigProfile* a, const MigProfile* b) {
  if (*a->memory_mib != *b->memory_mib) return *a->memory_mib < *b->memory_mib;
  int sa = ComputeSkew(gpu, *a), sb = ComputeSkew(gpu, *b);
  if (sa != sb) return sa < sb;
  if (a->compute_slices != b->compute_slices) return a->compute_slices < b->compute_slices;
  return a->name < b->name;
}

}  // namespace

bool IsAttributeVariant(const MigProfile& p) { return absl::StrContains(p.name, "+"); }

absl::StatusOr<ProfileChoice> ChooseProfile(const GpuModel& gpu, int64_t need_bytes) {
  std::vector<const MigProfile*> candidates;
  bool unknown = false;
  for (const MigProfile& p : gpu.profiles) {
    if (IsAttributeVariant(p) || p.memory_slices >= gpu.memory_slices) continue;
    if (!p.memory_mib) {
      unknown = true;
      continue;
    }
    candidates.push_back(&p);
  }
  ProfileChoice out;
  std::string need = GiBText(need_bytes, true);
  if (candidates.empty()) {
    if (unknown) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot size a MIG profile on ", gpu.model,
          ": the catalog has no memory for its profiles (read nvidia.com/mig-<profile>.memory "
          "from a node running them, or choose another GPU)"));
    }
    out.explanation = absl::StrCat("needs ", need, ": ", gpu.model,
                                   " has no MIG profile short of the whole card");
    return out;
  }
  std::sort(candidates.begin(), candidates.end(),
            [&](const MigProfile* a, const MigProfile* b) { return BetterProfile(gpu, a, b); });
  const MigProfile* best = nullptr;
  const MigProfile* below = nullptr;  // the best profile that is too small
  for (const MigProfile* p : candidates) {
    if (*p->memory_mib * kMiB >= need_bytes) {
      if (!best) best = p;
    } else if (!below || *p->memory_mib > *below->memory_mib) {
      below = p;
    }
  }
  if (!best) {
    out.explanation =
        absl::StrCat("needs ", need, ": no MIG profile short of the whole card holds it (",
                     below->name, " holds only ", MibText(*below->memory_mib, false), ")");
    return out;
  }
  out.profile = best;
  out.explanation = absl::StrCat("needs ", need, " -> ", best->name, " (",
                                 MibText(*best->memory_mib, false), ")");
  if (below) {
    absl::StrAppend(&out.explanation, "; ", below->name, " holds only ",
                    MibText(*below->memory_mib, false));
  }
  for (const MigProfile* p : candidates) {
    if (p == best || *p->memory_mib != *best->memory_mib) continue;
    absl::StrAppend(&out.explanation, "; ", p->name, " has the same memory with ",
                    Plural(p->compute_slices, "compute slice", "compute slices"), ", ", best->name,
                    " keeps compute in proportion to memory (", best->compute_slices, " of ",
                    gpu.compute_slices, ")");
  }
  return out;
}

}  // namespace plan
