// Which device served which tenant, from the node agent's reports (topology/device_report.h):
// each believed report's devices with their tenant, the physical GPUs with the tenants on each,
// and the pods whose report disagrees with the scheduler's record. Two outputs of one walk over
// a snapshot:
//   - /metrics info series that join DCGM's (labels UUID, GPU_I_ID, pod, namespace) to tenants:
//       gpu_tenancy_pod_tenant_info{namespace,pod,tenant,node} 1     every GPU pod held
//       gpu_tenancy_device_tenant_info{tenant,namespace,pod,node,resource,device,UUID,GPU_I_ID,
//                                      sharing} 1                   every reported device
//       gpu_tenancy_gpu_tenants{UUID,node}                          tenants on a physical GPU
//       gpu_tenancy_device_reports_disagreeing                      pods whose report disagrees
//     UUID is the physical GPU's (a MIG instance's parent), as DCGM labels it; it and GPU_I_ID
//     are left out when the IDs do not say them. sharing is "exclusive" (a whole GPU), "mig" (a
//     MIG instance) or "shared" (a time-sliced or MPS replica: one heap, one fault domain).
//     These carry pod names, so there is one series per GPU pod and device, as many as the
//     fleet has devices to hand out;
//   - the inventory's "physicalGpus" and "disagreements" (GET /debug/allocations).
// Pure: no I/O.
#ifndef GPU_TENANCY_EXTENDER_DEVICE_ATTRIBUTION_H_
#define GPU_TENANCY_EXTENDER_DEVICE_ATTRIBUTION_H_

#include <set>
#include <string>
#include <vector>

#include "common/prometheus_text.h"
#include "rapidjson/rapidjson.h"
#include "topology/device_report.h"
#include "topology/snapshot.h"

namespace extender {

struct AttributedPod {
  std::string tenant;
  std::string namespace_name;
  std::string name;
  std::string node;
  std::vector<topology::ReportedDevice> devices;  // of its believed report; empty without one
  std::string disagreement;                       // topology::ReportDisagreement
};

struct PhysicalGpu {
  std::string node;
  std::string id;  // GPU-<uuid>, or an index under that ID strategy
  std::set<std::string> tenants;
  std::set<std::string> pods;  // namespace/name
  std::string sharing;  // "shared" if any replica, else "mig" if any instance, else "exclusive"
};

struct DeviceAttribution {
  std::vector<AttributedPod> pods;  // every GPU pod held, by node then namespace and name
  std::vector<PhysicalGpu> gpus;    // by node, then ID
  int disagreeing = 0;
};

DeviceAttribution AttributeDevices(const topology::ModelState& state);

// "exclusive", "mig" or "shared".
absl::string_view SharingOf(const topology::ReportedDevice& device);

void AppendDeviceMetrics(const DeviceAttribution& attribution, common::MetricsText& out);

// "physicalGpus": [{node, id, sharing, tenants, pods}], "disagreements": [{namespace, name,
// node, tenant, reason}], as members of the object `w` is inside.
template <typename JsonWriter>
void WriteDeviceAttribution(JsonWriter& w, const DeviceAttribution& attribution) {
  auto string = [&](absl::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.Key("physicalGpus");
  w.StartArray();
  for (const PhysicalGpu& gpu : attribution.gpus) {
    w.StartObject();
    w.Key("node");
    string(gpu.node);
    w.Key("id");
    string(gpu.id);
    w.Key("sharing");
    string(gpu.sharing);
    for (auto [key, values] : {std::pair{"tenants", &gpu.tenants}, {"pods", &gpu.pods}}) {
      w.Key(key);
      w.StartArray();
      for (const std::string& v : *values) string(v);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("disagreements");
  w.StartArray();
  for (const AttributedPod& pod : attribution.pods) {
    if (pod.disagreement.empty()) continue;
    w.StartObject();
    for (auto [key, value] : {std::pair{"namespace", &pod.namespace_name},
                              {"name", &pod.name},
                              {"node", &pod.node},
                              {"tenant", &pod.tenant},
                              {"reason", &pod.disagreement}}) {
      w.Key(key);
      string(*value);
    }
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_DEVICE_ATTRIBUTION_H_
