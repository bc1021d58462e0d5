#include "topology/device_ids.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace topology {
namespace {

bool AllDigits(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

}  // namespace

DeviceId ParseDeviceId(absl::string_view id) {
  DeviceId out;
  absl::string_view base = id;
  // The replica suffix: the last "::" followed by digits only.
  if (size_t at = id.rfind("::"); at != absl::string_view::npos && AllDigits(id.substr(at + 2))) {
    int replica = 0;
    if (absl::SimpleAtoi(id.substr(at + 2), &replica)) {
      out.replica = replica;
      base = id.substr(0, at);
    }
  }
  out.device = std::string(base);
  if (absl::StartsWith(base, "GPU-") || AllDigits(base)) {
    out.gpu = out.device;
  } else if (absl::StartsWith(base, "MIG-")) {
    out.mig = true;
    absl::string_view rest = base.substr(4);
    // MIG-GPU-<uuid>/<gi>/<ci>: the parent is the part before the first '/'.
    if (absl::StartsWith(rest, "GPU-")) out.gpu = std::string(rest.substr(0, rest.find('/')));
  } else if (size_t colon = base.find(':'); colon != absl::string_view::npos &&
                                            AllDigits(base.substr(0, colon)) &&
                                            AllDigits(base.substr(colon + 1))) {
    out.mig = true;
    out.gpu = std::string(base.substr(0, colon));
  }
  return out;
}

NodeGpus GpusOfDevices(const std::vector<std::string>& device_ids) {
  NodeGpus out;
  auto gpu_named = [&](const std::string& id) -> NodeGpu& {
    for (NodeGpu& g : out.gpus) {
      if (g.id == id) return g;
    }
    return out.gpus.emplace_back(NodeGpu{id, {}});
  };
  for (const std::string& raw : device_ids) {
    DeviceId d = ParseDeviceId(raw);
    if (!d.mig) {
      if (!d.gpu.empty()) gpu_named(d.gpu);
      continue;
    }
    std::vector<std::string>& into = d.gpu.empty() ? out.unplaced_mig : gpu_named(d.gpu).mig;
    if (std::find(into.begin(), into.end(), d.device) == into.end()) into.push_back(d.device);
  }
  return out;
}

std::vector<ResourceDevices> RecordOf(const std::vector<ContainerDevices>& containers) {
  std::map<std::string, std::set<std::string>> ids;
  for (const ContainerDevices& c : containers) {
    for (const ResourceDevices& r : c.resources) ids[r.resource].insert(r.ids.begin(), r.ids.end());
  }
  std::vector<ResourceDevices> out;
  for (auto& [resource, set] : ids) {
    out.push_back({resource, std::vector<std::string>(set.begin(), set.end())});
  }
  return out;
}

const PodDeviceRecord* NodeGpus::FindPod(absl::string_view uid) const {
  auto it =
      std::lower_bound(pods.begin(), pods.end(), uid,
                       [](const PodDeviceRecord& r, absl::string_view u) { return r.uid < u; });
  return it != pods.end() && it->uid == uid ? &*it : nullptr;
}

}  // namespace topology
