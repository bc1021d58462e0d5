// What a DeviceClass can hand out, read from the devices the cluster publishes now: the sharing
// modes and MIG profiles of every current device whose class selectors all hold. Admission asks
// it where no selector of the tenant's can narrow the choice: a pod's DRA extended resource
// (`deviceclass.resource.kubernetes.io/<class>`, or a class's extendedResourceName) and the claim
// kube-scheduler makes for it. Pure.
//
//   DraClassOffer offer = OfferOfClass(snapshot.dra(), "mig.nvidia.com");
//   if (offer.devices > 0 && !tier.modes.Has(...)) ...
#ifndef GPU_TENANCY_TOPOLOGY_DRA_CLASS_OFFER_H_
#define GPU_TENANCY_TOPOLOGY_DRA_CLASS_OFFER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/dra/model.h"
#include "topology/policy.h"

namespace topology {

// The isolation one device gives: a MIG device is mig, any other device exclusive; a device
// several claims may hold at once (allow_multiple_allocations) shares one fault domain and memory
// heap, so it is mig-shared (MIG) or timeslice (anything else).
SharingMode DraDeviceMode(const DraDevice& device);
// What a device of that mode is, for messages: "a whole device", "a MIG device", "a device other
// claims may hold at the same time", "a MIG device other claims may hold at the same time".
absl::string_view DraModeWords(SharingMode mode);

struct DraClassOffer {
  bool class_exists = false;
  int64_t devices = 0;                    // current devices the class's selectors select
  ModeSet modes;                          // DraDeviceMode of each
  std::vector<std::string> mig_profiles;  // of its MIG devices, sorted, each once
  // One device of each mode, for messages: "gpu.nvidia.com/node-a/gpu-0".
  std::vector<std::pair<SharingMode, std::string>> examples;
};

// O(current devices). A class that does not exist offers nothing; neither does one whose
// selectors the evaluator cannot decide for a device (that device is not counted).
DraClassOffer OfferOfClass(const DraState& dra, absl::string_view class_name);

// The device type a class of the NVIDIA driver's own names hands out ("gpu" for gpu.nvidia.com,
// "mig" for mig.nvidia.com, "vfio" for vfio.gpu.nvidia.com), for a class that selects no
// current device; "" for any other class.
absl::string_view WellKnownClassDeviceType(absl::string_view class_name);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_CLASS_OFFER_H_
