// The Kubernetes calls of the MIG reconfiguration gate, one small function each over the Api:
// read a Node and its pods, cordon, label, evict (policy/v1 Eviction), watch one Node, post an
// Event about a Node, read a ConfigMap and the replica counts of pod owners. No decisions: those
// are topology/reconfigure_rules and kube/reconfigure_gate.
#ifndef GPU_TENANCY_KUBE_NODE_OPS_H_
#define GPU_TENANCY_KUBE_NODE_OPS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/api.h"
#include "topology/mig_parted.h"

namespace kube {

struct NodeFacts {
  std::string name;
  std::string uid;
  std::string resource_version;
  bool unschedulable = false;
  std::map<std::string, std::string> labels;
  topology::ObservedOffer offer;  // nvidia.com/* allocatable and the labels
  std::optional<std::string> Label(absl::string_view key) const;
};

// A Node object's JSON to NodeFacts; InvalidArgument when it is not one.
[[nodiscard]] absl::StatusOr<NodeFacts> ParseNode(absl::string_view json);

// NotFound when the node does not exist; Unavailable or Internal for other failures.
[[nodiscard]] absl::StatusOr<NodeFacts> GetNode(Api& api, const std::string& node);

struct PodOwner {
  std::string kind;  // the controller reference's kind: ReplicaSet, StatefulSet, Job, ...
  std::string name;
  std::string uid;
};

struct PodFacts {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node;
  std::string phase;
  bool ready = false;
  bool terminating = false;
  std::vector<std::string> gpu_resources;  // the GPU resources its containers request
  std::optional<PodOwner> owner;
  std::string Key() const { return namespace_name + "/" + name; }
};

// Pods bound to `node` (fieldSelector spec.nodeName), all namespaces.
[[nodiscard]] absl::StatusOr<std::vector<PodFacts>> ListPodsOnNode(Api& api,
                                                                   const std::string& node);
[[nodiscard]] absl::StatusOr<std::vector<PodFacts>> ListPodsInNamespace(Api& api,
                                                                        const std::string& ns);

// spec.replicas of a ReplicaSet or StatefulSet; NotFound when it is gone, InvalidArgument for
// kinds that have none.
[[nodiscard]] absl::StatusOr<int> OwnerReplicas(Api& api, const std::string& ns,
                                                const PodOwner& owner);

// JSON merge patches of the Node.
[[nodiscard]] absl::Status SetUnschedulable(Api& api, const std::string& node, bool value);
// `value` nullopt removes the label.
[[nodiscard]] absl::Status SetNodeLabels(
    Api& api, const std::string& node,
    const std::vector<std::pair<std::string, std::optional<std::string>>>& labels);

enum class EvictionResult { kEvicted, kGone, kBlocked };
struct Eviction {
  EvictionResult result = EvictionResult::kEvicted;
  std::string message;  // why it was refused (kBlocked): the API's Status message
};
// POST .../pods/NAME/eviction. 429 (a PodDisruptionBudget forbids it now) is kBlocked; other
// refusals are errors naming the pod.
[[nodiscard]] absl::StatusOr<Eviction> EvictPod(Api& api, const PodFacts& pod);

// Watches the Node from `resource_version` and calls `on_node` with each new state until it
// returns true (OK), the stream ends (OK, the caller re-reads and watches again), `stream` is
// interrupted (Aborted) or cancelled (Cancelled). NotFound when the node is deleted,
// PermissionDenied on 401/403, Unavailable on other refusals.
[[nodiscard]] absl::Status WatchNode(Api& api, const std::string& node,
                                     const std::string& resource_version,
                                     const std::function<bool(const NodeFacts&)>& on_node,
                                     Api::Stream* stream);

// A core/v1 Event about the Node, in namespace default (where kubectl describe node finds it).
[[nodiscard]] absl::Status PostNodeEvent(Api& api, const NodeFacts& node, bool warning,
                                         absl::string_view reason, absl::string_view message);

// The ConfigMap's JSON; NotFound when absent.
[[nodiscard]] absl::StatusOr<std::string> GetConfigMap(Api& api, const std::string& ns,
                                                       const std::string& name);

// The smoke pod: pinned to `node` (spec.nodeName, so no scheduler is involved), one container
// of `image` asking for one `resource`, never restarted. Returns the created pod's name.
[[nodiscard]] absl::StatusOr<std::string> CreateSmokePod(Api& api, const std::string& ns,
                                                         const std::string& node,
                                                         const std::string& image,
                                                         const std::string& resource);
[[nodiscard]] absl::StatusOr<PodFacts> GetPod(Api& api, const std::string& ns,
                                              const std::string& name);
[[nodiscard]] absl::Status DeletePod(Api& api, const std::string& ns, const std::string& name);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_NODE_OPS_H_
