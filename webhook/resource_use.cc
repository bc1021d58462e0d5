// How the webhook sees one pod resource name (ClassifyPodResource and its helpers), and which
// resources a container asks for.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/supply.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"

namespace webhook {

ResourceUse ClassifyPodResource(absl::string_view resource, const topology::Policy& policy) {
  if (policy.IsMemoryResource(resource)) return ResourceUse::kMemory;
  if (resource == topology::kGpuResource) return ResourceUse::kWholeGpu;
  if (absl::StartsWith(resource, topology::kMigResourcePrefix)) {
    return absl::EndsWith(resource, topology::kSharedSuffix) ? ResourceUse::kMigShared
                                                             : ResourceUse::kMig;
  }
  if (resource == absl::StrCat(topology::kGpuResource, topology::kSharedSuffix) ||
      policy.IsConfiguredShared(resource)) {
    return ResourceUse::kShared;
  }
  if (policy.admission.IsOtherResource(resource)) return ResourceUse::kNotGpu;
  if (absl::StartsWith(resource, topology::kNvidiaResourcePrefix) &&
      absl::StrContains(absl::AsciiStrToLower(resource), "mps")) {
    return ResourceUse::kMps;
  }
  for (absl::string_view domain : topology::kGpuVendorDomains) {
    if (absl::StartsWith(resource, domain)) return ResourceUse::kOtherGpu;
  }
  return ResourceUse::kNotGpu;
}

bool IsSharedReplica(ResourceUse use) {
  return use == ResourceUse::kMigShared || use == ResourceUse::kShared || use == ResourceUse::kMps;
}

std::string MigProfileOf(absl::string_view resource) {
  if (!absl::StartsWith(resource, topology::kMigResourcePrefix)) return "";
  absl::string_view profile = resource.substr(topology::kMigResourcePrefix.size());
  if (absl::EndsWith(profile, topology::kSharedSuffix)) {
    profile.remove_suffix(topology::kSharedSuffix.size());
  }
  return std::string(profile);
}

namespace pod_rules_internal {

std::vector<std::pair<std::string, topology::Quantity>> ContainerResources(const ContainerView& c) {
  topology::ResourceList merged = c.requests;
  for (const auto& [name, q] : c.limits) {
    auto [it, inserted] = merged.emplace(name, q);
    if (!inserted && q > it->second) it->second = q;
  }
  std::vector<std::pair<std::string, topology::Quantity>> out;
  for (const auto& [name, q] : merged) {
    if (!q.IsZero()) out.emplace_back(name, q);
  }
  return out;
}

}  // namespace pod_rules_internal
}  // namespace webhook
