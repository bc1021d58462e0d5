// Consumable capacity (DRAConsumableCapacity): a device published with allowMultipleAllocations
// may be held by several claims at once, each result a share (it carries a shareID) that
// consumes part of the device's capacity (its consumedCapacity). A request's capacity.requests
// say how much of each capacity every device given to it must provide; the capacity's
// requestPolicy rounds that up or refuses it, and a capacity the request does not name is
// consumed at the policy's default, else whole. One more share fits while, for every capacity,
// what the shares consume plus its own stays within the value. That is how kube-scheduler's
// allocator decides (structured/ CmpRequestOverCapacity); amounts are compared in milli-units,
// which gives the allocator's integer answers for whole-unit amounts such as bytes. A device
// without the flag is checked the same way with nothing consumed before: the request's amounts
// must exist and fit its values. A multi-allocatable device is one fault domain and one memory
// heap: the model counts it as a shared mode (time-slicing) and its shares as shared replicas.
// Pure: no I/O.
//
//   DraRoom room = RoomFor(dra, index, request.capacity_requests);   // kFree, kShared, ...
//   std::map<DraDeviceId, std::vector<DraHolder>> who = HoldersByDevice(dra);
#ifndef GPU_TENANCY_TOPOLOGY_DRA_CAPACITY_H_
#define GPU_TENANCY_TOPOLOGY_DRA_CAPACITY_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/dra/model.h"

namespace topology {

// What one allocation for `requests` consumes of `device`, per capacity under its published
// name; nullopt when the device cannot serve the request whatever others hold: the request
// names a capacity the device does not publish, or an amount a requestPolicy refuses.
std::optional<DraCapacity> CapacityConsumedBy(const DraDevice& device, const DraCapacity& requests);

// True when `consumption` fits what `consumed` (the shares held) leaves of each capacity.
bool CapacityFits(const DraDevice& device, const DraCapacity& consumed,
                  const DraCapacity& consumption);

// Adds (sign +1) or removes (sign -1) `amounts` into `into`; an entry that reaches zero is
// dropped, so removing what was added restores an equal value.
void AddCapacity(DraCapacity& into, const DraCapacity& amounts, int sign);

// True when the result is a share of a multi-allocatable device (it has a share ID and the
// device allows multiple allocations); any other result holds its device whole.
bool IsShare(const DraDevice& device, const DraAllocationResult& result);

// Whether a device can be given to a request now.
enum class DraRoom {
  kFree,      // no claim holds it, and it can serve the request
  kShared,    // claims hold shares of it, and what they leave can serve the request
  kFull,      // claims hold shares of it that leave too little for the request
  kHeld,      // a claim holds it whole
  kTooSmall,  // it cannot serve the request even with nothing held (see CapacityConsumedBy)
};
// `results`: the allocated results that name the device; `shares`: those of them that are
// shares, null when none.
DraRoom RoomFor(const DraDevice& device, int results, const DraShares* shares,
                const DraCapacity& requests);
// The same for dra.devices()[index], from the state's counts.
DraRoom RoomFor(const DraState& dra, size_t index, const DraCapacity& requests);

// One allocated claim's result that names a device.
struct DraHolder {
  const DraClaim* claim = nullptr;
  const DraAllocationResult* result = nullptr;
};
// Every current device some allocated claim holds, with its holders by claim namespace and
// name: the shares of a multi-allocatable device side by side. Pointers into `dra`. Costs
// O(results), for views (the GPU map, explain) rather than decisions.
std::map<DraDeviceId, std::vector<DraHolder>> HoldersByDevice(const DraState& dra);

// The GPU memory in `amounts` (keyed as `device` publishes its capacity: "memory", or
// "<driver>/memory"), in MiB rounded up; 0 when it has none.
int64_t MemoryMib(const DraDevice& device, const DraCapacity& amounts);

// A capacity amount for people: "10Gi" for a whole number of GiB or MiB ("512Mi"), else the
// quantity's text.
std::string CapacityText(const Quantity& amount);
// "memory 10Gi, cores 2": each entry by name.
std::string CapacityText(const DraCapacity& amounts);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_CAPACITY_H_
