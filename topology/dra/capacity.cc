#include "topology/dra/capacity.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace topology {
namespace {

// The smallest amount the policy allows that is at least `requested`; the allocator's
// calculateConsumedCapacity. A request above every valid value is kept as it is, for
// Refused to reject.
Quantity RoundUp(const Quantity& requested, const DraCapacityPolicy& policy) {
  if (policy.min) {
    if (requested < *policy.min) return *policy.min;
    if (!policy.step) return requested;
    const int64_t step = policy.step->milli();
    const int64_t above = requested.milli() - policy.min->milli();
    const int64_t steps = above / step + (above % step != 0 ? 1 : 0);
    return Quantity::FromMilli(policy.min->milli() + steps * step);
  }
  for (const Quantity& valid : policy.valid_values) {
    if (requested <= valid) return valid;
  }
  return requested;
}

// True when the policy refuses an amount to be consumed; the default is always allowed.
bool Refused(const Quantity& amount, const DraCapacityPolicy& policy) {
  if (policy.default_amount && amount == *policy.default_amount) return false;
  if (policy.min) {
    if (policy.max && amount > *policy.max) return true;
    return policy.step && (amount.milli() - policy.min->milli()) % policy.step->milli() != 0;
  }
  if (!policy.valid_values.empty()) {
    return std::find(policy.valid_values.begin(), policy.valid_values.end(), amount) ==
           policy.valid_values.end();
  }
  return false;
}

const Quantity* Find(const DraCapacity& amounts, const std::string& name) {
  auto it = amounts.find(name);
  return it == amounts.end() ? nullptr : &it->second;
}

}  // namespace

std::optional<DraCapacity> CapacityConsumedBy(const DraDevice& device,
                                              const DraCapacity& requests) {
  for (const auto& request : requests) {
    const std::string& name = request.first;
    const bool published =
        std::any_of(device.published_capacity.begin(), device.published_capacity.end(),
                    [&](const DraPublishedCapacity& c) { return c.name == name; });
    if (!published) return std::nullopt;
  }
  DraCapacity out;
  for (const DraPublishedCapacity& c : device.published_capacity) {
    const Quantity* requested = Find(requests, c.name);
    Quantity consumed;
    if (!requested) {
      consumed = c.policy && c.policy->default_amount ? *c.policy->default_amount : c.value;
    } else {
      consumed = c.policy ? RoundUp(*requested, *c.policy) : *requested;
    }
    if (c.policy && Refused(consumed, *c.policy)) return std::nullopt;
    out.emplace(c.name, consumed);
  }
  return out;
}

bool CapacityFits(const DraDevice& device, const DraCapacity& consumed,
                  const DraCapacity& consumption) {
  for (const DraPublishedCapacity& c : device.published_capacity) {
    const Quantity* before = Find(consumed, c.name);
    const Quantity* now = Find(consumption, c.name);
    const int64_t total = (before ? before->milli() : 0) + (now ? now->milli() : 0);
    if (total > c.value.milli()) return false;
  }
  return true;
}

void AddCapacity(DraCapacity& into, const DraCapacity& amounts, int sign) {
  for (const auto& [name, amount] : amounts) {
    auto it = into.try_emplace(name).first;
    it->second = Quantity::FromMilli(it->second.milli() + sign * amount.milli());
    if (it->second.IsZero()) into.erase(it);
  }
}

bool IsShare(const DraDevice& device, const DraAllocationResult& result) {
  return device.allow_multiple_allocations && !result.share_id.empty();
}

DraRoom RoomFor(const DraDevice& device, int results, const DraShares* shares,
                const DraCapacity& requests) {
  const int whole = results - (shares ? shares->count : 0);
  if (whole > 0) return DraRoom::kHeld;
  const std::optional<DraCapacity> consumption = CapacityConsumedBy(device, requests);
  if (!consumption || !CapacityFits(device, {}, *consumption)) return DraRoom::kTooSmall;
  if (!shares || shares->count == 0) return DraRoom::kFree;
  return CapacityFits(device, shares->consumed, *consumption) ? DraRoom::kShared : DraRoom::kFull;
}

DraRoom RoomFor(const DraState& dra, size_t index, const DraCapacity& requests) {
  return RoomFor(dra.devices()[index], dra.HeldBy(index), dra.SharesOf(index), requests);
}

std::map<DraDeviceId, std::vector<DraHolder>> HoldersByDevice(const DraState& dra) {
  std::map<DraDeviceId, std::vector<DraHolder>> out;
  for (const DraClaim* claim : dra.claims.Sorted()) {
    if (!claim->allocated) continue;
    for (const DraAllocationResult& r : claim->results) {
      if (dra.Find(r) != nullptr) out[r.Id()].push_back({claim, &r});
    }
  }
  return out;
}

int64_t MemoryMib(const DraDevice& device, const DraCapacity& amounts) {
  const Quantity* memory = Find(amounts, "memory");
  if (!memory) memory = Find(amounts, absl::StrCat(device.driver, "/memory"));
  return memory ? memory->ValueMiB() : 0;
}

std::string CapacityText(const Quantity& amount) {
  constexpr int64_t kMilliPerMi = int64_t{1000} << 20;
  constexpr int64_t kMilliPerGi = kMilliPerMi << 10;
  if (!amount.IsZero() && amount.milli() % kMilliPerGi == 0) {
    return absl::StrCat(amount.milli() / kMilliPerGi, "Gi");
  }
  if (!amount.IsZero() && amount.milli() % kMilliPerMi == 0) {
    return absl::StrCat(amount.milli() / kMilliPerMi, "Mi");
  }
  return amount.ToString();
}

std::string CapacityText(const DraCapacity& amounts) {
  std::string out;
  for (const auto& [name, amount] : amounts) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", name, " ", CapacityText(amount));
  }
  return out;
}

}  // namespace topology
