#include "extender/allocations.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "common/prometheus_text.h"
#include "extender/device_attribution.h"
#include "extender/fair_share_view.h"
#include "extender/inventory.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "topology/dra/partitions.h"
#include "topology/policy.h"

namespace extender {

namespace {

using topology::NodeState;
using topology::OfferedResource;
using topology::PodHold;
using topology::ResourceKind;

// What one pod's hold counts for on the node that holds it.
Held HeldBy(const PodHold& hold, const topology::NodeSupply& supply) {
  Held h;
  h.pods = 1;
  for (const topology::ResourceCount& device : hold.demand.devices) {
    const int64_t count = device.count;
    const OfferedResource* r = supply.Find(device);
    if (!r) continue;  // no longer offered (relabelled node): listed per pod, not summed
    switch (r->kind) {
      case ResourceKind::kMigInstance:
        h.mig_instances[r->mig_profile] += count;
        h.gpu_memory_mib += count * r->memory_mib.value_or(0);
        break;
      case ResourceKind::kWholeGpu:
        h.gpus += count;
        h.gpu_memory_mib += count * r->memory_mib.value_or(0);
        break;
      case ResourceKind::kSharedReplica:
        h.shared_replicas += count;
        break;
    }
  }
  // Shared GPUs give a pod the memory it was promised, not the GPU's.
  if (topology::UsesSharedMemory(hold.demand, supply)) h.gpu_memory_mib += hold.demand.memory_mib;
  return h;
}

void Add(Held& into, const Held& h) {
  for (const auto& [profile, n] : h.mig_instances) into.mig_instances[profile] += n;
  into.shared_replicas += h.shared_replicas;
  into.gpus += h.gpus;
  into.gpu_memory_mib += h.gpu_memory_mib;
  into.pods += h.pods;
}

void WriteHeld(common::JsonWriter& w, const Held& h) {
  w.StartObject();
  w.Key("migInstances");
  w.StartObject();
  for (const auto& [profile, n] : h.mig_instances) {
    common::WriteString(w, profile);
    w.Int64(n);
  }
  w.EndObject();
  w.Key("sharedReplicas");
  w.Int64(h.shared_replicas);
  w.Key("gpus");
  w.Int64(h.gpus);
  w.Key("gpuMemoryMiB");
  w.Int64(h.gpu_memory_mib);
  w.Key("pods");
  w.Int64(h.pods);
  w.EndObject();
}

// The devices the node agent reported for the pod, when its report is believed.
void WriteReportedDevices(common::JsonWriter& w, const PodHold& pod,
                          const topology::NodeFacts& node) {
  std::optional<topology::DeviceReport> report = topology::BelievedReport(pod, node);
  if (!report) return;
  w.Key("reportedDevices");
  w.StartArray();
  for (const topology::ReportedDevice& d : topology::ReportedDevices(*report, node)) {
    w.StartObject();
    w.Key("resource");
    common::WriteString(w, d.resource);
    w.Key("id");
    common::WriteString(w, d.id);
    if (!d.gpu.empty()) {
      w.Key("gpu");
      common::WriteString(w, d.gpu);
    }
    w.Key("sharing");
    common::WriteString(w, SharingOf(d));
    w.EndObject();
  }
  w.EndArray();
  if (std::optional<int> gpu = topology::ReportedSharedGpu(pod, node)) {
    w.Key("reportedGpuIndex");
    w.Int(*gpu);
  }
}

void WritePod(common::JsonWriter& w, const PodHold& pod, const NodeState& node) {
  const topology::NodeSupply& supply = node.supply;
  w.StartObject();
  w.Key("namespace");
  common::WriteString(w, pod.namespace_name);
  w.Key("name");
  common::WriteString(w, pod.name);
  w.Key("uid");
  common::WriteString(w, pod.uid);
  w.Key("state");
  w.String(pod.assumed ? "assumed" : "bound");
  w.Key("devices");
  w.StartObject();
  std::set<std::string> profiles;
  for (const topology::ResourceCount& device : pod.demand.devices) {
    common::WriteString(w, device.name);
    w.Int64(device.count);
    if (const OfferedResource* r = supply.Find(device); r && !r->mig_profile.empty()) {
      profiles.insert(r->mig_profile);
    }
  }
  w.EndObject();
  w.Key("migProfiles");
  w.StartArray();
  for (const std::string& p : profiles) common::WriteString(w, p);
  w.EndArray();
  if (pod.gpu_index) {
    w.Key("gpuIndex");
    w.Int(*pod.gpu_index);
  }
  w.Key("gpuMemoryMiB");
  w.Int64(HeldBy(pod, supply).gpu_memory_mib);
  WriteReportedDevices(w, pod, node.facts);
  w.EndObject();
}

// The IDs of every device the node agent reported for the tenant's pods, each once.
std::set<std::string> TenantDeviceIds(const TenantAllocation& a,
                                      const topology::ClusterSnapshot& snapshot) {
  std::set<std::string> ids;
  for (const NodeAllocation& n : a.nodes) {
    const NodeState* node = snapshot.FindNode(n.node);
    for (const auto& pod : n.pods) {
      std::optional<topology::DeviceReport> report = topology::BelievedReport(*pod, node->facts);
      if (!report) continue;
      for (const topology::ReportedDevice& d : topology::ReportedDevices(*report, node->facts)) {
        ids.insert(d.id);
      }
    }
  }
  return ids;
}

// Allocated claims, each to the tenant of its namespace, with the devices it holds.
template <typename TenantOf>
void AddClaims(const topology::ModelState& state, TenantOf tenant_of) {
  const topology::DraState& dra = state.snapshot->dra();
  if (dra.claims.empty()) return;
  for (const topology::DraClaim* c : dra.claims.Sorted()) {
    if (!c->allocated) continue;
    ClaimAllocation held{c, {}, 0};
    for (const topology::DraAllocationResult& r : c->results) {
      if (const topology::DraDevice* d = dra.Find(r)) {
        held.devices.push_back(d);
      } else {
        ++held.unpublished;
      }
    }
    TenantAllocation& tenant = tenant_of(c->namespace_name);
    for (const topology::DraDevice* d : held.devices) ++tenant.dra_devices[{d->type, d->profile}];
    tenant.claims.push_back(std::move(held));
  }
}

void WriteMemorySlices(common::JsonWriter& w, const topology::DraDevice& d,
                       const std::string& set) {
  w.Key("memorySlices");
  w.StartArray();
  for (int i : topology::MemorySlices(d, set)) w.Int(i);
  w.EndArray();
}

// {"device", "migProfile", "memorySlices"} of one placement on `gpu`, then the caller's keys.
void StartPlacement(common::JsonWriter& w, const topology::DraDevice& d,
                    const topology::PartitionedGpu& gpu) {
  w.StartObject();
  w.Key("device");
  common::WriteString(w, d.name);
  if (!d.profile.empty()) {
    w.Key("migProfile");
    common::WriteString(w, d.profile);
  }
  WriteMemorySlices(w, d, gpu.counter_set);
}

// Each partitioned GPU: what allocated claims hold of it (and whose), what could still be cut,
// and what the held placements block.
void WritePartitionedGpus(common::JsonWriter& w, const topology::ModelState& state) {
  w.Key("partitionedGpus");
  w.StartArray();
  for (const topology::PartitionedGpu& gpu : topology::PartitionedGpus(state.snapshot->dra())) {
    w.StartObject();
    for (auto [key, value] : {std::pair{"node", &gpu.node},
                              {"driver", &gpu.driver},
                              {"pool", &gpu.pool},
                              {"counterSet", &gpu.counter_set}}) {
      w.Key(key);
      common::WriteString(w, *value);
    }
    w.Key("held");
    w.StartArray();
    for (const topology::HeldPlacement& h : gpu.held) {
      StartPlacement(w, *h.device, gpu);
      if (h.claim) {
        w.Key("claim");
        common::WriteString(w, absl::StrCat(h.claim->namespace_name, "/", h.claim->name));
        w.Key("tenant");
        common::WriteString(
            w, topology::ResolveTenant(*state.policy, h.claim->namespace_name,
                                       state.snapshot->NamespaceLabels(h.claim->namespace_name))
                   .name);
      }
      w.EndObject();
    }
    w.EndArray();
    w.Key("canStillCut");
    w.StartArray();
    for (const topology::DraDevice* d : gpu.can_cut) {
      StartPlacement(w, *d, gpu);
      w.EndObject();
    }
    w.EndArray();
    w.Key("blocked");
    w.StartArray();
    for (const topology::DraDevice* d : gpu.blocked) common::WriteString(w, d->name);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteClaim(common::JsonWriter& w, const ClaimAllocation& a) {
  const topology::DraClaim& c = *a.claim;
  w.StartObject();
  w.Key("namespace");
  common::WriteString(w, c.namespace_name);
  w.Key("name");
  common::WriteString(w, c.name);
  w.Key("uid");
  common::WriteString(w, c.uid);
  w.Key("node");
  common::WriteString(w, c.allocated_node);
  w.Key("devices");
  w.StartArray();
  for (const topology::DraDevice* d : a.devices) {
    w.StartObject();
    for (auto [key, value] : {std::pair{"driver", &d->driver},
                              {"pool", &d->pool},
                              {"device", &d->name},
                              {"type", &d->type},
                              {"uuid", &d->uuid},
                              {"parentUUID", &d->parent_uuid},
                              {"migProfile", &d->profile},
                              {"product", &d->product}}) {
      if (value->empty()) continue;
      w.Key(key);
      common::WriteString(w, *value);
    }
    if (d->memory_mib) {
      w.Key("memoryMiB");
      w.Int64(*d->memory_mib);
    }
    // A partitionable placement: the GPU (counter set) it is a slice of, and where on it.
    if (!d->consumes_counters.empty()) {
      const std::string& set = d->consumes_counters.front().counter_set;
      w.Key("partitionOf");
      common::WriteString(w, set);
      WriteMemorySlices(w, *d, set);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("unpublishedDevices");
  w.Uint64(a.unpublished);
  w.Key("reservedFor");
  w.StartArray();
  for (const topology::DraReservation& r : c.reserved_for) {
    w.StartObject();
    w.Key("resource");
    common::WriteString(w, r.resource);
    w.Key("name");
    common::WriteString(w, r.name);
    w.Key("uid");
    common::WriteString(w, r.uid);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

std::vector<TenantAllocation> Allocations(const topology::ModelState& state) {
  const topology::Policy& policy = *state.policy;
  std::map<std::string, TenantAllocation> by_tenant;
  for (const topology::Tenant& t : policy.tenants) {
    TenantAllocation& a = by_tenant[t.name];
    a.tenant = t.name;
    const topology::Tier* tier = policy.FindTier(t.tier);
    a.tier = tier ? tier->name : "";
    if (!t.quota.empty()) {
      a.quota =
          topology::QuotaLines(t.quota, topology::TenantUsage(*state.snapshot, policy, t.name));
    }
  }
  // Every MIG profile the fleet offers, so a tenant's series read 0 rather than vanish.
  std::set<std::string> fleet_profiles;
  // Namespaces resolve once each, however many pods they have.
  absl::flat_hash_map<std::string, TenantAllocation*> by_namespace;
  std::map<std::pair<std::string, std::string>, NodeAllocation> by_tenant_node;
  state.snapshot->ForEachNode([&](const NodeState& node) {
    for (const OfferedResource& r : node.supply.resources) {
      if (r.kind == ResourceKind::kMigInstance) fleet_profiles.insert(r.mig_profile);
    }
    for (const std::shared_ptr<const PodHold>& hold : node.holds) {
      TenantAllocation*& tenant = by_namespace[hold->namespace_name];
      if (!tenant) {
        topology::TenantRef ref = topology::ResolveTenant(
            policy, hold->namespace_name, state.snapshot->NamespaceLabels(hold->namespace_name));
        tenant = &by_tenant[ref.name];
        tenant->tenant = ref.name;
        tenant->tier = ref.tier ? ref.tier->name : "";
      }
      Held h = HeldBy(*hold, node.supply);
      Add(tenant->held, h);
      NodeAllocation& n = by_tenant_node[{tenant->tenant, node.facts.name}];
      n.node = node.facts.name;
      n.pool = node.supply.pool;
      Add(n.held, h);
      n.pods.push_back(hold);  // node.holds is sorted, so each node's list stays sorted
    }
  });
  for (auto& [key, node] : by_tenant_node) by_tenant[key.first].nodes.push_back(std::move(node));
  AddClaims(state, [&](const std::string& ns) -> TenantAllocation& {
    TenantAllocation*& tenant = by_namespace[ns];
    if (!tenant) {
      topology::TenantRef ref =
          topology::ResolveTenant(policy, ns, state.snapshot->NamespaceLabels(ns));
      tenant = &by_tenant[ref.name];
      tenant->tenant = ref.name;
      tenant->tier = ref.tier ? ref.tier->name : "";
    }
    return *tenant;
  });
  std::vector<TenantAllocation> out;
  out.reserve(by_tenant.size());
  for (auto& [name, a] : by_tenant) {
    for (const std::string& p : fleet_profiles) a.held.mig_instances.try_emplace(p, 0);
    out.push_back(std::move(a));
  }
  return out;
}

void AppendTenantMetrics(const std::vector<TenantAllocation>& allocations,
                         common::MetricsText& out) {
  using common::MetricsText;
  auto tier = [](const TenantAllocation& a) -> absl::string_view {
    return a.tier.empty() ? absl::string_view("none") : absl::string_view(a.tier);
  };
  out.Family("gpu_tenancy_tenant_mig_instances_held", MetricsText::kGauge,
             "MIG instances held by a tenant's bound and assumed pods, per profile.");
  for (const TenantAllocation& a : allocations) {
    for (const auto& [profile, n] : a.held.mig_instances) {
      out.Sample("gpu_tenancy_tenant_mig_instances_held",
                 {{"tenant", a.tenant}, {"tier", tier(a)}, {"profile", profile}}, n);
    }
  }
  struct Gauge {
    absl::string_view name, help;
    int64_t Held::*field;
  };
  for (const Gauge& g : {
           Gauge{"gpu_tenancy_tenant_shared_replicas_held",
                 "Time-sliced, MPS or shared MIG replicas held by a tenant's pods.",
                 &Held::shared_replicas},
           Gauge{"gpu_tenancy_tenant_gpus_held", "Whole GPUs held by a tenant's pods.",
                 &Held::gpus},
           Gauge{"gpu_tenancy_tenant_gpu_memory_held_mib",
                 "GPU memory (MiB) held by a tenant's pods: MIG instances' and whole GPUs' memory "
                 "plus memory promised on shared GPUs.",
                 &Held::gpu_memory_mib},
           Gauge{"gpu_tenancy_tenant_pods", "A tenant's pods holding GPU resources.", &Held::pods},
       }) {
    out.Family(g.name, MetricsText::kGauge, g.help);
    for (const TenantAllocation& a : allocations) {
      out.Sample(g.name, {{"tenant", a.tenant}, {"tier", tier(a)}}, a.held.*g.field);
    }
  }
  out.Family(
      "gpu_tenancy_tenant_dra_devices", MetricsText::kGauge,
      "DRA devices held by a tenant's allocated ResourceClaims, by device type and MIG profile.");
  for (const TenantAllocation& a : allocations) {
    for (const auto& [key, n] : a.dra_devices) {
      out.Sample(
          "gpu_tenancy_tenant_dra_devices",
          {{"tenant", a.tenant}, {"tier", tier(a)}, {"type", key.first}, {"profile", key.second}},
          n);
    }
  }
  // Quota units are the quota's own (declared GPU memory, MIG compute slices), so use has its
  // own series beside the limit rather than borrowing the held gauges above.
  for (auto [name, help, limit] :
       {std::tuple{"gpu_tenancy_tenant_quota",
                   "A tenant's quota per item (policy tenants[].quota).", true},
        std::tuple{"gpu_tenancy_tenant_quota_used",
                   "What a tenant's bound and assumed pods use of each quota item, in its units.",
                   false}}) {
    out.Family(name, MetricsText::kGauge, help);
    for (const TenantAllocation& a : allocations) {
      for (const topology::QuotaLine& q : a.quota) {
        out.Sample(name, {{"tenant", a.tenant}, {"resource", q.resource}},
                   limit ? q.quota : q.used);
      }
    }
  }
}

std::string AllocationsJson(const topology::ModelState& state,
                            const std::vector<TenantAllocation>& allocations) {
  rapidjson::StringBuffer buffer;
  common::JsonWriter w(buffer);
  const topology::FairShareLedger ledger = topology::MakeLedger(*state.snapshot, *state.policy);
  w.StartObject();
  w.Key("tenants");
  w.StartArray();
  for (const TenantAllocation& a : allocations) {
    w.StartObject();
    w.Key("tenant");
    common::WriteString(w, a.tenant);
    w.Key("tier");
    if (a.tier.empty()) {
      w.Null();
    } else {
      common::WriteString(w, a.tier);
    }
    w.Key("held");
    WriteHeld(w, a.held);
    w.Key("deviceIds");
    w.StartArray();
    for (const std::string& id : TenantDeviceIds(a, *state.snapshot)) common::WriteString(w, id);
    w.EndArray();
    if (!a.quota.empty()) {
      w.Key("quota");
      WriteQuotaLines(w, a.quota);
    }
    if (const topology::TenantShare* share = ledger.Find(a.tenant)) {
      w.Key("fairShare");
      WriteShareJson(w, *share, ledger.items);
    }
    if (!a.claims.empty()) {
      w.Key("claims");
      w.StartArray();
      for (const ClaimAllocation& c : a.claims) WriteClaim(w, c);
      w.EndArray();
    }
    w.Key("nodes");
    w.StartArray();
    for (const NodeAllocation& n : a.nodes) {
      const NodeState* node = state.snapshot->FindNode(n.node);
      w.StartObject();
      w.Key("node");
      common::WriteString(w, n.node);
      w.Key("pool");
      common::WriteString(w, n.pool);
      w.Key("held");
      WriteHeld(w, n.held);
      w.Key("pods");
      w.StartArray();
      for (const auto& pod : n.pods) WritePod(w, *pod, *node);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  WritePartitionedGpus(w, state);
  WriteDeviceAttribution(w, AttributeDevices(state));
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace extender
