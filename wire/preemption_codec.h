// kube-scheduler's preempt call (k8s.io/kube-scheduler/extender/v1): ExtenderPreemptionArgs in,
// ExtenderPreemptionResult out. The args carry, per candidate node, the victims kube-scheduler
// chose with its in-tree view: as pod UIDs (NodeNameToMetaVictims, nodeCacheCapable: true) or
// as whole Pod objects (NodeNameToVictims otherwise). Keys are matched case-insensitively, as
// Go decodes them, and the older JSON names (nodeToVictims) are accepted too. The result is
// always NodeNameToMetaVictims: kube-scheduler reads only that field of the reply and finds each
// UID among the pods it knows on the node.
#ifndef GPU_TENANCY_WIRE_PREEMPTION_CODEC_H_
#define GPU_TENANCY_WIRE_PREEMPTION_CODEC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "rapidjson/document.h"

namespace wire {

struct PreemptionArgs {
  std::unique_ptr<rapidjson::Document> doc;  // owns every pointer and view below
  const common::JsonValue* pod = nullptr;    // the preemptor (never null after parsing)
  bool meta = true;                          // victims given as UIDs only
  struct Node {
    absl::string_view name;
    std::vector<absl::string_view> uids;         // every victim's UID
    std::vector<const common::JsonValue*> pods;  // !meta: the victims' Pod objects, as uids
    int64_t pdb_violations = 0;
  };
  std::vector<Node> nodes;  // sorted by name
};

// InvalidArgument naming the field: not JSON, Pod missing, both victim maps missing or null, a
// victims entry that is not an object, a pod without a UID.
[[nodiscard]] absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(absl::string_view body);

struct NodeVictims {
  std::string node;
  std::vector<std::string> uids;
  int64_t pdb_violations = 0;
};
// {"NodeNameToMetaVictims": {"node": {"Pods": [{"UID": "..."}], "NumPDBViolations": 0}}}.
std::string EncodePreemptionResult(const std::vector<NodeVictims>& nodes);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_PREEMPTION_CODEC_H_
