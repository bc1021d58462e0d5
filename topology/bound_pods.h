// Every pod bound to a node and not finished, GPU or not, by UID: who it is, where, and its
// priority. kube-scheduler names a preemption's victims by UID only when the extender is
// nodeCacheCapable, and its victims include pods outside the GPU model (CPU, memory, ports);
// with this directory the preempt verb can still say whose each one is and whether the
// preemptor may evict it, instead of dropping every node that holds one.
//
// It keeps no labels: at 150,000 pods they would cost more than the rest of the model, and
// preemption reads a victim's labels only to count PodDisruptionBudget violations, which
// kube-scheduler counts for its own victims (extender/preempt.h says how they combine).
//
//   BoundPods pods;
//   pods.Put(uid, std::make_shared<const BoundPodRef>(BoundPodRef{"acme", "web-0", "node-a", 5}));
//   if (const auto* ref = snapshot.FindBoundPod(uid)) ...
#ifndef GPU_TENANCY_TOPOLOGY_BOUND_PODS_H_
#define GPU_TENANCY_TOPOLOGY_BOUND_PODS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "topology/facts.h"
#include "topology/persistent_map.h"

namespace topology {

struct BoundPodRef {
  std::string namespace_name;
  std::string name;
  std::string node;
  int32_t priority = 0;
  bool operator==(const BoundPodRef&) const = default;
  std::string Key() const { return namespace_name + "/" + name; }
};

using BoundPods = PersistentMap<std::string, std::shared_ptr<const BoundPodRef>>;

// Records `pod` under `uid` when it holds its node (bound, not finished) and removes it
// otherwise. True when the directory changed.
bool RecordBoundPod(BoundPods& pods, const std::string& uid, const PodFacts& pod);

// The bound pods the tenancy contract judges after admission (the contract guard), with their
// facts as admission read them: those with GPU demand, DRA claims or device access. A few per
// GPU node; every other pod is left out.
using ContractPods = PersistentMap<std::string, std::shared_ptr<const PodFacts>>;

// A container or the pod reaches for devices past the device plugin: privileged, added
// capabilities, the device variables, a host path, hostIPC (what device-access reads).
bool HasDeviceAccessFacts(const PodFacts& pod);

// Records `pod` under `uid` when it holds its node and has GPU demand (`gpu_demand`), DRA
// claims or device access; removes it otherwise. True when the set changed.
bool RecordContractPod(ContractPods& pods, const std::string& uid, const PodFacts& pod,
                       bool gpu_demand);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_BOUND_PODS_H_
