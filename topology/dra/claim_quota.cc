#include "topology/dra/claim_quota.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "topology/dra/capacity.h"
#include "topology/dra/selector.h"

namespace topology {
namespace {

// What one device adds to a tenant's usage when a claim holds it whole.
QuotaUsage DeviceUsage(const DraDevice& d) {
  QuotaUsage u;
  if (d.type == "gpu") {
    u.gpus = 1;
  } else if (d.type == "mig" && !d.profile.empty()) {
    u.mig_instances[d.profile] = 1;
    u.mig_compute_slices = MigComputeSlices(d.profile);
  } else {
    return u;  // not a GPU: the quota has no item for it
  }
  u.gpu_memory_mib = d.memory_mib.value_or(0);
  return u;
}

// What one share of a multi-allocatable GPU adds: a shared replica and the memory it consumes.
QuotaUsage ShareUsage(const DraDevice& d, const DraCapacity& consumed) {
  QuotaUsage u;
  if (d.type != "gpu" && d.type != "mig") return u;
  u.shared_replicas = 1;
  u.gpu_memory_mib = MemoryMib(d, consumed);
  return u;
}

// What giving `d` to `request` would add, or nullopt when the allocator could not give it
// (its capacity cannot serve the request's capacity asks, topology/dra/capacity.h).
std::optional<QuotaUsage> RequestUsage(const DraDevice& d, const DraRequest& request) {
  const std::optional<DraCapacity> consumption = CapacityConsumedBy(d, request.capacity_requests);
  if (!consumption || !CapacityFits(d, {}, *consumption)) return std::nullopt;
  return d.allow_multiple_allocations ? ShareUsage(d, *consumption) : DeviceUsage(d);
}

// Per item, the larger of `a` and `b`.
void MaxInto(QuotaUsage& a, const QuotaUsage& b) {
  a.gpus = std::max(a.gpus, b.gpus);
  for (const auto& [profile, n] : b.mig_instances) {
    int64_t& mine = a.mig_instances[profile];
    mine = std::max(mine, n);
  }
  a.mig_compute_slices = std::max(a.mig_compute_slices, b.mig_compute_slices);
  a.shared_replicas = std::max(a.shared_replicas, b.shared_replicas);
  a.gpu_memory_mib = std::max(a.gpu_memory_mib, b.gpu_memory_mib);
}

QuotaUsage Times(QuotaUsage u, int64_t n) {
  if (n <= 0) return {};  // no zero-count profiles: usages compare equal when they count alike
  u.gpus *= n;
  for (auto& [profile, count] : u.mig_instances) count *= n;
  u.mig_compute_slices *= n;
  u.shared_replicas *= n;
  u.gpu_memory_mib *= n;
  return u;
}

// One request's bound, with a worst-case note when it is not what the selectors allow.
QuotaUsage CountRequest(const DraRequest& request, const DraState& dra,
                        std::vector<std::string>& worst_case) {
  const DraDeviceClass* device_class = nullptr;
  for (const DraDeviceClass& c : dra.classes()) {
    if (c.name == request.device_class) device_class = &c;
  }
  std::vector<std::string> expressions;
  if (device_class) expressions = device_class->selectors;
  expressions.insert(expressions.end(), request.selectors.begin(), request.selectors.end());
  const std::vector<CompiledSelector> selectors = CompileSelectors(expressions);

  QuotaUsage most_per_device;                  // ExactCount
  std::map<std::string, QuotaUsage> per_node;  // allocationMode All
  std::string undecided;
  for (const DraDevice& d : dra.devices()) {
    if (device_class) {
      SelectorResult r = DeviceMatchesCompiled(d, selectors);
      // An error makes the allocator give up on the device; only "not evaluated" is unknown.
      if (r.outcome == SelectorOutcome::kNoMatch || r.outcome == SelectorOutcome::kError) {
        continue;
      }
      if (r.outcome == SelectorOutcome::kNotEvaluated && undecided.empty()) undecided = r.detail;
    }
    const std::optional<QuotaUsage> u = RequestUsage(d, request);
    if (!u) continue;
    MaxInto(most_per_device, *u);
    per_node[d.node].Add(*u);
  }
  const std::string prefix = absl::StrCat("request ", request.name);
  if (!device_class) {
    worst_case.push_back(absl::StrCat(prefix, ": device class ", request.device_class,
                                      " not found, every device counted as matching"));
  } else if (!undecided.empty()) {
    worst_case.push_back(absl::StrCat(prefix, ": selector not evaluated (", undecided,
                                      "), its undecided devices counted as matching"));
  }
  if (!request.all) return Times(std::move(most_per_device), request.count);
  worst_case.push_back(
      absl::StrCat(prefix,
                   ": allocationMode All, counted as every matching device of the node "
                   "with the most"));
  QuotaUsage most_on_a_node;
  for (const auto& [node, u] : per_node) MaxInto(most_on_a_node, u);
  return most_on_a_node;
}

}  // namespace

ClaimQuotaCount CountClaimQuota(const DraClaim& claim, const DraState& dra) {
  ClaimQuotaCount out;
  // Alternatives of one firstAvailable request are adjacent and share the name before '/'.
  QuotaUsage alternatives;
  std::string group;
  auto flush = [&] {
    out.usage.Add(alternatives);
    alternatives = QuotaUsage{};
    group.clear();
  };
  for (const DraRequest& r : claim.requests) {
    const std::string main_name = r.name.substr(0, r.name.find('/'));
    if (!r.alternative || main_name != group) flush();
    QuotaUsage u = CountRequest(r, dra, out.worst_case);
    if (r.alternative) {
      group = main_name;
      MaxInto(alternatives, u);
    } else {
      out.usage.Add(u);
    }
  }
  flush();
  return out;
}

int64_t AllocatedClaimMemoryMib(const DraClaim& claim, const DraState& dra) {
  int64_t mib = 0;
  for (const DraAllocationResult& r : claim.results) {
    const DraDevice* d = dra.Find(r);
    if (!d) continue;
    mib += (IsShare(*d, r) ? ShareUsage(*d, r.consumed_capacity) : DeviceUsage(*d)).gpu_memory_mib;
  }
  return mib;
}

}  // namespace topology
