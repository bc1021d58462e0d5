// What the node agent's reports (topology/device_ids.h) tell the model, and when to believe
// them. The scheduler promises a shared-GPU pod one GPU's memory (bind writes the GPU's index,
// kGpuIndexAnnotation), but on the device plugin the kubelet picks the replica, so the promise
// may not be where the pod runs. The agent's report says where it does: its replica's GPU,
// numbered by its place among the node's reported GPUs that are not MIG-partitioned (the
// agent lists them in the kubelet's order). Where a believed report names the GPU, the pod's
// memory counts there; otherwise on the promised GPU; otherwise on the node as a whole.
//
// A report is believed only where only the agent of the pod's node could have written it: the
// agent keeps its own record of every report it writes on its Node (PodDeviceRecord, in the
// Node's gpu-tenancy.io/gpu-devices), which only that node's agent may write (the admission
// policies of manifests/node-agent, enforced inside kube-apiserver in every namespace, and the
// webhook's device-annotation rule). The model believes that record, by the pod's UID, and takes
// the pod's own annotation only for its containers' detail when it says the same. So a report
// anyone else wrote on a pod, in any namespace, whatever its labels, and whether or not the
// webhook was called, changes nothing, and ReportDoubt says why it was passed over. Pure.
#ifndef GPU_TENANCY_TOPOLOGY_DEVICE_REPORT_H_
#define GPU_TENANCY_TOPOLOGY_DEVICE_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/device_ids.h"
#include "topology/facts.h"
#include "topology/occupancy.h"

namespace topology {

// What the model believes the pod got on `node`: the node agent's record for its UID, as the
// pod's own report when that says the same (with its containers), else as one unnamed
// container; nullopt when the agent recorded nothing for the pod.
std::optional<DeviceReport> BelievedReport(const PodHold& hold, const NodeFacts& node);

// Why the pod's own gpu-tenancy.io/devices is passed over (it names another node, or the node's
// agent recorded nothing or other devices for the pod: the agent did not write it); "" when it
// says what the agent recorded, or when the pod has none.
std::string ReportDoubt(const PodHold& hold, const NodeFacts& node);

// One device a report names, with what the node's GPU list adds to its ID.
struct ReportedDevice {
  std::string resource;      // nvidia.com/mig-3g.40gb
  std::string id;            // as the kubelet gave it
  std::string gpu;           // the physical GPU's ID; "" when neither the ID nor the node says
  std::string mig_instance;  // the GPU instance ID an older MIG ID carries ("1"); else ""
  bool mig = false;
  bool replica = false;  // a time-sliced or MPS replica: the GPU's heap is shared
};

// Every device of a report, container by container, each ID once.
std::vector<ReportedDevice> ReportedDevices(const DeviceReport& report, const NodeFacts& node);

// The shared GPU's index the hold's believed report puts its replica on, if it says.
std::optional<int> ReportedSharedGpu(const PodHold& hold, const NodeFacts& node);

// The GPU whose memory a shared-GPU hold counts against: the report's, else the promise.
std::optional<int> HeldSharedGpu(const PodHold& hold, const NodeFacts& node);

// Why the pod's report and the scheduler's record of it disagree (its own report is passed over,
// the believed one names another GPU than bind chose, or other resources than the pod asked
// for); "" when they agree or when there is no report.
std::string ReportDisagreement(const PodHold& hold, const NodeFacts& node);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DEVICE_REPORT_H_
