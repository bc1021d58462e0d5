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

bool HasDeviceAccessFacts(const PodFacts& pod) {
  if (pod.host_ipc || !pod.host_paths.empty()) return true;
  for (const auto* list : {&pod.containers, &pod.init_containers, &pod.ephemeral_containers}) {
    for (const ContainerFacts& c : *list) {
      if (c.privileged || !c.capabilities_added.empty() || !c.env.empty()) return true;
    }
  }
  return false;
}

bool RecordContractPod(ContractPods& pods, const std::string& uid, const PodFacts& pod,
                       bool gpu_demand) {
  const bool judged = pod.HoldsResources() &&
                      (gpu_demand || !pod.resource_claims.empty() || HasDeviceAccessFacts(pod));
  if (!judged) return pods.Erase(uid);
  if (const std::shared_ptr<const PodFacts>* have = pods.Find(uid); have && **have == pod) {
    return false;
  }
  pods.Put(uid, std::make_shared<const PodFacts>(pod));
  return true;
}

}  // namespace topology
