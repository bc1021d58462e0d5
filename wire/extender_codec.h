// kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1; see
// docs/wire/extender.md). Requests use Go field names (PascalCase) matched case-insensitively;
// every wrapper key may be null. Full-Node requests are answered with the original Node JSON
// values, so the parsed request document is kept alive and its items are written back as-is.
#ifndef GPU_TENANCY_WIRE_EXTENDER_CODEC_H_
#define GPU_TENANCY_WIRE_EXTENDER_CODEC_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "rapidjson/document.h"

namespace wire {

// ExtenderArgs: the body of filter and prioritize.
struct ExtenderArgs {
  std::unique_ptr<rapidjson::Document> doc;   // owns every pointer below
  const common::JsonValue* pod = nullptr;     // the Pod object (never null after parsing)
  bool names_only = true;                     // NodeNames given (nodeCacheCapable: true)
  std::vector<absl::string_view> node_names;  // candidates, in request order
  // Full-Node mode: node_items[i] is the Node object named node_names[i].
  std::vector<const common::JsonValue*> node_items;
};

// InvalidArgument naming the problem: not JSON, Pod missing or not an object, both NodeNames
// and Nodes null/missing, a Node item without metadata.name, a name that is not a string.
[[nodiscard]] absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body);

// ExtenderFilterResult. In names-only mode `kept` are names; otherwise the kept Node objects
// are written back exactly as they arrived.
struct FilterReply {
  std::vector<size_t> kept;  // indexes into ExtenderArgs::node_names, in request order
  std::map<std::string, std::string> failed;               // FailedNodes
  std::map<std::string, std::string> failed_unresolvable;  // FailedAndUnresolvableNodes
  std::string error;
};
std::string EncodeFilterResult(const ExtenderArgs& args, const FilterReply& reply);

// The same reply from reasons the caller already holds, without a map of strings: each failed
// entry is a candidate (an index into args.node_names) and its reason, written in the order
// given; give one entry per node name (a JSON object must not repeat a key). Equal as JSON to
// EncodeFilterResult's reply (which orders the objects' members by name).
struct FailedNode {
  size_t candidate = 0;
  absl::string_view reason;
};
std::string EncodeFilterResult(const ExtenderArgs& args, const std::vector<size_t>& kept,
                               const std::vector<FailedNode>& failed,
                               const std::vector<FailedNode>& failed_unresolvable);

// HostPriorityList: [{"Host": name, "Score": n}, ...].
struct HostScore {
  absl::string_view host;
  int64_t score = 0;
};
std::string EncodeHostPriorityList(const std::vector<HostScore>& scores);

// A filter result carrying only Error: for our own failures (cache not synced...).
std::string EncodeFilterError(absl::string_view error);

// {"error": "..."} for HTTP 4xx/5xx replies.
std::string EncodeHttpError(absl::string_view message);

// ExtenderBindingArgs / ExtenderBindingResult.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
[[nodiscard]] absl::StatusOr<BindingArgs> ParseBindingArgs(absl::string_view body);
std::string EncodeBindingResult(absl::string_view error);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_EXTENDER_CODEC_H_
