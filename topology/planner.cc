#include "topology/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace topology {
namespace {

// Larger than any GPU memory we will meet for decades (about 9 PB); keeps int64 arithmetic safe.
constexpr double kMaxBytes = 1e16;

std::string Num(double v) { return absl::StrCat(v); }

// "13B", "7.24B", "350M", "1234".
std::string CountText(int64_t n) {
  struct Unit {
    int64_t scale;
    const char* suffix;
  };
  for (Unit u : {Unit{1'000'000'000'000, "T"}, Unit{1'000'000'000, "B"}, Unit{1'000'000, "M"},
                 Unit{1'000, "K"}}) {
    if (n >= u.scale) {
      double v = std::round(static_cast<double>(n) / static_cast<double>(u.scale) * 100) / 100;
      return absl::StrCat(Num(v), u.suffix);
    }
  }
  return absl::StrCat(n);
}

std::string Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

bool IsAttributeVariant(const MigProfile& p) { return absl::StrContains(p.name, "+"); }

// Largest first: the wide instances have the fewest valid starts.
bool LargerProfile(const MigProfile* a, const MigProfile* b) {
  if (a->memory_slices != b->memory_slices) return a->memory_slices > b->memory_slices;
  if (a->compute_slices != b->compute_slices) return a->compute_slices > b->compute_slices;
  return a->name < b->name;
}

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

std::string MibText(int64_t mib, bool round_up) { return GiBText(mib * kMiB, round_up); }

}  // namespace

absl::string_view MechanismName(Mechanism m) {
  switch (m) {
    case Mechanism::kMig:
      return "mig";
    case Mechanism::kExclusive:
      return "exclusive";
    case Mechanism::kTimeslice:
      return "timeslice";
    case Mechanism::kMps:
      return "mps";
    case Mechanism::kVmBoundary:
      return "vm";
  }
  return "unknown";
}

absl::string_view GpuUseName(GpuUse use) {
  switch (use) {
    case GpuUse::kIdle:
      return "idle";
    case GpuUse::kMig:
      return "mig";
    case GpuUse::kExclusive:
      return "exclusive";
    case GpuUse::kTimeslice:
      return "timeslice";
    case GpuUse::kMps:
      return "mps";
  }
  return "unknown";
}

std::string GiBText(int64_t bytes, bool round_up) {
  int64_t whole = bytes / kGiB;
  int64_t rest = bytes % kGiB;  // < 2^30, so rest * 100 cannot overflow
  int64_t centi = rest * 100 / kGiB;
  if (round_up && centi * kGiB < rest * 100) ++centi;
  if (centi == 100) {
    ++whole;
    centi = 0;
  }
  return absl::StrCat(whole, ".", centi < 10 ? "0" : "", centi, " GiB");
}

// ---- Memory sizing ----------------------------------------------------------------------------

absl::StatusOr<MemorySizing> SizeMemory(const MemoryInput& input) {
  if (input.high_water_bytes.has_value() == input.model.has_value()) {
    return absl::InvalidArgumentError(
        "memory: give exactly one of highWaterMark (a measured peak) and model (a description)");
  }
  double headroom_pct = input.headroom_percent.value_or(kDefaultHeadroomPercent);
  if (!(headroom_pct >= 0 && headroom_pct <= 400)) {
    return absl::InvalidArgumentError("memory.headroomPercent: must be between 0 and 400");
  }
  if (input.workspace_bytes && (*input.workspace_bytes < 0 || *input.workspace_bytes > kMaxBytes)) {
    return absl::InvalidArgumentError("memory.workspace: must be between 0 and 9 PB");
  }
  MemorySizing out;
  if (input.model) {
    const ModelDescription& m = *input.model;
    out.source = "model";
    struct Check {
      const char* name;
      int64_t value;
    };
    for (Check c : {Check{"parameters", m.parameters}, Check{"layers", m.layers},
                    Check{"kvHeads", m.kv_heads}, Check{"headDim", m.head_dim},
                    Check{"maxTokens", m.max_tokens}, Check{"concurrency", m.concurrency}}) {
      if (c.value <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("memory.model.", c.name, ": must be positive"));
      }
    }
    if (!(m.bytes_per_parameter > 0 && m.bytes_per_parameter <= 16)) {
      return absl::InvalidArgumentError("memory.model.bytesPerParameter: must be in (0, 16]");
    }
    if (!(m.kv_bytes_per_element > 0 && m.kv_bytes_per_element <= 16)) {
      return absl::InvalidArgumentError("memory.model.kvBytesPerElement: must be in (0, 16]");
    }
    double weights = static_cast<double>(m.parameters) * m.bytes_per_parameter;
    double kv = 2.0 * static_cast<double>(m.layers) * static_cast<double>(m.kv_heads) *
                static_cast<double>(m.head_dim) * static_cast<double>(m.max_tokens) *
                static_cast<double>(m.concurrency) * m.kv_bytes_per_element;
    if (weights > kMaxBytes || kv > kMaxBytes) {
      return absl::InvalidArgumentError("memory.model: the model is implausibly large (> 9 PB)");
    }
    out.terms.push_back(
        {"weights", std::llround(weights),
         absl::StrCat(CountText(m.parameters), " params x ", Num(m.bytes_per_parameter), " B")});
    out.terms.push_back({"kv-cache", std::llround(kv),
                         absl::StrCat("2 (K,V) x ", m.layers, " layers x ", m.kv_heads,
                                      " KV heads x ", m.head_dim, " head dim x ", m.max_tokens,
                                      " tokens x ", Plural(m.concurrency, "sequence", "sequences"),
                                      " x ", Num(m.kv_bytes_per_element), " B")});
    if (input.workspace_bytes) {
      out.terms.push_back({"workspace", *input.workspace_bytes, "given"});
    } else {
      out.terms.push_back({"workspace", kDefaultWorkspaceBytes,
                           "default 1 GiB: CUDA context, library workspaces, activations"});
    }
  } else {
    if (*input.high_water_bytes <= 0 || *input.high_water_bytes > kMaxBytes) {
      return absl::InvalidArgumentError("memory.highWaterMark: must be positive and below 9 PB");
    }
    out.source = "high-water mark";
    out.terms.push_back({"measured", *input.high_water_bytes,
                         "measured peak; includes weights, KV cache and workspace"});
    if (input.workspace_bytes) {
      out.terms.push_back(
          {"workspace", *input.workspace_bytes, "given, on top of the measurement"});
    }
  }
  int64_t subtotal = 0;
  for (const MemoryTerm& t : out.terms) subtotal += t.bytes;
  int64_t headroom = std::llround(static_cast<double>(subtotal) * headroom_pct / 100.0);
  out.terms.push_back({"headroom", headroom,
                       absl::StrCat(Num(headroom_pct), "% of ", GiBText(subtotal, true),
                                    input.headroom_percent ? "" : " (default)")});
  out.total_bytes = subtotal + headroom;
  out.total_mib = (out.total_bytes + kMiB - 1) / kMiB;
  return out;
}

// ---- Mechanism ----------------------------------------------------------------------------------

MechanismChoice ChooseMechanism(const WorkloadSpec& w, absl::string_view gpu_name,
                                bool gpu_has_mig) {
  MechanismChoice c;
  if (w.vm_boundary) {
    c.mechanism = Mechanism::kVmBoundary;
    c.reasons.push_back(absl::StrCat("tenant ", w.tenant, " requires a VM boundary"));
    c.warnings.push_back(absl::StrCat(
        w.name,
        ": a VM boundary means NVIDIA vGPU (NVIDIA AI Enterprise, licensed per concurrent "
        "vGPU) or whole-GPU passthrough to a VM (nvidia.com/gpu.workload.config=vm-vgpu or "
        "vm-passthrough on dedicated nodes); a scheduler cannot provide it, so this plan places "
        "nothing for it"));
    return c;
  }
  if (w.training) {
    c.mechanism = Mechanism::kExclusive;
    c.reasons.push_back(
        "training: needs a whole GPU's memory bandwidth, and MIG instances have no GPU-to-GPU P2P");
    return c;
  }
  if (w.trust == Trust::kUntrusted) {
    if (gpu_has_mig) {
      c.mechanism = Mechanism::kMig;
      c.reasons.push_back(
          "untrusted tenant: needs a hardware boundary; a MIG instance has its own SMs, L2, "
          "memory and fault domain");
    } else {
      c.mechanism = Mechanism::kExclusive;
      c.reasons.push_back(absl::StrCat("untrusted tenant on ", gpu_name,
                                       ", which has no MIG: a whole GPU is the only hardware "
                                       "boundary"));
      c.warnings.push_back(absl::StrCat(
          gpu_name, " has no MIG: untrusted workload ", w.name,
          " gets whole GPUs, because time-slicing and MPS share one memory heap and fault domain"));
    }
    return c;
  }
  if (w.latency == Latency::kSla) {
    if (gpu_has_mig) {
      c.mechanism = Mechanism::kMig;
      c.reasons.push_back(
          "SLA-bound inference: a MIG instance's own SMs, L2 and memory bandwidth keep neighbours "
          "from stretching its latency");
    } else {
      c.mechanism = w.sharing == SharingHint::kTimeslice ? Mechanism::kTimeslice : Mechanism::kMps;
      c.reasons.push_back(
          absl::StrCat("SLA-bound on ", gpu_name, ", which has no MIG: falls back to sharing (",
                       c.mechanism == Mechanism::kMps ? "MPS caps its memory and SM share"
                                                      : "time-slicing, as asked",
                       ")"));
      c.warnings.push_back(absl::StrCat(
          gpu_name, " has no MIG: ", w.name,
          " shares a GPU with no hardware boundary (one memory heap, one fault domain); a "
          "neighbour's fault or burst can break its SLA"));
    }
    return c;
  }
  if (w.sharing == SharingHint::kMps) {
    c.mechanism = Mechanism::kMps;
    c.reasons.push_back(
        "trusted best-effort work: MPS runs the clients concurrently, each capped at the GPU's "
        "memory / replicas and an equal SM share");
  } else {
    c.mechanism = Mechanism::kTimeslice;
    c.reasons.push_back(
        "trusted, bursty or best-effort work: time-slicing lends it the whole GPU between bursts; "
        "its memory is accounted by the extender, not enforced");
  }
  if (gpu_has_mig)
    c.reasons.push_back(absl::StrCat("the ", gpu_name, " it shares runs with MIG disabled"));
  if (!gpu_has_mig && !gpu_name.empty()) {
    c.warnings.push_back(
        absl::StrCat(gpu_name, " has no MIG: ", w.name, " shares a GPU with no hardware boundary"));
  }
  return c;
}

// ---- MIG profile choice -------------------------------------------------------------------------

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

// ---- MIG bin packing ----------------------------------------------------------------------------

namespace {

struct MigItem {
  const MigProfile* profile = nullptr;
  std::string zone;  // empty: any GPU
};

struct MigPacking {
  std::vector<int> gpu_of_item;  // index into the candidate GPUs, per item
  int failed_item = -1;          // an item no search could place (when gpu_of_item is empty)
};

// Packs MIG instances of one model onto candidate GPUs (in preference order, each with a zone),
// using as few GPUs as it can. First fit decreasing gives a plan and an item to blame if it
// fails; when that plan uses more GPUs than the slice-count lower bound, a depth-first search
// with symmetry breaking looks for a better one within a node budget. Exact for the sizes a
// planning input has; never worse than first fit.
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

// ---- Packing one model --------------------------------------------------------------------------

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
  MigPacking packing = MigPacker(gpu, items, std::vector<std::string>(items.size(), "")).Run();
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

// ---- The plan -----------------------------------------------------------------------------------

namespace {

// common/status_macros.h is out of reach from topology/; this file needs only this one.
#define PLANNER_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    absl::Status planner_status_ = (expr);             \
    if (!planner_status_.ok()) return planner_status_; \
  } while (0)

struct Item {
  Holder holder;
  std::string zone;  // empty: any
  int type = 0;
  Mechanism mechanism = Mechanism::kMig;
  const MigProfile* profile = nullptr;  // kMig
  int gpus = 1;                         // kExclusive
  int64_t memory_mib = 0;               // shared
};

// Packing state beside the Plan being built.
class Packer {
 public:
  Packer(const PlanInput& input, Plan& plan, std::vector<int> gpu_type, std::vector<int> gpu_node)
      : input_(input),
        plan_(plan),
        gpu_type_(std::move(gpu_type)),
        gpu_node_(std::move(gpu_node)),
        mig_profiles_(plan.gpus.size()),
        mig_holders_(plan.gpus.size()),
        node_mps_need_(plan.nodes.size(), 0) {}

  absl::Status Run(std::vector<Item> items) {
    std::vector<Item> exclusive, mig, shared;
    for (Item& item : items) {
      switch (item.mechanism) {
        case Mechanism::kExclusive:
          exclusive.push_back(std::move(item));
          break;
        case Mechanism::kMig:
          mig.push_back(std::move(item));
          break;
        case Mechanism::kTimeslice:
        case Mechanism::kMps:
          shared.push_back(std::move(item));
          break;
        case Mechanism::kVmBoundary:
          break;
      }
    }
    std::stable_sort(exclusive.begin(), exclusive.end(),
                     [](const Item& a, const Item& b) { return a.gpus > b.gpus; });
    for (const Item& item : exclusive) PLANNER_RETURN_IF_ERROR(PlaceExclusive(item));
    // Largest first; among equals, zone-bound replicas before free ones (they have fewer GPUs).
    std::stable_sort(mig.begin(), mig.end(), [](const Item& a, const Item& b) {
      if (a.profile->memory_slices != b.profile->memory_slices) {
        return a.profile->memory_slices > b.profile->memory_slices;
      }
      if (a.profile->compute_slices != b.profile->compute_slices) {
        return a.profile->compute_slices > b.profile->compute_slices;
      }
      return !a.zone.empty() && b.zone.empty();
    });
    PLANNER_RETURN_IF_ERROR(PlaceMig(mig));
    if (input_.canary_profile) PlaceCanaries(*input_.canary_profile);
    std::stable_sort(shared.begin(), shared.end(), [](const Item& a, const Item& b) {
      if (a.memory_mib != b.memory_mib) return a.memory_mib > b.memory_mib;
      return !a.zone.empty() && b.zone.empty();
    });
    for (const Item& item : shared) PLANNER_RETURN_IF_ERROR(PlaceShared(item));
    return Finish();
  }

 private:
  const WorkloadPlan& W(const Holder& h) const { return plan_.workloads[h.workload]; }

  std::string Who(const Item& item) const {
    const WorkloadPlan& w = W(item.holder);
    std::string who = absl::StrCat("workload \"", w.spec.name, "\"");
    if (w.replicas > 1)
      absl::StrAppend(&who, " replica ", item.holder.replica + 1, " of ", w.replicas);
    return who;
  }

  std::string Where(const Item& item) const {
    std::string where = plan_.gpu_types[item.type].name;
    if (!item.zone.empty()) absl::StrAppend(&where, " in zone ", item.zone);
    return where;
  }

  int CountType(const Item& item) const {
    int n = 0;
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      n += gpu_type_[g] == item.type && ZoneOk(g, item);
    }
    return n;
  }

  bool ZoneOk(size_t g, const Item& item) const {
    return item.zone.empty() || plan_.gpus[g].zone == item.zone;
  }

  bool NodeAccepts(int node, GpuUse use) const {
    const NodePlan& n = plan_.nodes[node];
    switch (use) {
      case GpuUse::kMig:
        return n.full_gpu_mode != GpuUse::kMps;
      case GpuUse::kMps:
        return !n.has_mig && (n.full_gpu_mode == GpuUse::kIdle || n.full_gpu_mode == GpuUse::kMps);
      default:
        return n.full_gpu_mode == GpuUse::kIdle || n.full_gpu_mode == use;
    }
  }

  absl::Status PlaceExclusive(const Item& item) {
    for (int node = static_cast<int>(plan_.nodes.size()) - 1; node >= 0; --node) {
      const NodePlan& n = plan_.nodes[node];
      if (!item.zone.empty() && n.zone != item.zone) continue;
      if (!NodeAccepts(node, GpuUse::kExclusive)) continue;
      std::vector<int> idle;
      for (auto it = n.gpus.rbegin(); it != n.gpus.rend(); ++it) {
        if (gpu_type_[*it] == item.type && plan_.gpus[*it].use == GpuUse::kIdle)
          idle.push_back(*it);
      }
      if (static_cast<int>(idle.size()) < item.gpus) continue;
      for (int k = 0; k < item.gpus; ++k) {
        GpuPlan& gpu = plan_.gpus[idle[k]];
        gpu.use = GpuUse::kExclusive;
        gpu.clients = {item.holder};
      }
      plan_.nodes[node].full_gpu_mode = GpuUse::kExclusive;
      return absl::OkStatus();
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        Who(item), " cannot fit: it needs ", Plural(item.gpus, "whole GPU", "whole GPUs"),
        item.gpus > 1 ? " on one node" : "", " and no node has ", item.gpus, " idle ", Where(item),
        " left (the fleet has ", CountType(item),
        "; time-sliced or MPS nodes cannot host exclusive GPUs)"));
  }

  // All MIG instances of one GPU type at once, so the packer can search for the fewest GPUs.
  // Exclusive GPUs are taken already; MPS nodes are chosen later, so every idle GPU may host MIG.
  absl::Status PlaceMig(const std::vector<Item>& mig) {
    std::map<int, std::vector<const Item*>> by_type;
    for (const Item& item : mig) by_type[item.type].push_back(&item);
    for (const auto& [type, items] : by_type) {
      const GpuModel& model = *plan_.gpu_types[type].model;
      std::vector<int> gpus;
      std::vector<std::string> zones;
      for (size_t g = 0; g < plan_.gpus.size(); ++g) {
        if (gpu_type_[g] != type || plan_.gpus[g].use != GpuUse::kIdle) continue;
        if (!NodeAccepts(gpu_node_[g], GpuUse::kMig)) continue;
        gpus.push_back(static_cast<int>(g));
        zones.push_back(plan_.gpus[g].zone);
      }
      std::vector<MigItem> packed;
      for (const Item* item : items) packed.push_back({item->profile, item->zone});
      MigPacking packing = MigPacker(model, std::move(packed), std::move(zones)).Run();
      if (packing.gpu_of_item.empty()) {
        const Item& item = *items[packing.failed_item];
        return absl::ResourceExhaustedError(
            absl::StrCat(Who(item), " cannot fit: no room for its ", item.profile->name, " on any ",
                         Where(item), " (the fleet has ", CountType(item),
                         ", all cut or taken): add GPUs, drop replicas or shrink the workload"));
      }
      for (size_t i = 0; i < items.size(); ++i) {
        int g = gpus[packing.gpu_of_item[i]];
        plan_.gpus[g].use = GpuUse::kMig;
        plan_.nodes[gpu_node_[g]].has_mig = true;
        mig_profiles_[g].push_back(items[i]->profile);
        mig_holders_[g].push_back(items[i]->holder);
      }
    }
    return absl::OkStatus();
  }

  void PlaceCanaries(const std::string& wanted) {
    for (size_t node = 0; node < plan_.nodes.size(); ++node) {
      NodePlan& n = plan_.nodes[node];
      if (!n.has_mig) continue;
      const GpuModel* model = nullptr;
      for (int g : n.gpus) {
        if (plan_.gpus[g].use == GpuUse::kMig) {
          model = plan_.gpus[g].model;
          break;
        }
      }
      const MigProfile* profile = model->FindProfile(wanted);
      if (!profile) {
        for (const MigProfile& p : model->profiles) {
          if (IsAttributeVariant(p)) continue;
          if (!profile || p.memory_slices < profile->memory_slices ||
              (p.memory_slices == profile->memory_slices &&
               p.compute_slices < profile->compute_slices)) {
            profile = &p;
          }
        }
        plan_.warnings.push_back(absl::StrCat("node ", n.name, ": ", model->model, " has no ",
                                              wanted, "; its canary slice is a ", profile->name));
      }
      bool placed = false;
      for (int g : n.gpus) {
        if (plan_.gpus[g].use != GpuUse::kMig || plan_.gpus[g].model != model) continue;
        std::vector<const MigProfile*> candidate = mig_profiles_[g];
        candidate.push_back(profile);
        if (PlaceProfiles(*model, candidate)) {
          mig_profiles_[g] = std::move(candidate);
          mig_holders_[g].push_back(Holder{});
          placed = true;
          break;
        }
      }
      for (int g : n.gpus) {
        if (placed) break;
        if (plan_.gpus[g].use != GpuUse::kIdle || plan_.gpus[g].model != model) continue;
        plan_.gpus[g].use = GpuUse::kMig;
        mig_profiles_[g] = {profile};
        mig_holders_[g] = {Holder{}};
        placed = true;
        plan_.warnings.push_back(
            absl::StrCat("node ", n.name, ": its MIG GPUs are full, so the canary ", profile->name,
                         " takes GPU ", plan_.gpus[g].index, " on its own"));
      }
      if (!placed) {
        plan_.warnings.push_back(absl::StrCat("node ", n.name, ": no room for a canary ",
                                              profile->name,
                                              " slice; free a slice or drop the canary"));
      }
    }
  }

  // MPS gives every client of a node the same cap: GPU memory / replicas, replicas >= 2.
  bool MpsFits(size_t g, const Item& item, int clients_after) const {
    int node = gpu_node_[g];
    int replicas = std::max({2, plan_.nodes[node].shared_replicas, clients_after});
    int64_t need = std::max(node_mps_need_[node], item.memory_mib);
    return clients_after <= kMaxMpsClients && need <= *plan_.gpus[g].memory_mib / replicas;
  }

  bool SharedFits(size_t g, const Item& item) const {
    const GpuPlan& gpu = plan_.gpus[g];
    if (gpu.shared_memory_mib + item.memory_mib > *gpu.memory_mib) return false;
    if (item.mechanism == Mechanism::kMps) {
      return MpsFits(g, item, static_cast<int>(gpu.clients.size()) + 1);
    }
    return true;
  }

  void AddShared(size_t g, const Item& item) {
    GpuPlan& gpu = plan_.gpus[g];
    NodePlan& node = plan_.nodes[gpu_node_[g]];
    gpu.clients.push_back(item.holder);
    gpu.shared_memory_mib += item.memory_mib;
    node.shared_replicas =
        std::max({2, node.shared_replicas, static_cast<int>(gpu.clients.size())});
    if (item.mechanism == Mechanism::kMps) {
      node_mps_need_[gpu_node_[g]] = std::max(node_mps_need_[gpu_node_[g]], item.memory_mib);
    }
  }

  absl::Status PlaceShared(const Item& item) {
    GpuUse use = item.mechanism == Mechanism::kMps ? GpuUse::kMps : GpuUse::kTimeslice;
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      if (plan_.gpus[g].use != use || gpu_type_[g] != item.type || !ZoneOk(g, item)) continue;
      if (!SharedFits(g, item)) continue;
      AddShared(g, item);
      return absl::OkStatus();
    }
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      if (plan_.gpus[g].use != GpuUse::kIdle || gpu_type_[g] != item.type || !ZoneOk(g, item))
        continue;
      if (!NodeAccepts(gpu_node_[g], use) || !SharedFits(g, item)) continue;
      plan_.gpus[g].use = use;
      plan_.nodes[gpu_node_[g]].full_gpu_mode = use;
      AddShared(g, item);
      return absl::OkStatus();
    }
    std::string why = use == GpuUse::kMps
                          ? "a node shares its full GPUs one way only (time-slicing or MPS); MPS "
                            "needs a node without MIG GPUs and caps every client at GPU memory / "
                            "replicas, at most 48 clients per GPU"
                          : "a node shares its full GPUs one way only (time-slicing or MPS), an "
                            "exclusive GPU cannot sit on a time-sliced node, and declared memory "
                            "must add up to at most the card's";
    return absl::ResourceExhaustedError(absl::StrCat(Who(item), " cannot fit: no ", Where(item),
                                                     " has ", MibText(item.memory_mib, true),
                                                     " of shareable memory left (", why, ")"));
  }

  absl::Status Finish() {
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      GpuPlan& gpu = plan_.gpus[g];
      if (gpu.use != GpuUse::kMig) continue;
      auto layout = PlaceProfiles(*gpu.model, mig_profiles_[g]);
      if (!layout)
        return absl::InternalError(absl::StrCat("lost the layout of ", gpu.node, "/", gpu.index));
      absl::Status s = CheckLayout(*gpu.model, *layout);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat(gpu.node, "/", gpu.index, ": invalid layout: ", s.message()));
      }
      CreationOrder creation = PlanCreation(*gpu.model, *layout);
      s = CheckLayout(*gpu.model, creation.layout);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat(gpu.node, "/", gpu.index, ": invalid layout: ", s.message()));
      }
      gpu.create_order = creation.order;
      gpu.create_order_verified = creation.verified;
      if (!creation.verified) {
        plan_.warnings.push_back(absl::StrCat(
            gpu.node, " GPU ", gpu.index,
            ": no -cgi order is known to produce this layout; create "
            "the instances with explicit placements (NVML CreateGpuInstanceWithPlacement)"));
      }
      // Instances of one profile are interchangeable: hand them out in the order they were packed.
      std::vector<bool> taken(mig_holders_[g].size(), false);
      for (const PlacedInstance& inst : creation.layout) {
        PlannedInstance planned{inst.profile, inst.start, Holder{}};
        for (size_t k = 0; k < mig_profiles_[g].size(); ++k) {
          if (!taken[k] && mig_profiles_[g][k] == inst.profile) {
            taken[k] = true;
            planned.holder = mig_holders_[g][k];
            break;
          }
        }
        gpu.instances.push_back(planned);
      }
    }
    return absl::OkStatus();
  }

  const PlanInput& input_;
  Plan& plan_;
  std::vector<int> gpu_type_;
  std::vector<int> gpu_node_;
  std::vector<std::vector<const MigProfile*>> mig_profiles_;
  std::vector<std::vector<Holder>> mig_holders_;
  std::vector<int64_t> node_mps_need_;
};

absl::Status WithWorkload(const WorkloadSpec& w, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("workload \"", w.name, "\": ", s.message()));
}

int CeilDiv(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Which fleet GPU type a workload runs on: the one it names, else the first that suits the
// mechanism it would get on a MIG GPU.
absl::StatusOr<int> PickType(const Plan& plan, const Catalog& catalog, const WorkloadSpec& w,
                             const MemorySizing& sizing) {
  const std::vector<GpuType>& types = plan.gpu_types;
  if (!w.gpu.empty()) {
    const GpuModel* wanted = catalog.FindModel(w.gpu);
    if (!wanted) wanted = catalog.MatchProduct(w.gpu);
    for (size_t t = 0; t < types.size(); ++t) {
      if (types[t].name == w.gpu || (wanted && types[t].model == wanted))
        return static_cast<int>(t);
    }
    std::vector<std::string> names;
    for (const GpuType& t : types) names.push_back(t.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu \"", w.gpu, "\" is not in the fleet (it has ", absl::StrJoin(names, ", "), ")"));
  }
  Mechanism ideal = ChooseMechanism(w, "", true).mechanism;
  for (size_t t = 0; t < types.size(); ++t) {
    const GpuType& type = types[t];
    switch (ideal) {
      case Mechanism::kMig:
        if (type.HasMig()) return static_cast<int>(t);
        break;
      case Mechanism::kTimeslice:
      case Mechanism::kMps:
        if (!type.HasMig()) return static_cast<int>(t);
        break;
      case Mechanism::kExclusive:
        if (type.memory_mib && *type.memory_mib * w.max_gpus >= sizing.total_mib) {
          return static_cast<int>(t);
        }
        break;
      case Mechanism::kVmBoundary:
        return 0;
    }
  }
  return 0;
}

#undef PLANNER_RETURN_IF_ERROR

}  // namespace

absl::StatusOr<Plan> MakePlan(const PlanInput& input, const Catalog& catalog) {
  Plan plan;
  plan.canary_profile = input.canary_profile;
  if (input.fleet.empty()) return absl::InvalidArgumentError("fleet: no nodes");
  if (input.workloads.empty()) return absl::InvalidArgumentError("workloads: none given");

  // Fleet: GPU types, nodes, GPUs.
  std::vector<int> gpu_type, gpu_node;
  std::set<std::string> node_names;
  for (const FleetNode& node : input.fleet) {
    if (node.name.empty()) return absl::InvalidArgumentError("fleet: a node has no name");
    if (!node_names.insert(node.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("fleet: node ", node.name, " is listed twice"));
    }
    if (node.count < 1 || node.count > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("fleet: node ", node.name, ": count must be 1..64"));
    }
    const GpuModel* model = catalog.FindModel(node.gpu);
    if (!model) model = catalog.MatchProduct(node.gpu);
    GpuType type{model ? model->model : node.gpu, model, node.memory_mib};
    if (!type.memory_mib && model) type.memory_mib = model->total_memory_mib;
    if (!model && !type.memory_mib) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fleet: node ", node.name, ": GPU \"", node.gpu,
          "\" is not in the MIG catalog; give its memory (e.g. memory: 24Gi) and it is planned "
          "without MIG"));
    }
    int t = -1;
    for (size_t k = 0; k < plan.gpu_types.size(); ++k) {
      if (plan.gpu_types[k].name == type.name) t = static_cast<int>(k);
    }
    if (t < 0) {
      t = static_cast<int>(plan.gpu_types.size());
      plan.gpu_types.push_back(type);
    } else if (type.memory_mib) {
      std::optional<int64_t>& known = plan.gpu_types[t].memory_mib;
      if (known && node.memory_mib && *known != *node.memory_mib) {
        return absl::InvalidArgumentError(absl::StrCat("fleet: nodes disagree on the memory of ",
                                                       type.name, " (", *known, " and ",
                                                       *node.memory_mib, " MiB)"));
      }
      if (!known || node.memory_mib) known = type.memory_mib;
    }
    NodePlan np;
    np.name = node.name;
    np.zone = node.zone;
    for (int i = 0; i < node.count; ++i) {
      np.gpus.push_back(static_cast<int>(plan.gpus.size()));
      GpuPlan gpu;
      gpu.node = node.name;
      gpu.zone = node.zone;
      gpu.index = i;
      gpu.gpu_type = type.name;
      gpu.model = model;
      plan.gpus.push_back(std::move(gpu));
      gpu_type.push_back(t);
      gpu_node.push_back(static_cast<int>(plan.nodes.size()));
    }
    plan.nodes.push_back(std::move(np));
  }
  for (size_t g = 0; g < plan.gpus.size(); ++g) {
    plan.gpus[g].memory_mib = plan.gpu_types[gpu_type[g]].memory_mib;
  }

  // Workloads: size, decide, expand into packing items.
  std::vector<Item> items;
  std::set<std::string> workload_names;
  std::map<std::string, std::pair<Trust, std::string>> tenant_trust;
  for (const WorkloadSpec& spec : input.workloads) {
    if (spec.name.empty()) return absl::InvalidArgumentError("workloads: a workload has no name");
    if (!workload_names.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload \"", spec.name, "\" is listed twice"));
    }
    if (spec.tenant.empty()) return WithWorkload(spec, absl::InvalidArgumentError("no tenant"));
    auto [it, fresh] = tenant_trust.emplace(spec.tenant, std::make_pair(spec.trust, spec.name));
    if (!fresh && it->second.first != spec.trust) {
      return absl::InvalidArgumentError(
          absl::StrCat("tenant ", spec.tenant, ": workloads \"", it->second.second, "\" and \"",
                       spec.name, "\" disagree on trust; a tenant has one tier"));
    }
    if (spec.max_gpus < 1)
      return WithWorkload(spec, absl::InvalidArgumentError("maxGpus must be >= 1"));
    if (spec.replicas < 0)
      return WithWorkload(spec, absl::InvalidArgumentError("replicas must be >= 1"));

    WorkloadPlan wp;
    wp.spec = spec;
    if (wp.spec.namespace_name.empty()) wp.spec.namespace_name = spec.tenant;
    absl::StatusOr<MemorySizing> sizing = SizeMemory(spec.memory);
    if (!sizing.ok()) return WithWorkload(spec, sizing.status());
    wp.sizing = *std::move(sizing);
    absl::StatusOr<int> type_index = PickType(plan, catalog, spec, wp.sizing);
    if (!type_index.ok()) return WithWorkload(spec, type_index.status());
    const GpuType& type = plan.gpu_types[*type_index];
    MechanismChoice choice = ChooseMechanism(spec, type.name, type.HasMig());
    wp.mechanism = choice.mechanism;
    wp.reasons = std::move(choice.reasons);
    wp.warnings = std::move(choice.warnings);
    const int64_t need = wp.sizing.total_mib;

    if (wp.mechanism != Mechanism::kVmBoundary) wp.gpu_type = type.name;
    if (wp.mechanism == Mechanism::kMig) {
      absl::StatusOr<ProfileChoice> profile = ChooseProfile(*type.model, wp.sizing.total_bytes);
      if (!profile.ok()) return WithWorkload(spec, profile.status());
      wp.rounding = profile->explanation;
      if (profile->profile) {
        wp.profile = profile->profile;
      } else {
        wp.mechanism = Mechanism::kExclusive;
        wp.reasons.push_back(
            "no MIG profile short of the whole card holds it, so it gets whole GPUs");
      }
    }
    if (wp.mechanism == Mechanism::kExclusive) {
      if (!type.memory_mib) {
        return WithWorkload(spec, absl::FailedPreconditionError(absl::StrCat(
                                      "cannot size on ", type.name,
                                      ": the catalog has no total memory for it; give the fleet "
                                      "entry a memory")));
      }
      int gpus = CeilDiv(need, *type.memory_mib);
      if (gpus > spec.max_gpus) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "workload \"", spec.name, "\" cannot fit: it needs ",
            GiBText(wp.sizing.total_bytes, true), ", more than ",
            spec.max_gpus == 1 ? "one " : absl::StrCat(spec.max_gpus, " x "), type.name, " holds (",
            MibText(*type.memory_mib * spec.max_gpus, false), "), and maxGpus is ", spec.max_gpus,
            spec.max_gpus == 1 ? " (no multi-GPU)" : "", ": allow maxGpus: ", gpus,
            " or shrink it"));
      }
      wp.gpus_per_replica = gpus;
      std::string whole =
          gpus == 1
              ? absl::StrCat("1 whole ", type.name, " (", MibText(*type.memory_mib, false), ")")
              : absl::StrCat(gpus, " whole ", type.name, " (", gpus, " x ",
                             MibText(*type.memory_mib, false), ", memory split across them)");
      wp.rounding =
          wp.rounding.empty()
              ? absl::StrCat("needs ", GiBText(wp.sizing.total_bytes, true), " -> ", whole)
              : absl::StrCat(wp.rounding, " -> ", whole);
    }
    if (wp.mechanism == Mechanism::kTimeslice || wp.mechanism == Mechanism::kMps) {
      if (!type.memory_mib) {
        return WithWorkload(spec, absl::FailedPreconditionError(absl::StrCat(
                                      "cannot size on ", type.name,
                                      ": the catalog has no total memory for it; give the fleet "
                                      "entry a memory")));
      }
      if (need > *type.memory_mib) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "workload \"", spec.name, "\" cannot fit: it needs ",
            GiBText(wp.sizing.total_bytes, true), ", more than a whole ", type.name, " (",
            MibText(*type.memory_mib, false), "), and a shared GPU cannot span cards"));
      }
      wp.rounding = absl::StrCat(
          "needs ", GiBText(wp.sizing.total_bytes, true), " of a shared ", type.name, " (",
          MibText(*type.memory_mib, false), "); ",
          wp.mechanism == Mechanism::kMps
              ? "MPS caps each client at the GPU's memory / replicas"
              : "declared with gpu-tenancy.io/gpu-memory so the extender keeps the card's sum "
                "under its memory");
    }

    // Replicas and zones.
    if (spec.mirrored && wp.mechanism != Mechanism::kVmBoundary) {
      std::vector<std::string> zones;
      for (size_t g = 0; g < plan.gpus.size(); ++g) {
        const std::string& z = plan.gpus[g].zone;
        if (gpu_type[g] == *type_index && !z.empty() &&
            std::find(zones.begin(), zones.end(), z) == zones.end()) {
          zones.push_back(z);
        }
      }
      if (zones.size() < 2) {
        return WithWorkload(spec, absl::InvalidArgumentError(absl::StrCat(
                                      "mirrored, but the fleet's ", type.name,
                                      " GPUs are in fewer than two zones (give nodes a zone)")));
      }
      wp.replicas = spec.replicas > 0 ? spec.replicas : static_cast<int>(zones.size());
      if (wp.replicas % static_cast<int>(zones.size()) != 0) {
        return WithWorkload(
            spec,
            absl::InvalidArgumentError(absl::StrCat(
                "mirrored over ", zones.size(), " zones (", absl::StrJoin(zones, ", "),
                "), so replicas must be a multiple of ", zones.size(), ", not ", wp.replicas)));
      }
      for (int r = 0; r < wp.replicas; ++r) wp.replica_zones.push_back(zones[r % zones.size()]);
      wp.reasons.push_back(absl::StrCat("mirrored: ", wp.replicas / zones.size(),
                                        " replica(s) in each of zones ",
                                        absl::StrJoin(zones, ", ")));
    } else {
      wp.replicas = std::max(1, spec.replicas);
      wp.replica_zones.assign(wp.replicas, "");
    }

    switch (wp.mechanism) {
      case Mechanism::kVmBoundary:
        break;
      case Mechanism::kExclusive:
        wp.baseline_gpus = wp.gpus_per_replica;
        wp.baseline_replica_gpus = wp.gpus_per_replica * wp.replicas;
        break;
      default:
        wp.baseline_gpus = 1;
        wp.baseline_replica_gpus = wp.replicas;
    }
    int w_index = static_cast<int>(plan.workloads.size());
    if (wp.mechanism != Mechanism::kVmBoundary) {
      for (int r = 0; r < wp.replicas; ++r) {
        Item item;
        item.holder = Holder{w_index, r};
        item.zone = wp.replica_zones[r];
        item.type = *type_index;
        item.mechanism = wp.mechanism;
        item.profile = wp.profile;
        item.gpus = wp.gpus_per_replica;
        item.memory_mib = need;
        items.push_back(std::move(item));
      }
    }
    plan.baseline_gpus += wp.baseline_gpus;
    plan.baseline_replica_gpus += wp.baseline_replica_gpus;
    plan.workloads.push_back(std::move(wp));
  }

  Packer packer(input, plan, gpu_type, gpu_node);
  absl::Status packed = packer.Run(std::move(items));
  if (!packed.ok()) return packed;

  // Totals and a lower bound for the mechanisms chosen: whole GPUs as they are, MIG by memory
  // and compute slices per model, shared clients by memory per GPU type.
  std::map<int, std::pair<int, int>> mig_slices;      // type -> (memory, compute)
  std::map<std::pair<int, int>, int64_t> shared_mib;  // (type, use) -> MiB
  for (size_t g = 0; g < plan.gpus.size(); ++g) {
    const GpuPlan& gpu = plan.gpus[g];
    if (gpu.use == GpuUse::kIdle) continue;
    ++plan.gpus_used;
    if (gpu.use == GpuUse::kExclusive) ++plan.lower_bound;
    if (gpu.use == GpuUse::kMig) {
      for (const PlannedInstance& inst : gpu.instances) {
        mig_slices[gpu_type[g]].first += inst.profile->memory_slices;
        mig_slices[gpu_type[g]].second += inst.profile->compute_slices;
      }
    }
    if (gpu.use == GpuUse::kTimeslice || gpu.use == GpuUse::kMps) {
      shared_mib[{gpu_type[g], static_cast<int>(gpu.use)}] += gpu.shared_memory_mib;
    }
  }
  for (const auto& [t, slices] : mig_slices) {
    const GpuModel& m = *plan.gpu_types[t].model;
    plan.lower_bound +=
        std::max(CeilDiv(slices.first, m.memory_slices), CeilDiv(slices.second, m.compute_slices));
  }
  for (const auto& [key, mib] : shared_mib) {
    plan.lower_bound += CeilDiv(mib, *plan.gpu_types[key.first].memory_mib);
  }
  std::vector<std::string> idle;
  for (const GpuPlan& gpu : plan.gpus) {
    if (gpu.use == GpuUse::kIdle) idle.push_back(absl::StrCat(gpu.node, "/", gpu.index));
  }
  if (!idle.empty()) {
    plan.warnings.push_back(
        absl::StrCat(Plural(static_cast<int64_t>(idle.size()), "GPU stays", "GPUs stay"),
                     " idle: ", absl::StrJoin(idle, ", ")));
  }
  return plan;
}

}  // namespace topology
