// Test support, part of the kube-apiserver emulation (fake_apiserver.h): URL paths to resources.
// /api/v1 (nodes, pods, namespaces, events, configmaps), /apis/coordination.k8s.io/v1 (leases),
// /apis/events.k8s.io/v1 (events), /apis/policy/v1 (poddisruptionbudgets), /apis/apps/v1
// (replicasets, statefulsets, deployments), /apis/admissionregistration.k8s.io/v1 (validating-
// and mutatingwebhookconfigurations), /apis/resource.k8s.io/{v1,v1beta2,v1beta1}
// (resourceslices, resourceclaims, deviceclasses, resourceclaimtemplates), each as
// /RESOURCE[/NAME[/SUB]] for cluster-scoped objects and all-namespace lists, or
// /namespaces/NS/RESOURCE[/NAME[/SUB]].
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_ROUTE_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_ROUTE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "test/support/fake_apiserver.h"

namespace testing_support::apiserver {

inline constexpr char kResourceGroup[] = "resource.k8s.io";

struct Route {
  Resource resource = Resource::kPods;
  std::string ns;           // "" for cluster-scoped objects and all-namespace lists
  std::string name;         // "" for collections
  std::string sub;          // "binding", "eviction", "status"
  std::string api_version;  // "v1", "coordination.k8s.io/v1", "resource.k8s.io/v1beta1"
};

// False for a path the emulation does not serve (kube-apiserver's 404).
bool ParseRoute(absl::string_view path, Route* route);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_ROUTE_H_
