// What the node agent's reports (topology/device_ids.h) tell the model, and when to believe
// them. The scheduler promises a shared-GPU pod one GPU's memory (bind writes the GPU's index,
// kGpuIndexAnnotation), but on the device plugin the kubelet picks the replica, so the promise
// may not be where the pod runs. The agent's report says where it does: its replica's GPU,
// numbered by its place among the node's reported GPUs that are not MIG-partitioned (the
// agent lists them in the kubelet's order). Where a believed report names the GPU, the pod's
// memory counts there; otherwise on the promised GPU; otherwise on the node as a whole.
//
// A report is believed when it names the node the pod is bound to (only that node's agent may
// write it, the webhook's device-annotation rule) and the pod's namespace is one the webhooks
// guard (kWebhookExemptNamespaces are not). Pure.
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

// The hold's report when it is believed on `node`, else null.
const DeviceReport* BelievedReport(const PodHold& hold, const NodeFacts& node);

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

// Why the pod's report and the scheduler's record of it disagree (it names another node, another
// GPU than bind chose, or other resources than the pod asked for); "" when they agree, when
// there is no report, or when the pod's namespace is not guarded.
std::string ReportDisagreement(const PodHold& hold, const NodeFacts& node);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DEVICE_REPORT_H_
