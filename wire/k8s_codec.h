// Kubernetes JSON to model facts: Node, Pod, Namespace, and List (the cluster file printed by
// `kubectl get nodes,pods,namespaces -A -o json`; with DRA, add
// resourceslices,resourceclaims,deviceclasses, read by wire/dra_codec). Objects inside extender
// requests come without apiVersion/kind and are accepted as they are. Errors name the JSON path
// that was wrong.
#ifndef GPU_TENANCY_WIRE_K8S_CODEC_H_
#define GPU_TENANCY_WIRE_K8S_CODEC_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/facts.h"
#include "topology/quantity.h"
#include "topology/snapshot.h"

namespace wire {

// A quantity given as a JSON string ("8Gi") or number (8).
[[nodiscard]] absl::StatusOr<topology::Quantity> ParseQuantityValue(const common::JsonValue& value,
                                                                    absl::string_view path);
// A map of string keys to quantities (requests, limits, allocatable, overhead).
[[nodiscard]] absl::StatusOr<topology::ResourceList> ParseResourceList(
    const common::JsonValue& value, absl::string_view path);
// A map of string keys to string values (labels, annotations).
[[nodiscard]] absl::StatusOr<topology::Labels> ParseStringMap(const common::JsonValue& value,
                                                              absl::string_view path);

// metadata.annotations[key] of a Kubernetes object, when present; nullopt for a null `object`.
// A value that is not a string (kube-apiserver refuses those) reads as its JSON text, so it
// still counts as present.
std::optional<std::string> AnnotationOf(const common::JsonValue* object, absl::string_view key);

[[nodiscard]] absl::StatusOr<topology::NodeFacts> ParseNode(const common::JsonValue& node,
                                                            absl::string_view path = "node");
// metadata.name may be empty (CREATE with generateName).
[[nodiscard]] absl::StatusOr<topology::PodFacts> ParsePod(const common::JsonValue& pod,
                                                          absl::string_view path = "pod");

// Which labels and annotations ParsePod stores. Every value is still checked, so a pod is
// accepted or refused exactly as without a filter; only the copies differ. For callers that
// read a few known keys of pods that may carry dozens (the webhook reads one annotation).
struct PodMetadataFilter {
  bool all_labels = true;
  bool all_annotations = true;
  std::vector<absl::string_view> annotations;  // kept when !all_annotations
};
[[nodiscard]] absl::StatusOr<topology::PodFacts> ParsePod(const common::JsonValue& pod,
                                                          absl::string_view path,
                                                          const PodMetadataFilter& keep);

// A List (or NodeList/PodList/NamespaceList) of Nodes, Pods and Namespaces; items of other
// kinds are ignored. Items without `kind` inside a NodeList/PodList take the list's item kind.
[[nodiscard]] absl::StatusOr<topology::ClusterData> ParseClusterList(const common::JsonValue& list);

// A cluster file in JSON or YAML.
[[nodiscard]] absl::StatusOr<topology::ClusterData> ParseClusterText(absl::string_view text);

// One object (JSON or YAML) from a file's text, e.g. a Pod manifest.
[[nodiscard]] absl::StatusOr<rapidjson::Document> ParseObjectText(absl::string_view text);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_K8S_CODEC_H_
