#include "extender/device_attribution.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/policy.h"

namespace extender {

absl::string_view SharingOf(const topology::ReportedDevice& device) {
  if (device.replica) return "shared";
  return device.mig ? "mig" : "exclusive";
}

DeviceAttribution AttributeDevices(const topology::ModelState& state) {
  DeviceAttribution out;
  absl::flat_hash_map<std::string, std::string> tenant_of;  // namespace -> tenant
  std::map<std::pair<std::string, std::string>, PhysicalGpu> gpus;
  state.snapshot->ForEachNode([&](const topology::NodeState& node) {
    for (const auto& hold : node.holds) {
      std::string& tenant = tenant_of[hold->namespace_name];
      if (tenant.empty()) {
        tenant = topology::ResolveTenant(*state.policy, hold->namespace_name,
                                         state.snapshot->NamespaceLabels(hold->namespace_name))
                     .name;
      }
      AttributedPod pod{tenant,     hold->namespace_name,
                        hold->name, node.facts.name,
                        {},         topology::ReportDisagreement(*hold, node.facts)};
      if (std::optional<topology::DeviceReport> report =
              topology::BelievedReport(*hold, node.facts)) {
        pod.devices = topology::ReportedDevices(*report, node.facts);
      }
      for (const topology::ReportedDevice& d : pod.devices) {
        if (d.gpu.empty()) continue;
        PhysicalGpu& gpu = gpus[{node.facts.name, d.gpu}];
        gpu.node = node.facts.name;
        gpu.id = d.gpu;
        gpu.tenants.insert(tenant);
        gpu.pods.insert(absl::StrCat(hold->namespace_name, "/", hold->name));
        absl::string_view sharing = SharingOf(d);
        if (gpu.sharing != "shared" && (gpu.sharing.empty() || sharing != "exclusive")) {
          gpu.sharing = std::string(sharing);
        }
      }
      out.disagreeing += !pod.disagreement.empty();
      out.pods.push_back(std::move(pod));
    }
  });
  // ForEachNode visits shards in hash order: sort for stable output.
  std::sort(out.pods.begin(), out.pods.end(), [](const AttributedPod& a, const AttributedPod& b) {
    return std::tie(a.node, a.namespace_name, a.name) < std::tie(b.node, b.namespace_name, b.name);
  });
  for (auto& [key, gpu] : gpus) out.gpus.push_back(std::move(gpu));
  return out;
}

void AppendDeviceMetrics(const DeviceAttribution& attribution, common::MetricsText& out) {
  using common::MetricsText;
  out.Family("gpu_tenancy_pod_tenant_info", MetricsText::kGauge,
             "A pod holding GPU resources, with its tenant (joins DCGM's pod and namespace).");
  for (const AttributedPod& pod : attribution.pods) {
    out.Sample("gpu_tenancy_pod_tenant_info",
               {{"namespace", pod.namespace_name},
                {"pod", pod.name},
                {"tenant", pod.tenant},
                {"node", pod.node}},
               1);
  }
  out.Family("gpu_tenancy_device_tenant_info", MetricsText::kGauge,
             "A device the node agent reported for a pod, with its tenant and physical GPU "
             "(joins DCGM's UUID and GPU_I_ID).");
  for (const AttributedPod& pod : attribution.pods) {
    for (const topology::ReportedDevice& d : pod.devices) {
      std::vector<common::MetricLabel> labels = {
          {"tenant", pod.tenant},   {"namespace", pod.namespace_name}, {"pod", pod.name},
          {"node", pod.node},       {"resource", d.resource},          {"device", d.id},
          {"sharing", SharingOf(d)}};
      if (absl::StartsWith(d.gpu, "GPU-")) labels.push_back({"UUID", d.gpu});
      if (!d.mig_instance.empty()) labels.push_back({"GPU_I_ID", d.mig_instance});
      out.Sample("gpu_tenancy_device_tenant_info", labels, 1);
    }
  }
  out.Family("gpu_tenancy_gpu_tenants", MetricsText::kGauge,
             "Tenants with a device on a physical GPU, as the node agent reported them.");
  for (const PhysicalGpu& gpu : attribution.gpus) {
    if (!absl::StartsWith(gpu.id, "GPU-")) continue;
    out.Sample("gpu_tenancy_gpu_tenants", {{"UUID", gpu.id}, {"node", gpu.node}},
               gpu.tenants.size());
  }
  out.Family("gpu_tenancy_device_reports_disagreeing", MetricsText::kGauge,
             "GPU pods whose node agent report disagrees with the scheduler's record (listed "
             "under disagreements in /debug/allocations).");
  out.Sample("gpu_tenancy_device_reports_disagreeing", {}, attribution.disagreeing);
}

}  // namespace extender
