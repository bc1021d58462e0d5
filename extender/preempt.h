// The preempt verb: kube-scheduler proposes, per candidate node, the victims its in-tree view
// chose; we answer with the victims our model and the tenants' rules accept
// (topology/preemption.h), or drop the node. Pure: request body in, reply and what changed out.
//
// Each victim is first resolved: a GPU pod of the model (the node's holds), else the Pod
// object kube-scheduler sent (nodeCacheCapable: false), else the watch's directory of bound
// pods (nodeCacheCapable: true names victims by UID only; topology/bound_pods.h). A node is
// dropped when a victim cannot be resolved there (the watch has not seen it on that node: it
// may be anyone's GPU pod) or when the policy protects one from this preemptor.
//
// For a preemptor that asks for GPUs (resources or claims), per node:
//   - dropped when the pod cannot fit there whatever leaves (unresolvable fit or quota), when
//     no set of pods it may preempt makes room, when it fits without evicting anyone
//     (kube-scheduler rejects an answer with no victims), or as above;
//   - otherwise answered with our GPU victims plus kube-scheduler's victims that are not GPU
//     pods (they free what its own plugins counted: CPU, memory, ports). DRA-backed demands
//     keep kube-scheduler's victims as its DRA plugin chose them, each one checked.
// For any other preemptor (CPU only, or GPUs through ResourceClaims only, which the model does
// not count as a demand; kube-scheduler asks about every pod when an extender entry without
// managedResources carries preemptVerb), kube-scheduler's victims stand unless one is a GPU
// pod (a hold, or a pod holding devices through an allocated claim) the policy protects from
// it: no pod, whatever it asks for, evicts another tenant's GPU pod unless policy.preemption
// opens it.
#ifndef GPU_TENANCY_EXTENDER_PREEMPT_H_
#define GPU_TENANCY_EXTENDER_PREEMPT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/snapshot.h"

namespace extender {

struct PreemptNode {
  enum class Outcome { kKept, kChanged, kDropped };
  std::string node;
  Outcome outcome = Outcome::kKept;
  std::vector<std::string> proposed;  // kube-scheduler's victims, "namespace/name" or the UID
  std::vector<std::string> victims;   // ours, "namespace/name" or the UID
  std::string reason;                 // kDropped: why
};
absl::string_view OutcomeName(PreemptNode::Outcome outcome);  // "kept", "changed", "dropped"

struct PreemptReply {
  int http_status = 200;
  std::string body;
  std::string pod;  // "namespace/name" of the preemptor
  std::string uid;
  std::string tenant;
  std::string tier;
  std::vector<PreemptNode> nodes;  // by node name
};

// `state` is null before the first cluster sync: every node is dropped then (evicting on a
// guess is the one thing worse than not preempting). Malformed bodies give HTTP 400.
PreemptReply Preempt(absl::string_view body, const topology::ModelState* state);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_PREEMPT_H_
