// The objects gpu-tenancy writes to kube-apiserver, encoded in one place: the Binding of a bind,
// the Lease of leader election, the Event about a pod, and the ConfigMap of claim-quota
// records. Each is the JSON body of the POST or PUT, apiVersion and kind first. Pure.
#ifndef GPU_TENANCY_KUBE_OBJECTS_H_
#define GPU_TENANCY_KUBE_OBJECTS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "common/extender_codec.h"
#include "topology/facts.h"

namespace kube {

// The Binding object for a pod: target node, our annotations, and the pod UID as a
// precondition so a re-created pod of the same name is never bound by mistake.
std::string BindingJson(const common::BindingArgs& args, const topology::Labels& annotations);

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
};
// The core/v1 Event kube-apiserver accepts for `event`, stamped `now`.
std::string EventJson(const PodEvent& event, absl::Time now);

// A ConfigMap labelled as gpu-tenancy's; a resource version, when set, is the precondition of
// the PUT (409 if anyone wrote since it was read).
std::string ConfigMapJson(const std::string& namespace_name, const std::string& name,
                          const std::string& resource_version,
                          const std::map<std::string, std::string>& data);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_OBJECTS_H_
