#include "topology/mig_drift.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "topology/mig_defaults.h"
#include "topology/wellknown.h"

namespace topology {
namespace {

absl::string_view LabelOf(const Labels& labels, absl::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? absl::string_view() : absl::string_view(it->second);
}

MigDrift Answer(MigDrift d, MigDriftVerdict verdict, std::string why) {
  d.verdict = verdict;
  d.why = std::move(why);
  return d;
}

// What the node was cut into, as the device plugin registered it: capacity keeps devices it found
// unhealthy. Time-sliced replicas fold back onto the instances behind them; GFD labels each
// resource's replicas as <resource>.replicas (nvidia.com/gpu.replicas for nvidia.com/gpu).
ObservedOffer Advertised(const NodeFacts& node) {
  const ResourceList& source = node.gpu_capacity.empty() ? node.allocatable : node.gpu_capacity;
  ObservedOffer out;
  for (const auto& [name, quantity] : source) {
    if (!absl::StartsWith(name, kNvidiaResourcePrefix)) continue;
    absl::string_view base = name;
    absl::ConsumeSuffix(&base, kSharedSuffix);
    int64_t replicas = 1;
    if (!absl::SimpleAtoi(LabelOf(node.labels, absl::StrCat(base, ".replicas")), &replicas) ||
        replicas < 1) {
      replicas = 1;
    }
    out.allocatable[std::string(base)] += std::max<int64_t>(0, quantity.Value()) / replicas;
  }
  absl::string_view product = LabelOf(node.labels, kProductLabel);
  if (!product.empty()) out.labels.emplace(kProductLabel, product);
  return out;
}

// Under the single strategy the GPU count is not labelled: as many GPUs as the layout names
// (one when it cuts `devices: all`), which is enough to predict the product label.
int GpusNamed(const MigPartedLayout& layout) {
  int count = 1;
  for (const MigPartedEntry& e : layout.entries) {
    if (e.all_devices) continue;
    for (int i : e.devices) count = std::max(count, i + 1);
  }
  return count;
}

}  // namespace

MigDrift CheckMigDrift(const NodeFacts& node, const Catalog& catalog) {
  const MigPartedFile* mig_parted = catalog.mig_parted();
  MigDrift d;
  const Labels& labels = node.labels;
  const absl::string_view strategy = LabelOf(labels, kMigStrategyLabel);
  if (strategy != "mixed" && strategy != "single") {
    return Answer(
        std::move(d), MigDriftVerdict::kNotApplicable,
        absl::StrCat("not a MIG node (", kMigStrategyLabel, " is neither mixed nor single)"));
  }
  d.config = std::string(LabelOf(labels, kMigConfigLabel));
  if (d.config.empty()) {
    return Answer(std::move(d), MigDriftVerdict::kNotApplicable,
                  absl::StrCat("no ", kMigConfigLabel, " label"));
  }
  const absl::string_view state = LabelOf(labels, kMigConfigStateLabel);
  if (state != "success") {
    return Answer(std::move(d), MigDriftVerdict::kNotApplicable,
                  state.empty()
                      ? absl::StrCat("no ", kMigConfigStateLabel, " label")
                      : absl::StrCat(kMigConfigStateLabel, "=", state, ": being reconfigured"));
  }
  for (const auto& [key, value] : labels) {
    if (absl::StartsWith(key, kDeployLabelPrefix) && value == kPausedForMigChange) {
      return Answer(std::move(d), MigDriftVerdict::kNotApplicable,
                    absl::StrCat(key, "=", value, ": being reconfigured"));
    }
  }
  const std::string where = absl::StrCat(kMigConfigLabel, "=", d.config);
  const absl::string_view product = LabelOf(labels, kProductLabel);
  const GpuModel* model = product.empty() ? nullptr : catalog.MatchProduct(product);
  if (model == nullptr) {
    return Answer(
        std::move(d), MigDriftVerdict::kNotCompared,
        product.empty()
            ? absl::StrCat("no ", kProductLabel, " label, so the GPU model is unknown")
            : absl::StrCat("GPU model of ", kProductLabel, "=", product, " is not in the catalog"));
  }

  const MigPartedLayout* layout = mig_parted != nullptr ? mig_parted->Find(d.config) : nullptr;
  absl::StatusOr<MigPartedLayout> by_default = absl::NotFoundError("");
  if (layout != nullptr) {
    d.source = MigLayoutSource::kFile;
  } else {
    by_default = DefaultMigLayout(d.config, *model);
    if (!by_default.ok()) {
      return Answer(std::move(d), MigDriftVerdict::kNotCompared,
                    absl::StrCat(where, ": ",
                                 mig_parted != nullptr ? "not in the mig-parted config, and "
                                                       : "no mig-parted config given, and ",
                                 by_default.status().message()));
    }
    layout = &*by_default;
    d.source = MigLayoutSource::kDefaults;
  }

  const MigStrategy mig_strategy =
      strategy == "single" ? MigStrategy::kSingle : MigStrategy::kMixed;
  int gpu_count = 0;
  if (mig_strategy == MigStrategy::kSingle) {
    gpu_count = GpusNamed(*layout);
  } else if (!absl::SimpleAtoi(LabelOf(labels, kGpuCountLabel), &gpu_count) || gpu_count <= 0) {
    return Answer(std::move(d), MigDriftVerdict::kNotCompared,
                  absl::StrCat(kGpuCountLabel, " is missing or not a positive number, so the GPUs ",
                               where, " cuts are unknown"));
  }
  absl::StatusOr<NodeGeometry> geometry = ResolveGeometry(*layout, *model, gpu_count);
  absl::StatusOr<ExpectedOffer> expected =
      geometry.ok() ? PredictOffer(*geometry, mig_strategy, SplitProduct(product).parent)
                    : absl::StatusOr<ExpectedOffer>(geometry.status());
  if (!expected.ok()) {
    return Answer(std::move(d), MigDriftVerdict::kConfigInvalid,
                  absl::StrCat(where, ": ", expected.status().message()));
  }
  // Single: nvidia.com/gpu counts MIG devices of GPUs we cannot count; the profile still shows.
  if (mig_strategy == MigStrategy::kSingle) expected->allocatable.clear();

  d.differences = CompareOffer(*expected, Advertised(node));
  if (d.differences.empty()) return Answer(std::move(d), MigDriftVerdict::kMatches, "");
  std::string why = absl::StrCat("MIG geometry differs from ", where,
                                 " (state success): ", "mig-manager is about to re-cut it; ",
                                 absl::StrJoin(d.differences, "; "));
  return Answer(std::move(d), MigDriftVerdict::kDrifted, std::move(why));
}

}  // namespace topology
