// Test support, part of the kube-apiserver emulation: URL paths to resources (see
// apiserver_route.h).
#include "test/support/apiserver_route.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "test/support/apiserver_objects.h"

namespace testing_support::apiserver {

bool ParseRoute(absl::string_view path, Route* route) {
  std::vector<std::string> segs;
  for (absl::string_view s : absl::StrSplit(path, '/', absl::SkipEmpty())) segs.emplace_back(s);
  std::vector<Resource> allowed;
  size_t base;
  if (segs.size() >= 2 && segs[0] == "api" && segs[1] == "v1") {
    allowed = {Resource::kNodes, Resource::kPods, Resource::kNamespaces, Resource::kEvents,
               Resource::kConfigMaps};
    route->api_version = "v1";
    base = 2;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "coordination.k8s.io" &&
             segs[2] == "v1") {
    allowed = {Resource::kLeases};
    route->api_version = "coordination.k8s.io/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "events.k8s.io" &&
             segs[2] == "v1") {
    allowed = {Resource::kEvents};
    route->api_version = "events.k8s.io/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "policy" && segs[2] == "v1") {
    allowed = {Resource::kPodDisruptionBudgets};
    route->api_version = "policy/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "apps" && segs[2] == "v1") {
    allowed = {Resource::kReplicaSets, Resource::kStatefulSets, Resource::kDeployments};
    route->api_version = "apps/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "admissionregistration.k8s.io" &&
             segs[2] == "v1") {
    allowed = {Resource::kValidatingWebhookConfigurations,
               Resource::kMutatingWebhookConfigurations};
    route->api_version = "admissionregistration.k8s.io/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == kResourceGroup &&
             (segs[2] == "v1" || segs[2] == "v1beta2" || segs[2] == "v1beta1")) {
    // Whether the server offers this version is the server's to say (its options).
    allowed = {Resource::kResourceSlices, Resource::kResourceClaims, Resource::kDeviceClasses,
               Resource::kResourceClaimTemplates};
    route->api_version = absl::StrCat(kResourceGroup, "/", segs[2]);
    base = 3;
  } else {
    return false;
  }
  std::vector<std::string> rest(segs.begin() + base, segs.end());
  auto lookup = [&allowed](const std::string& plural, Resource* out) {
    for (Resource r : allowed) {
      if (plural == Info(r).plural) {
        *out = r;
        return true;
      }
    }
    return false;
  };
  Resource r;
  // /namespaces/NS/RESOURCE[/NAME[/SUB]]
  if (rest.size() >= 3 && rest[0] == "namespaces" && lookup(rest[2], &r) && Info(r).namespaced) {
    if (rest.size() > 5) return false;
    route->resource = r;
    route->ns = rest[1];
    if (rest.size() >= 4) route->name = rest[3];
    if (rest.size() == 5) route->sub = rest[4];
    return true;
  }
  // /RESOURCE[/NAME[/SUB]]: cluster-scoped objects, or all-namespace lists of namespaced ones.
  if (rest.empty() || rest.size() > 3 || !lookup(rest[0], &r)) return false;
  if (Info(r).namespaced && rest.size() > 1) return false;
  route->resource = r;
  if (rest.size() >= 2) route->name = rest[1];
  if (rest.size() == 3) route->sub = rest[2];
  return true;
}

}  // namespace testing_support::apiserver
