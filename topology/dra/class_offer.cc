#include "topology/dra/class_offer.h"

#include <algorithm>

namespace topology {

SharingMode DraDeviceMode(const DraDevice& device) {
  const bool mig = device.type == "mig";
  if (device.allow_multiple_allocations) {
    return mig ? SharingMode::kMigShared : SharingMode::kTimeslice;
  }
  return mig ? SharingMode::kMig : SharingMode::kExclusive;
}

absl::string_view DraModeWords(SharingMode mode) {
  switch (mode) {
    case SharingMode::kExclusive:
      return "a whole device";
    case SharingMode::kMig:
      return "a MIG device";
    case SharingMode::kMigShared:
      return "a MIG device other claims may hold at the same time";
    case SharingMode::kMps:
    case SharingMode::kTimeslice:
      return "a device other claims may hold at the same time";
  }
  return "a device";
}

DraClassOffer OfferOfClass(const DraState& dra, absl::string_view class_name) {
  DraClassOffer offer;
  if (!dra.device_set) return offer;
  const std::vector<DraDeviceClass>& classes = dra.classes();
  auto found = std::find_if(classes.begin(), classes.end(),
                            [&](const DraDeviceClass& c) { return c.name == class_name; });
  if (found == classes.end()) return offer;
  offer.class_exists = true;
  const uint32_t class_index = static_cast<uint32_t>(found - classes.begin());
  const std::vector<DraDevice>& devices = dra.devices();
  const std::vector<std::vector<uint32_t>>& counted_for = dra.device_set->counted_for;
  for (size_t i = 0; i < devices.size() && i < counted_for.size(); ++i) {
    const std::vector<uint32_t>& classes_of_device = counted_for[i];
    if (std::find(classes_of_device.begin(), classes_of_device.end(), class_index) ==
        classes_of_device.end()) {
      continue;
    }
    const DraDevice& device = devices[i];
    ++offer.devices;
    const SharingMode mode = DraDeviceMode(device);
    if (!offer.modes.Has(mode)) {
      offer.modes.Add(mode);
      offer.examples.emplace_back(mode, device.Id().ToString());
    }
    if (device.type == "mig" && !device.profile.empty())
      offer.mig_profiles.push_back(device.profile);
  }
  std::sort(offer.mig_profiles.begin(), offer.mig_profiles.end());
  offer.mig_profiles.erase(std::unique(offer.mig_profiles.begin(), offer.mig_profiles.end()),
                           offer.mig_profiles.end());
  return offer;
}

absl::string_view WellKnownClassDeviceType(absl::string_view class_name) {
  if (class_name == "gpu.nvidia.com") return "gpu";
  if (class_name == "mig.nvidia.com") return "mig";
  if (class_name == "vfio.gpu.nvidia.com") return "vfio";
  return "";
}

}  // namespace topology
