// Each tenant's deal: for every GPU pod and DRA claim it holds, the device boundary it got and
// who else is on the same physical GPU; what it shares above the device on each node; its
// limits, quota use and the selectors its claims carry.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/device_report.h"
#include "views/audit.h"

namespace views {
namespace {

using topology::ResourceKind;
using topology::SharingMode;

// One thing a tenant holds on a node, before co-tenants are known.
struct Entry {
  std::string tenant;
  HeldDevice device;
  std::string share_key;  // entries with equal keys are on the same device, or may be
  bool certain = true;    // the key names one physical GPU
};

std::string TenantOf(const topology::Policy& policy, const topology::ClusterSnapshot& snapshot,
                     const std::string& namespace_name) {
  return topology::ResolveTenant(policy, namespace_name, snapshot.NamespaceLabels(namespace_name))
      .name;
}

int64_t CountLabel(const topology::NodeState& node, absl::string_view label) {
  auto it = node.facts.labels.find(label);
  int64_t count = 0;
  if (it == node.facts.labels.end() || !absl::SimpleAtoi(it->second, &count)) return 0;
  return count;
}

// The entries of one pod hold on its node.
void AddPodEntries(const topology::NodeState& node, const topology::PodHold& hold,
                   const std::string& tenant, const topology::Policy& policy,
                   std::vector<Entry>& out) {
  const bool one_gpu = CountLabel(node, topology::kGpuCountLabel) == 1;
  // The shared GPU the node agent saw the pod on, else the one bind promised it.
  const std::optional<int> shared_gpu = topology::HeldSharedGpu(hold, node.facts);
  auto entry = [&](absl::string_view resource, int64_t count, DeviceBoundary boundary) {
    Entry e;
    e.tenant = tenant;
    e.device.kind = "pod";
    e.device.namespace_name = hold.namespace_name;
    e.device.name = hold.name;
    e.device.node = node.facts.name;
    e.device.resource = std::string(resource);
    e.device.count = count;
    e.device.boundary = boundary;
    return e;
  };
  for (const topology::ResourceCount& r : hold.demand.devices) {
    const topology::OfferedResource* offer = node.supply.Find(r);
    std::optional<topology::ResourceClass> cls;
    if (offer != nullptr) {
      cls = topology::ResourceClass{offer->kind, offer->mode, offer->mig_profile};
    } else {
      cls = topology::ClassifyResource(r.name, node.facts.labels, policy);
    }
    if (!cls) continue;
    Entry e = entry(r.name, r.count, ClassifyBoundary(cls->kind, cls->mode));
    switch (e.device.boundary) {
      case DeviceBoundary::kWholeGpu:
        break;  // nobody else on it
      case DeviceBoundary::kMigInstance:
        // Beside other MIG instances of the node's GPUs: the same GPU for certain only when the
        // node has one.
        e.share_key = "mig";
        e.certain = one_gpu;
        break;
      case DeviceBoundary::kMigTimeSliced:
        e.share_key = r.name;
        // One instance of the profile on the node (GFD's count label): its replicas are on it.
        e.certain = CountLabel(node, absl::StrCat(topology::kMigResourcePrefix, cls->mig_profile,
                                                  ".count")) == 1;
        break;
      default:
        if (shared_gpu) {
          e.device.gpu = absl::StrCat("GPU ", *shared_gpu);
          e.share_key = absl::StrCat("gpu-", *shared_gpu);
          e.certain = true;
        } else {
          e.share_key = "shared";
          e.certain = offer != nullptr && node.supply.SharedGpuCount(*offer) == 1;
        }
        break;
    }
    out.push_back(std::move(e));
  }
  if (hold.demand.devices.empty() && hold.demand.memory_mib > 0) {
    Entry e = entry("gpu memory", hold.demand.memory_mib, DeviceBoundary::kMemoryFraction);
    if (shared_gpu) {
      e.device.gpu = absl::StrCat("GPU ", *shared_gpu);
      e.share_key = absl::StrCat("gpu-", *shared_gpu);
    } else {
      e.share_key = "shared";
      e.certain = one_gpu;
    }
    out.push_back(std::move(e));
  }
}

// The entries of allocated DRA claims on `node_name`. DRA names the device and, for a MIG
// device, its parent GPU's UUID: co-tenants are then known for certain.
void AddClaimEntries(const topology::ModelState& state,
                     std::map<std::string, std::vector<Entry>>& by_node) {
  const topology::DraState& dra = state.snapshot->dra();
  for (const topology::DraClaim* held : dra.claims.Sorted()) {
    const topology::DraClaim& claim = *held;
    if (!claim.allocated) continue;
    const std::string tenant = TenantOf(*state.policy, *state.snapshot, claim.namespace_name);
    for (const topology::DraAllocationResult& result : claim.results) {
      const topology::DraDevice* device = dra.Find(result);
      Entry e;
      e.tenant = tenant;
      e.device.kind = "claim";
      e.device.namespace_name = claim.namespace_name;
      e.device.name = claim.name;
      e.device.resource = result.Id().ToString();
      e.device.node =
          device != nullptr && !device->node.empty() ? device->node : claim.allocated_node;
      if (device != nullptr && device->type == "mig") {
        e.device.boundary = DeviceBoundary::kMigInstance;
        e.device.gpu = device->parent_uuid;
        e.share_key =
            device->parent_uuid.empty() ? "mig" : absl::StrCat("uuid-", device->parent_uuid);
        e.certain = !device->parent_uuid.empty();
      } else {
        // A whole device; two claims holding one device (shared by claim config, or admin
        // access) are one fault domain.
        e.device.boundary = DeviceBoundary::kWholeGpu;
        if (device != nullptr) e.device.gpu = device->uuid;
        e.share_key = absl::StrCat("device-", e.device.resource);
      }
      by_node[e.device.node].push_back(std::move(e));
    }
  }
}

// Whether two entries are, or may be, on one device: equal keys, or a shared GPU that is not
// known ("shared") beside a known one ("gpu-1") of the same node.
bool MaySameDevice(const Entry& a, const Entry& b) {
  if (a.share_key.empty() || b.share_key.empty()) return false;
  if (a.share_key == b.share_key) return true;
  auto gpu_level = [](const std::string& key) {
    return key == "shared" || absl::StartsWith(key, "gpu-");
  };
  return gpu_level(a.share_key) && gpu_level(b.share_key) &&
         (a.share_key == "shared" || b.share_key == "shared");
}

std::vector<std::string> LimitLines(const topology::Tenant& tenant) {
  std::vector<std::string> out;
  const topology::TenantLimits& l = tenant.limits;
  if (l.gpu_memory_mib_per_pod) {
    out.push_back(absl::StrCat("GPU memory per pod: at most ", *l.gpu_memory_mib_per_pod, " MiB"));
  }
  if (!l.mig_profiles.empty()) {
    out.push_back(absl::StrCat("MIG profiles: only ", absl::StrJoin(l.mig_profiles, ", ")));
  }
  if (l.shared_replicas_per_pod) {
    out.push_back(absl::StrCat("shared replicas per pod: at most ", *l.shared_replicas_per_pod));
  }
  if (l.mps.max_active_thread_percentage) {
    out.push_back(absl::StrCat("MPS active threads: at most ", *l.mps.max_active_thread_percentage,
                               "% of the GPU"));
  }
  if (l.mps.max_pinned_memory_mib) {
    out.push_back(
        absl::StrCat("MPS pinned memory: at most ", *l.mps.max_pinned_memory_mib, " MiB"));
  }
  if (!tenant.priority_classes.empty()) {
    out.push_back(
        absl::StrCat("priority classes: only ", absl::StrJoin(tenant.priority_classes, ", ")));
  }
  return out;
}

bool NodeRunsMps(const topology::NodeState& node) {
  for (const topology::OfferedResource& r : node.supply.resources) {
    if (r.mode == SharingMode::kMps && r.allocatable > 0) return true;
  }
  return false;
}

}  // namespace

absl::string_view BoundaryName(DeviceBoundary boundary) {
  switch (boundary) {
    case DeviceBoundary::kMigInstance:
      return "mig-instance";
    case DeviceBoundary::kMigTimeSliced:
      return "mig-timesliced";
    case DeviceBoundary::kWholeGpu:
      return "whole-gpu";
    case DeviceBoundary::kTimeSliced:
      return "timesliced";
    case DeviceBoundary::kMps:
      return "mps";
    case DeviceBoundary::kMemoryFraction:
      return "memory-fraction";
  }
  return "whole-gpu";
}

DeviceBoundary ClassifyBoundary(ResourceKind kind, SharingMode mode) {
  switch (kind) {
    case ResourceKind::kWholeGpu:
      return DeviceBoundary::kWholeGpu;
    case ResourceKind::kMigInstance:
      return DeviceBoundary::kMigInstance;
    case ResourceKind::kSharedReplica:
      if (mode == SharingMode::kMigShared) return DeviceBoundary::kMigTimeSliced;
      if (mode == SharingMode::kMps) return DeviceBoundary::kMps;
      return DeviceBoundary::kTimeSliced;
  }
  return DeviceBoundary::kWholeGpu;
}

std::string DescribeBoundary(DeviceBoundary boundary, const std::vector<std::string>& co_tenants,
                             bool certain) {
  const std::string others = absl::StrJoin(co_tenants, ", ");
  const std::string with = absl::StrCat(
      certain ? "shared with " : "possibly shared with (the GPU is not known) ", others);
  switch (boundary) {
    case DeviceBoundary::kMigInstance:
      return absl::StrCat(
          "MIG instance: a hardware partition of the GPU's compute units, L2 cache, memory and "
          "memory bandwidth; a fault stays inside the instance. ",
          co_tenants.empty() ? "No other tenant holds a MIG instance of this GPU."
                             : absl::StrCat("Other instances of the same physical GPU: ",
                                            certain ? "" : "possibly ", others, "."));
    case DeviceBoundary::kMigTimeSliced:
      return co_tenants.empty()
                 ? "MIG instance time-sliced between pods: a hardware boundary to other tenants, "
                   "since only this tenant's pods hold replicas of it; its own pods share one "
                   "memory heap and one fault domain."
                 : absl::StrCat(
                       "MIG instance time-sliced between pods: one memory heap and one "
                       "fault domain inside the instance, ",
                       with, "; no hardware boundary to them.");
    case DeviceBoundary::kWholeGpu:
      return co_tenants.empty() ? "Whole GPU: the physical device is this tenant's alone."
                                : absl::StrCat("Whole GPU, but the same device is held by ", others,
                                               ": one memory heap and one fault domain.");
    case DeviceBoundary::kTimeSliced:
      return absl::StrCat(
          "Time-sliced GPU: one memory heap and one fault domain, no memory or fault isolation "
          "between the pods on it; ",
          co_tenants.empty() ? "no other tenant on it." : absl::StrCat(with, "."));
    case DeviceBoundary::kMps:
      return absl::StrCat(
          "MPS: one memory heap and one fault domain under one MPS control daemon, with "
          "per-client thread and memory caps; ",
          co_tenants.empty() ? "no other tenant on it." : absl::StrCat(with, "."));
    case DeviceBoundary::kMemoryFraction:
      return absl::StrCat(
          "A share of a GPU's memory: one memory heap and one fault domain with the GPU's other "
          "pods; ",
          co_tenants.empty() ? "no other tenant on it." : absl::StrCat(with, "."));
  }
  return "";
}

std::vector<TenantDeal> TenantDeals(const topology::ModelState& state) {
  const topology::Policy& policy = *state.policy;
  const topology::ClusterSnapshot& snapshot = *state.snapshot;
  std::map<std::string, std::vector<Entry>> by_node;
  std::map<std::string, const topology::NodeState*> nodes;
  snapshot.ForEachNode([&](const topology::NodeState& node) {
    nodes[node.facts.name] = &node;
    for (const auto& hold : node.holds) {
      AddPodEntries(node, *hold, TenantOf(policy, snapshot, hold->namespace_name), policy,
                    by_node[node.facts.name]);
    }
  });
  AddClaimEntries(state, by_node);

  std::map<std::string, TenantDeal> deals;
  for (const topology::Tenant& t : policy.tenants) deals[t.name].tenant = t.name;
  // Who is on each node, and on each shared device of it.
  for (auto& [node_name, entries] : by_node) {
    std::set<std::string> on_node;
    for (const Entry& e : entries) on_node.insert(e.tenant);
    for (Entry& e : entries) {
      std::set<std::string> co;
      for (const Entry& other : entries) {
        if (other.tenant == e.tenant || !MaySameDevice(e, other)) continue;
        co.insert(other.tenant);
        if (e.share_key != other.share_key) e.certain = false;
      }
      HeldDevice d = std::move(e.device);
      d.co_tenants.assign(co.begin(), co.end());
      d.co_tenants_certain = co.empty() || e.certain;
      // Two claims on one whole device are a shared fault domain.
      if (d.kind == "claim" && d.boundary == DeviceBoundary::kWholeGpu && !co.empty()) {
        d.boundary = DeviceBoundary::kTimeSliced;
      }
      d.isolation = DescribeBoundary(d.boundary, d.co_tenants, d.co_tenants_certain);
      TenantDeal& deal = deals[e.tenant];
      deal.tenant = e.tenant;
      deal.devices.push_back(std::move(d));
    }
    auto node_it = nodes.find(node_name);
    for (const std::string& tenant : on_node) {
      NodeNeighbours n;
      n.node = node_name;
      n.shared = {"host kernel", "NVIDIA driver and kernel modules",
                  "container runtime and NVIDIA container toolkit"};
      if (node_it != nodes.end() && NodeRunsMps(*node_it->second)) {
        n.shared.push_back("MPS control daemon");
      }
      for (const std::string& other : on_node) {
        if (other != tenant) n.other_tenants.push_back(other);
      }
      deals[tenant].nodes.push_back(std::move(n));
    }
  }

  std::vector<TenantDeal> out;
  for (auto& [name, deal] : deals) {
    const topology::Tenant* tenant = policy.FindTenant(name);
    const topology::Tier* tier = nullptr;
    if (tenant != nullptr) {
      tier = policy.FindTier(tenant->tier);
    } else if (policy.unknown_tenant_tier) {
      tier = policy.FindTier(*policy.unknown_tenant_tier);
    }
    if (tier != nullptr) {
      deal.tier = tier->name;
      deal.modes = tier->modes.ToString();
      deal.device_access = tier->device_access;
    }
    if (tenant != nullptr) {
      deal.limits = LimitLines(*tenant);
      if (!tenant->quota.empty()) {
        deal.quota =
            topology::QuotaLines(tenant->quota, topology::TenantUsage(snapshot, policy, name));
      }
    }
    for (const topology::DraClaim* held : snapshot.dra().claims.Sorted()) {
      const topology::DraClaim& claim = *held;
      if (TenantOf(policy, snapshot, claim.namespace_name) != name) continue;
      for (const topology::DraRequest& request : claim.requests) {
        deal.claim_selectors.push_back(
            {absl::StrCat(claim.namespace_name, "/", claim.name), request.name, request.selectors});
      }
    }
    std::sort(deal.devices.begin(), deal.devices.end(),
              [](const HeldDevice& a, const HeldDevice& b) {
                return std::tie(a.namespace_name, a.name, a.kind, a.resource) <
                       std::tie(b.namespace_name, b.name, b.kind, b.resource);
              });
    out.push_back(std::move(deal));
  }
  return out;
}

}  // namespace views
