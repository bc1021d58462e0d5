#include "plan/document.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/quantity_text.h"
#include "topology/mig_layout.h"

namespace plan {
namespace {

using topology::MigProfile;

bool IsShared(Mechanism m) { return m == Mechanism::kTimeslice || m == Mechanism::kMps; }

Summary MakeSummary(const Plan& plan) {
  Summary s;
  s.gpus_used = plan.gpus_used;
  s.gpus_in_fleet = static_cast<int>(plan.gpus.size());
  s.baseline_gpus = plan.baseline_gpus;
  s.gpus_saved = plan.baseline_gpus - plan.gpus_used;
  s.baseline_replica_gpus = plan.baseline_replica_gpus;
  s.lower_bound = plan.lower_bound;
  s.optimal = plan.gpus_used == plan.lower_bound;
  for (const GpuPlan& gpu : plan.gpus) {
    std::set<std::string> tenants;
    auto add = [&](const Holder& h) {
      if (!h.canary()) tenants.insert(plan.workloads[h.workload].spec.tenant);
    };
    for (const PlannedInstance& i : gpu.instances) add(i.holder);
    for (const Holder& h : gpu.clients) add(h);
    s.max_tenants_per_gpu = std::max(s.max_tenants_per_gpu, static_cast<int>(tenants.size()));
  }
  int placed = 0;
  for (const WorkloadPlan& w : plan.workloads) placed += w.mechanism != Mechanism::kVmBoundary;
  s.baseline = absl::StrCat(
      "one whole GPU per workload: ", placed,
      " placed workloads, a multi-GPU replica counting its GPUs = ", plan.baseline_gpus,
      " GPUs. That baseline is generous to the old way: one whole GPU per replica would take ",
      plan.baseline_replica_gpus, ". Workloads that need a VM boundary are not counted.");
  s.text = absl::StrCat(plan.gpus_used, " GPUs used vs ", plan.baseline_gpus,
                        " for one GPU per workload");
  if (s.gpus_saved > 0 && plan.baseline_gpus > 0) {
    absl::StrAppend(&s.text, ": ", s.gpus_saved, " saved (",
                    (s.gpus_saved * 200 + plan.baseline_gpus) / (2 * plan.baseline_gpus), "%)");
  }
  return s;
}

std::vector<NodeCommands> NvidiaSmiCommands(const Plan& plan) {
  std::vector<NodeCommands> out;
  for (const NodePlan& n : plan.nodes) {
    NodeCommands node{n.name, {}};
    for (int gi : n.gpus) {
      const GpuPlan& g = plan.gpus[gi];
      if (!g.model || g.use == GpuUse::kIdle) continue;
      if (g.use != GpuUse::kMig) {
        node.commands.push_back(absl::StrCat("nvidia-smi -i ", g.index, " -mig 0"));
        continue;
      }
      std::vector<std::string> ids;
      for (const MigProfile* p : g.create_order) ids.push_back(ProfileArg(*p));
      node.commands.push_back(absl::StrCat("nvidia-smi -i ", g.index, " -mig 1"));
      node.commands.push_back(
          absl::StrCat("nvidia-smi mig -i ", g.index, " -cgi ", absl::StrJoin(ids, ","), " -C"));
    }
    if (!node.commands.empty()) out.push_back(std::move(node));
  }
  return out;
}

// Fills the configs; `config_of_node` gets each node's config name (nodes with catalog GPUs).
std::vector<MigPartedConfig> MigPartedConfigs(const Plan& plan,
                                              std::map<std::string, std::string>& config_of_node) {
  std::vector<MigPartedConfig> out;
  for (const NodePlan& n : plan.nodes) {
    std::vector<MigPartedEntry> entries;
    for (int gi : n.gpus) {
      const GpuPlan& g = plan.gpus[gi];
      if (!g.model) continue;
      MigPartedEntry entry{{g.index}, g.use == GpuUse::kMig, {}};
      if (entry.mig_enabled) entry.mig_devices = MigDevices(g);
      if (!entries.empty() && entries.back().mig_enabled == entry.mig_enabled &&
          entries.back().mig_devices == entry.mig_devices) {
        entries.back().devices.push_back(g.index);
      } else {
        entries.push_back(std::move(entry));
      }
    }
    if (entries.empty()) continue;
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const MigPartedConfig& c) { return c.entries == entries; });
    if (same == out.end()) {
      out.push_back({absl::StrCat("gpu-tenancy-", n.name), std::move(entries)});
      same = out.end() - 1;
    }
    config_of_node[n.name] = same->name;
  }
  return out;
}

std::vector<DevicePluginConfig> DevicePluginConfigs(
    const Plan& plan, std::map<std::string, std::string>& config_of_node) {
  std::vector<DevicePluginConfig> out;
  std::set<std::string> made;
  for (const NodePlan& n : plan.nodes) {
    bool mps = n.full_gpu_mode == GpuUse::kMps;
    if (n.full_gpu_mode != GpuUse::kTimeslice && !mps) continue;
    std::string name = absl::StrCat("gpu-tenancy-", mps ? "mps-" : "timeslice-", n.shared_replicas);
    config_of_node[n.name] = name;
    if (made.insert(name).second) out.push_back({name, mps, n.shared_replicas});
  }
  return out;
}

std::vector<NodeLabels> MakeNodeLabels(const Plan& plan,
                                       const std::map<std::string, std::string>& mig_config,
                                       const std::map<std::string, std::string>& plugin_config) {
  std::vector<NodeLabels> out;
  for (const NodePlan& n : plan.nodes) {
    NodeLabels node{n.name, {}, {}};
    for (const auto& [label, configs] :
         {std::pair{"nvidia.com/mig.config", &mig_config},
          std::pair{"nvidia.com/device-plugin.config", &plugin_config}}) {
      auto it = configs->find(n.name);
      if (it == configs->end()) continue;
      node.labels.push_back({label, it->second});
      node.commands.push_back(
          absl::StrCat("kubectl label node ", n.name, " ", label, "=", it->second, " --overwrite"));
    }
    if (!node.commands.empty()) out.push_back(std::move(node));
  }
  return out;
}

std::vector<PodSnippet> Pods(const Plan& plan) {
  std::vector<PodSnippet> out;
  for (const WorkloadPlan& w : plan.workloads) {
    if (w.mechanism == Mechanism::kVmBoundary) continue;
    PodSnippet pod;
    pod.workload = w.spec.name;
    pod.tenant = w.spec.tenant;
    pod.replicas = w.replicas;
    pod.namespace_name = w.spec.namespace_name;
    switch (w.mechanism) {
      case Mechanism::kMig:
        pod.resource = absl::StrCat("nvidia.com/mig-", w.profile->ResourceSuffix());
        break;
      case Mechanism::kExclusive:
        pod.resource = "nvidia.com/gpu";
        pod.count = w.gpus_per_replica;
        break;
      default:
        pod.resource = "nvidia.com/gpu.shared";
    }
    pod.spread_over_zones = w.spec.mirrored;
    if (IsShared(w.mechanism)) {
      pod.memory_annotation = {{plan.memory_annotation, MiQuantity(w.sizing.total_mib)}};
    }
    out.push_back(std::move(pod));
  }
  return out;
}

// The most clients on any GPU the workload shares: its MPS thread share is 100 / that.
int SharedClientsOf(const Plan& plan, int workload) {
  int most = 0;
  for (const GpuPlan& g : plan.gpus) {
    for (const Holder& h : g.clients) {
      if (h.workload == workload) most = std::max(most, static_cast<int>(g.clients.size()));
    }
  }
  return most;
}

int MpsThreadPercent(const Plan& plan, int workload) {
  return std::max(1, 100 / std::max(2, SharedClientsOf(plan, workload)));
}

std::vector<ClaimSnippet> Claims(const Plan& plan) {
  std::vector<ClaimSnippet> out;
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const WorkloadPlan& w = plan.workloads[i];
    if (w.mechanism == Mechanism::kVmBoundary) continue;
    ClaimSnippet claim;
    claim.name = absl::StrCat(w.spec.name, IsShared(w.mechanism) ? "-shared-gpu" : "-gpu");
    claim.namespace_name = w.spec.namespace_name;
    claim.mechanism = w.mechanism;
    if (w.profile) claim.mig_profile = w.profile->name;
    claim.gpus = w.gpus_per_replica;
    if (w.mechanism == Mechanism::kMps) {
      claim.mps_thread_percent = MpsThreadPercent(plan, static_cast<int>(i));
      claim.pinned_memory = MiQuantity(w.sizing.total_mib);
    }
    out.push_back(std::move(claim));
  }
  return out;
}

// Per tenant: the largest pod's memory, its MIG profiles, and its MPS limits.
PolicySection Policy(const Plan& plan) {
  PolicySection out;
  out.canary_profile = plan.canary_profile;
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const WorkloadPlan& w = plan.workloads[i];
    if (w.mechanism == Mechanism::kVmBoundary) continue;
    auto it = std::find_if(out.tenants.begin(), out.tenants.end(),
                           [&](const PolicyTenant& t) { return t.name == w.spec.tenant; });
    if (it == out.tenants.end()) {
      PolicyTenant tenant;
      tenant.name = w.spec.tenant;
      tenant.tier = std::string(TrustName(w.spec.trust));
      out.tenants.push_back(std::move(tenant));
      it = out.tenants.end() - 1;
    }
    PolicyTenant& t = *it;
    if (std::find(t.namespaces.begin(), t.namespaces.end(), w.spec.namespace_name) ==
        t.namespaces.end()) {
      t.namespaces.push_back(w.spec.namespace_name);
    }
    int64_t memory = w.sizing.total_mib;
    if (w.mechanism == Mechanism::kMig) {
      memory = *w.profile->memory_mib;
      if (std::find(t.mig_profiles.begin(), t.mig_profiles.end(), w.profile->name) ==
          t.mig_profiles.end()) {
        t.mig_profiles.push_back(w.profile->name);
      }
    } else if (w.mechanism == Mechanism::kExclusive) {
      for (const GpuType& type : plan.gpu_types) {
        if (type.name == w.gpu_type && type.memory_mib)
          memory = *type.memory_mib * w.gpus_per_replica;
      }
    } else {
      t.shared = true;
    }
    if (w.mechanism == Mechanism::kMps) {
      t.mps = true;
      t.mps_pinned_mib = std::max(t.mps_pinned_mib, w.sizing.total_mib);
      t.mps_thread_percent =
          std::min(t.mps_thread_percent, MpsThreadPercent(plan, static_cast<int>(i)));
    }
    t.gpu_memory_mib_per_pod = std::max(t.gpu_memory_mib_per_pod, memory);
  }
  return out;
}

std::vector<std::string> AllWarnings(const Plan& plan) {
  std::vector<std::string> out;
  for (const WorkloadPlan& w : plan.workloads) {
    out.insert(out.end(), w.warnings.begin(), w.warnings.end());
  }
  out.insert(out.end(), plan.warnings.begin(), plan.warnings.end());
  return out;
}

}  // namespace

std::string ProfileArg(const topology::MigProfile& profile) {
  return profile.id ? absl::StrCat(*profile.id) : profile.name;
}

absl::string_view TrustName(Trust t) { return t == Trust::kUntrusted ? "untrusted" : "trusted"; }

absl::string_view LatencyName(Latency l) { return l == Latency::kSla ? "sla" : "best-effort"; }

std::vector<std::pair<std::string, int>> MigDevices(const GpuPlan& gpu) {
  std::vector<const MigProfile*> profiles;
  for (const PlannedInstance& inst : gpu.instances) profiles.push_back(inst.profile);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [p, n] : topology::CountProfiles(profiles)) out.push_back({p->name, n});
  return out;
}

PlanDocument BuildDocument(Plan plan) {
  PlanDocument doc;
  doc.summary = MakeSummary(plan);
  doc.nvidia_smi = NvidiaSmiCommands(plan);
  std::map<std::string, std::string> mig_config, plugin_config;  // node -> config name
  doc.mig_configs = MigPartedConfigs(plan, mig_config);
  doc.device_plugin_configs = DevicePluginConfigs(plan, plugin_config);
  doc.node_labels = MakeNodeLabels(plan, mig_config, plugin_config);
  doc.pods = Pods(plan);
  doc.claims = Claims(plan);
  doc.policy = Policy(plan);
  doc.warnings = AllWarnings(plan);
  doc.plan = std::move(plan);
  return doc;
}

}  // namespace plan
