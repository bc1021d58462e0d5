#include "topology/demand.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topology {
namespace {

ResourceList ContainerRequests(const ContainerFacts& c) {
  ResourceList out = c.requests;
  for (const auto& [name, q] : c.limits) out.emplace(name, q);  // keeps explicit requests
  return out;
}

void AddInto(ResourceList& into, const ResourceList& add) {
  for (const auto& [name, q] : add) {
    auto [it, inserted] = into.emplace(name, q);
    if (!inserted) it->second = Quantity::FromMilli(it->second.milli() + q.milli());
  }
}

void MaxInto(ResourceList& into, const ResourceList& other) {
  for (const auto& [name, q] : other) {
    auto [it, inserted] = into.emplace(name, q);
    if (!inserted && q > it->second) it->second = q;
  }
}

}  // namespace

ResourceList EffectiveRequests(const PodFacts& pod) {
  ResourceList regular;
  for (const ContainerFacts& c : pod.containers) AddInto(regular, ContainerRequests(c));
  // Sidecars started so far run beside every later init container and beside the main ones.
  ResourceList sidecars;
  ResourceList init_peak;
  for (const ContainerFacts& c : pod.init_containers) {
    ResourceList req = ContainerRequests(c);
    if (c.restartable) {
      AddInto(regular, req);
      AddInto(sidecars, req);
      MaxInto(init_peak, sidecars);
    } else {
      ResourceList during = sidecars;
      AddInto(during, req);
      MaxInto(init_peak, during);
    }
  }
  MaxInto(regular, init_peak);
  AddInto(regular, pod.overhead);
  return regular;
}

bool IsGpuDeviceResource(absl::string_view resource, const Policy& policy) {
  if (policy.IsMemoryResource(resource)) return false;
  return absl::StartsWith(resource, kNvidiaResourcePrefix) || policy.IsConfiguredShared(resource);
}

absl::StatusOr<GpuDemand> ComputeDemand(const PodFacts& pod, const Policy& policy) {
  GpuDemand demand;
  for (const auto& [name, q] : EffectiveRequests(pod)) {
    const bool memory = policy.IsMemoryResource(name);
    if (!memory && !IsGpuDeviceResource(name, policy)) continue;
    if (q.IsNegative() || q.milli() % 1000 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("pod ", pod.Key(), ": ", name,
                                                     " must be a whole, non-negative number, got ",
                                                     q.ToString()));
    }
    if (q.IsZero()) continue;
    if (memory) {
      demand.memory_mib += q.Value();  // memory resources count MiB
    } else {
      demand.devices.Set(name, q.Value());
    }
  }
  auto annotation = pod.annotations.find(policy.memory_annotation);
  if (annotation != pod.annotations.end()) {
    absl::StatusOr<Quantity> q = Quantity::Parse(annotation->second);
    if (!q.ok() || q->IsNegative()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pod ", pod.Key(), ": annotation ", policy.memory_annotation,
          " must be a non-negative quantity such as 20Gi, got \"", annotation->second, "\""));
    }
    // The annotation is a pod total in bytes; a resource request in MiB may say the same thing.
    demand.memory_mib = std::max(demand.memory_mib, q->ValueMiB());
  }
  return demand;
}

}  // namespace topology
