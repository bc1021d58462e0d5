#include "topology/bound_pods.h"

namespace topology {

bool RecordBoundPod(BoundPods& pods, const std::string& uid, const PodFacts& pod) {
  if (!pod.HoldsResources()) return pods.Erase(uid);
  BoundPodRef ref{pod.namespace_name, pod.name, pod.node_name, pod.priority};
  if (const std::shared_ptr<const BoundPodRef>* have = pods.Find(uid); have && **have == ref) {
    return false;
  }
  pods.Put(uid, std::make_shared<const BoundPodRef>(std::move(ref)));
  return true;
}

}  // namespace topology
