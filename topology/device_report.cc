#include "topology/device_report.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "topology/wellknown.h"

namespace topology {
namespace {

// The parent GPU of a MIG-<uuid> instance, from the node's list.
std::string ParentOf(absl::string_view mig, const NodeFacts& node) {
  if (!node.reported_gpus) return "";
  for (const NodeGpu& gpu : node.reported_gpus->gpus) {
    if (std::find(gpu.mig.begin(), gpu.mig.end(), mig) != gpu.mig.end()) return gpu.id;
  }
  return "";
}

// "1" of MIG-GPU-<uuid>/1/0.
std::string GpuInstanceOf(absl::string_view device) {
  std::vector<absl::string_view> parts = absl::StrSplit(device, '/');
  return parts.size() == 3 && absl::StartsWith(device, "MIG-GPU-") ? std::string(parts[1]) : "";
}

// The GPU's place among the node's reported GPUs that are not MIG-partitioned.
std::optional<int> SharedGpuIndex(absl::string_view gpu, const NodeFacts& node) {
  if (!node.reported_gpus || gpu.empty()) return std::nullopt;
  int index = 0;
  for (const NodeGpu& g : node.reported_gpus->gpus) {
    if (!g.mig.empty()) continue;
    if (g.id == gpu) return index;
    ++index;
  }
  return std::nullopt;
}

// The node agent's record of the pod, by its UID, on the node it is counted on.
const PodDeviceRecord* RecordFor(const PodHold& hold, const NodeFacts& node) {
  return node.reported_gpus ? node.reported_gpus->FindPod(hold.uid) : nullptr;
}

}  // namespace

std::optional<DeviceReport> BelievedReport(const PodHold& hold, const NodeFacts& node) {
  const PodDeviceRecord* record = RecordFor(hold, node);
  if (!record) return std::nullopt;
  // The pod's own report, for its containers' detail, when it says what the record says.
  if (hold.device_report && hold.device_report->node == node.name &&
      RecordOf(hold.device_report->containers) == record->resources) {
    return *hold.device_report;
  }
  return DeviceReport{node.name, {{"", record->resources}}};
}

std::string ReportDoubt(const PodHold& hold, const NodeFacts& node) {
  if (!hold.device_report) return "";
  const DeviceReport& report = *hold.device_report;
  const PodDeviceRecord* record = RecordFor(hold, node);
  const std::string believed =
      record ? absl::StrCat("; what the node agent of \"", node.name, "\" recorded is believed")
             : std::string("; it is not believed");
  if (report.node != node.name) {
    return absl::StrCat("its devices were reported by the node agent of \"", report.node,
                        "\", but it is bound to \"", node.name, "\"", believed);
  }
  if (!node.reported_gpus) {
    return absl::StrCat("node \"", node.name,
                        "\" has no node agent report (gpu-tenancy.io/gpu-devices) to confirm it",
                        believed);
  }
  if (!record) {
    return absl::StrCat("the node agent of \"", node.name,
                        "\" recorded no report for this pod: it did not write it", believed);
  }
  if (record->resources != RecordOf(report.containers)) {
    return absl::StrCat("its gpu-tenancy.io/devices names other devices than the node agent of \"",
                        node.name, "\" recorded for it: the agent did not write it", believed);
  }
  return "";
}

std::vector<ReportedDevice> ReportedDevices(const DeviceReport& report, const NodeFacts& node) {
  std::vector<ReportedDevice> out;
  for (const ContainerDevices& c : report.containers) {
    for (const ResourceDevices& r : c.resources) {
      for (const std::string& id : r.ids) {
        if (std::any_of(out.begin(), out.end(), [&](const auto& d) { return d.id == id; })) {
          continue;
        }
        DeviceId parsed = ParseDeviceId(id);
        ReportedDevice d{r.resource, id, parsed.gpu, "", parsed.mig, parsed.replica >= 0};
        if (d.mig) {
          if (d.gpu.empty()) d.gpu = ParentOf(parsed.device, node);
          d.mig_instance = GpuInstanceOf(parsed.device);
        }
        out.push_back(std::move(d));
      }
    }
  }
  return out;
}

std::optional<int> ReportedSharedGpu(const PodHold& hold, const NodeFacts& node) {
  std::optional<DeviceReport> report = BelievedReport(hold, node);
  if (!report) return std::nullopt;
  for (const ReportedDevice& d : ReportedDevices(*report, node)) {
    if (d.replica && !d.mig) return SharedGpuIndex(d.gpu, node);
  }
  return std::nullopt;
}

std::optional<int> HeldSharedGpu(const PodHold& hold, const NodeFacts& node) {
  if (std::optional<int> reported = ReportedSharedGpu(hold, node)) return reported;
  return hold.gpu_index;
}

std::string ReportDisagreement(const PodHold& hold, const NodeFacts& node) {
  std::vector<std::string> reasons;
  if (std::string doubt = ReportDoubt(hold, node); !doubt.empty()) {
    reasons.push_back(std::move(doubt));
  }
  std::optional<DeviceReport> believed = BelievedReport(hold, node);
  if (!believed) return absl::StrJoin(reasons, "; ");
  const DeviceReport& report = *believed;
  std::optional<int> reported = ReportedSharedGpu(hold, node);
  if (reported && hold.gpu_index && *reported != *hold.gpu_index) {
    reasons.push_back(absl::StrCat("bind chose shared GPU ", *hold.gpu_index,
                                   ", the kubelet gave a replica of shared GPU ", *reported));
  }
  std::map<std::string, int64_t> got;
  for (const ReportedDevice& d : ReportedDevices(report, node)) ++got[d.resource];
  for (const auto& [resource, count] : got) {
    int64_t asked = 0;
    for (const ResourceCount& device : hold.demand.devices) {
      if (device.name == resource) asked += device.count;
    }
    if (asked != count) {
      reasons.push_back(
          absl::StrCat("it asked for ", asked, " ", resource, ", the kubelet gave ", count));
    }
  }
  return absl::StrJoin(reasons, "; ");
}

}  // namespace topology
