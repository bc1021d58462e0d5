// The objects gpu-tenancy writes to kube-apiserver, encoded in one place: the Binding of a bind,
// the Lease of leader election, the Events about a pod or a node, the ConfigMap of claim-quota
// records, and the reconfiguration gate's Eviction, smoke Pod and Node merge patches. Each is
// the JSON body of the POST, PUT or PATCH, apiVersion and kind first where it has them. Pure.
#ifndef GPU_TENANCY_KUBE_OBJECTS_H_
#define GPU_TENANCY_KUBE_OBJECTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "topology/facts.h"
#include "wire/extender_codec.h"

namespace kube {

// The Binding object for a pod: target node, our annotations, and the pod UID as a
// precondition so a re-created pod of the same name is never bound by mistake.
std::string BindingJson(const wire::BindingArgs& args, const topology::Labels& annotations);

// A coordination.k8s.io/v1 Lease as leader election writes it. A resource version, when set,
// makes the PUT conditional; empty times are left out.
struct LeaseObject {
  std::string namespace_name, name, resource_version;
  std::string holder;
  int64_t duration_seconds = 0;
  std::string acquire_time, renew_time;  // RFC 3339 with microseconds
  int64_t transitions = 0;
};
std::string LeaseJson(const LeaseObject& lease);

struct PodEvent {
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  bool warning = false;
  std::string reason;   // CamelCase, e.g. GpuTenancyBound
  std::string message;  // one line
  // The object the event is about, when it is not a Pod (a ResourceClaim, say).
  std::string kind = "Pod";
  std::string api_version = "v1";
  // The event's action, with eventTime; "" leaves both out.
  std::string action = "Binding";
};
// The core/v1 Event kube-apiserver accepts for `event`, stamped `now`.
std::string EventJson(const PodEvent& event, absl::Time now);

// A core/v1 Event about a Node, in namespace default (where kubectl describe node finds it).
struct NodeEvent {
  std::string node;
  std::string node_uid;
  bool warning = false;
  std::string reason;   // CamelCase
  std::string message;  // one line
};
// Stamped `now` in whole seconds; without eventTime, which kube-apiserver accepts only with
// an action.
std::string EventJson(const NodeEvent& event, absl::Time now);

// A ConfigMap labelled as gpu-tenancy's; a resource version, when set, is the precondition of
// the PUT (409 if anyone wrote since it was read).
std::string ConfigMapJson(const std::string& namespace_name, const std::string& name,
                          const std::string& resource_version,
                          const std::map<std::string, std::string>& data);

// The policy/v1 Eviction of a pod, POSTed to its eviction subresource.
std::string EvictionJson(const std::string& pod_namespace, const std::string& pod_name);

// The smoke pod: pinned to `node` (spec.nodeName, so no scheduler is involved), tolerating
// every taint, one container of `image` asking for one `resource`, never restarted; named by
// the API server after the prefix gpu-tenancy-smoke-.
std::string SmokePodJson(const std::string& node, const std::string& image,
                         const std::string& resource);

// JSON merge patches (application/merge-patch+json). Labels and annotations: a value of nullopt
// removes the key. Unschedulable: false writes null, which removes the field as `kubectl
// uncordon` does.
using LabelChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;
std::string LabelsPatchJson(const LabelChanges& labels);
std::string AnnotationsPatchJson(const LabelChanges& annotations);
std::string UnschedulablePatchJson(bool unschedulable);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_OBJECTS_H_
