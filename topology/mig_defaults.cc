#include "topology/mig_defaults.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topology {
namespace {

constexpr absl::string_view kAllPrefix = "all-";

MigPartedLayout EveryGpu(absl::string_view name, bool mig_enabled,
                         std::vector<std::pair<std::string, int>> mig_devices) {
  MigPartedEntry entry;
  entry.mig_enabled = mig_enabled;
  entry.mig_devices = std::move(mig_devices);
  return MigPartedLayout{std::string(name), {std::move(entry)}};
}

}  // namespace

absl::StatusOr<MigPartedLayout> DefaultMigLayout(absl::string_view name, const GpuModel& model) {
  if (name == kAllDisabled) return EveryGpu(name, false, {});
  if (name == kAllEnabled) return EveryGpu(name, true, {});
  if (name == kAllBalanced) {
    if (model.all_balanced.empty()) {
      return absl::NotFoundError(absl::StrCat("NVIDIA's default mig-parted config has no ",
                                              kAllBalanced, " cut for ", model.model));
    }
    return EveryGpu(name, true, model.all_balanced);
  }
  if (!absl::StartsWith(name, kAllPrefix)) {
    return absl::NotFoundError(
        absl::StrCat(name, " is not one of NVIDIA's default mig-parted configs"));
  }
  // Resource spelling only: "all-1g.10gb+me" is not a name the default config uses.
  absl::string_view suffix = name.substr(kAllPrefix.size());
  for (const MigProfile& p : model.profiles) {
    if (p.ResourceSuffix() == suffix) return EveryGpu(name, true, {{p.name, p.max_count}});
  }
  return absl::NotFoundError(absl::StrCat(name, " is not one of NVIDIA's default configs for ",
                                          model.model, " (it has no MIG profile ", suffix, ")"));
}

std::vector<std::string> DefaultMigLayoutNames(const GpuModel& model) {
  std::vector<std::string> out = {std::string(kAllDisabled), std::string(kAllEnabled)};
  if (!model.all_balanced.empty()) out.emplace_back(kAllBalanced);
  for (const MigProfile& p : model.profiles)
    out.push_back(absl::StrCat(kAllPrefix, p.ResourceSuffix()));
  return out;
}

}  // namespace topology
