// The device annotations' trust rule (rule id "device-annotation"). The node agent (agent/)
// writes what the kubelet's PodResources API says: on a pod, which devices each container got
// (topology::kPodDevicesAnnotation); on its Node, the node's GPUs
// (topology::kNodeDevicesAnnotation). serve trusts both for the inventory and per-GPU
// placement, so nobody else may write them: a CREATE carrying one, or an UPDATE adding,
// changing or removing one, is allowed only when
//   - request.userInfo.username is the agent's ServiceAccount (policy nodeAgent.serviceAccount,
//     as system:serviceaccount:<namespace>:<name>), and
//   - userInfo.extra["authentication.kubernetes.io/node-name"] holds exactly one value, equal to
//     the pod's spec.nodeName or the Node's metadata.name.
// kube-apiserver itself puts that extra on requests made with a pod-bound ServiceAccount token
// (Kubernetes 1.30 and later): it names the node of the pod the token was issued for, from the
// token's signed claims, so a caller cannot choose it. An agent on node A thus cannot write
// node B's annotations, and a pod not yet bound to a node has no node to match.
//
//   std::optional<Violation> v = CheckDeviceAnnotation(policy.node_agent, user, change);
#ifndef GPU_TENANCY_WEBHOOK_DEVICE_ANNOTATION_RULES_H_
#define GPU_TENANCY_WEBHOOK_DEVICE_ANNOTATION_RULES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/policy.h"
#include "webhook/verdict.h"

namespace webhook {

inline constexpr absl::string_view kDeviceAnnotationRule = "device-annotation";
// The userInfo.extra key kube-apiserver fills from a pod-bound ServiceAccount token.
inline constexpr absl::string_view kNodeNameExtra = "authentication.kubernetes.io/node-name";

// Who sent the request (AdmissionReview request.userInfo), as far as the rule needs.
struct UserIdentity {
  std::string username;
  std::vector<std::string> node_names;  // userInfo.extra[kNodeNameExtra]; empty when absent
};

// One device annotation of one object, before and after the request.
struct DeviceAnnotationChange {
  absl::string_view annotation;          // kPodDevicesAnnotation or kNodeDevicesAnnotation
  std::string object;                    // `pod "acme/train-0"`, `node "gpu-1"`
  std::optional<std::string> old_value;  // nullopt: absent (always, on CREATE)
  std::optional<std::string> new_value;  // nullopt: absent
  std::string node;                      // spec.nodeName or metadata.name; "" when unbound
  bool is_node = false;                  // the object is the Node itself
};

// The username kube-apiserver gives the agent's ServiceAccount tokens.
std::string NodeAgentUsername(const topology::NodeAgent& agent);

// A violation when the annotation changes and the user may not change it; nullopt otherwise.
std::optional<Violation> CheckDeviceAnnotation(const topology::NodeAgent& agent,
                                               const UserIdentity& user,
                                               const DeviceAnnotationChange& change);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_DEVICE_ANNOTATION_RULES_H_
