#include "extender/gpu_map.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "extender/device_attribution.h"
#include "extender/fair_share_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "topology/device_report.h"
#include "topology/dra/capacity.h"
#include "topology/dra/counters.h"
#include "topology/dra/partitions.h"
#include "topology/fair_share.h"
#include "topology/policy.h"
#include "topology/wellknown.h"

namespace extender {
namespace gpu_map {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr char kUnschedulableTaint[] = "node.kubernetes.io/unschedulable";

const char* KindName(topology::ResourceKind kind) {
  switch (kind) {
    case topology::ResourceKind::kWholeGpu:
      return "gpu";
    case topology::ResourceKind::kMigInstance:
      return "mig";
    case topology::ResourceKind::kSharedReplica:
      return "shared";
  }
  return "gpu";
}

void Str(Writer& w, const char* key, absl::string_view value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

class MapWriter {
 public:
  explicit MapWriter(const topology::ModelState& state) : state_(state), w_(buffer_) {
    const topology::DraState& dra = state.snapshot->dra();
    holders_ = topology::HoldersByDevice(dra);
    for (const auto& [id, holders] : holders_) {
      for (const topology::DraHolder& h : holders) TenantOf(h.claim->namespace_name);
    }
    for (const topology::DraDevice& d : dra.devices()) {
      if (!d.node.empty()) devices_by_node_[d.node].push_back(&d);
    }
    // The same attribution /debug/allocations shows, so the page and the inventory agree.
    attribution_ = AttributeDevices(state);
    for (const AttributedPod& pod : attribution_.pods) {
      reported_[{pod.node, pod.namespace_name, pod.name}] = &pod;
    }
    for (const PhysicalGpu& gpu : attribution_.gpus) gpus_by_node_[gpu.node].push_back(&gpu);
    ledger_ = topology::MakeLedger(*state.snapshot, *state.policy);
    borrowed_ = topology::FindBorrowedPods(*state.snapshot, *state.policy, ledger_);
    if (dra.device_set) {
      for (const auto& [node, partitions] : dra.device_set->partitioned_nodes) {
        for (uint32_t k : topology::DraBlockedDevices(dra, node)) {
          blocked_.insert(&dra.devices()[k]);
        }
      }
    }
  }

  std::string Write() {
    w_.StartObject();
    w_.Key("nodes");
    w_.StartArray();
    for (const std::string& name : state_.snapshot->SortedNodeNames()) {
      const topology::NodeState* node = state_.snapshot->FindNode(name);
      auto dra = devices_by_node_.find(name);
      if (!node || (!node->supply.HasGpus() && dra == devices_by_node_.end())) continue;
      WriteNode(*node, dra == devices_by_node_.end() ? nullptr : &dra->second);
    }
    w_.EndArray();
    w_.Key("tenants");
    w_.StartArray();
    for (const std::string& t : tenants_) w_.String(t.c_str());
    w_.EndArray();
    w_.Key("pools");
    w_.StartArray();
    for (const std::string& p : pools_) w_.String(p.c_str());
    w_.EndArray();
    // Fair sharing: each fair-sharing tenant's guarantee, holdings, borrowing and lending.
    if (!ledger_.tenants.empty()) {
      w_.Key("fairShare");
      w_.StartArray();
      for (const topology::TenantShare& share : ledger_.tenants) {
        WriteShareJson(w_, share, ledger_.items);
      }
      w_.EndArray();
    }
    w_.EndObject();
    return buffer_.GetString();
  }

 private:
  const std::string& TenantOf(const std::string& namespace_name) {
    auto it = tenant_of_.find(namespace_name);
    if (it == tenant_of_.end()) {
      std::string tenant = topology::ResolveTenant(*state_.policy, namespace_name,
                                                   state_.snapshot->NamespaceLabels(namespace_name))
                               .name;
      tenants_.insert(tenant);
      it = tenant_of_.emplace(namespace_name, std::move(tenant)).first;
    }
    return it->second;
  }

  void WriteNode(const topology::NodeState& node,
                 const std::vector<const topology::DraDevice*>* dra) {
    const topology::NodeSupply& supply = node.supply;
    if (!supply.pool.empty()) pools_.insert(supply.pool);
    w_.StartObject();
    Str(w_, "name", node.facts.name);
    Str(w_, "pool", supply.pool);
    Str(w_, "mode", supply.pool_mode ? topology::ModeName(*supply.pool_mode) : "");
    Str(w_, "product", supply.product);
    Str(w_, "model", supply.model ? supply.model->model : "");
    w_.Key("gpus");
    auto count = node.facts.labels.find(std::string(topology::kGpuCountLabel));
    int gpus = 0;
    if (count != node.facts.labels.end() && absl::SimpleAtoi(count->second, &gpus)) {
      w_.Int(gpus);
    } else {
      w_.Null();
    }
    Str(w_, "migState", supply.mig_unsettled);
    w_.Key("cordoned");
    w_.Bool(std::any_of(node.facts.taints.begin(), node.facts.taints.end(),
                        [](const topology::Taint& t) { return t.key == kUnschedulableTaint; }));
    w_.Key("resources");
    w_.StartArray();
    for (const topology::OfferedResource& r : supply.resources) WriteResource(node, r);
    w_.EndArray();
    w_.Key("draDevices");
    w_.StartArray();
    if (dra) {
      for (const topology::DraDevice* d : *dra) WriteDevice(*d);
    }
    w_.EndArray();
    WritePhysicalGpus(node.facts.name);
    w_.EndObject();
  }

  // The physical GPUs the node agent's believed reports name on this node, with their tenants.
  void WritePhysicalGpus(const std::string& node) {
    w_.Key("physicalGpus");
    w_.StartArray();
    auto gpus = gpus_by_node_.find(node);
    if (gpus != gpus_by_node_.end()) {
      for (const PhysicalGpu* gpu : gpus->second) {
        w_.StartObject();
        Str(w_, "id", gpu->id);
        Str(w_, "sharing", gpu->sharing);
        for (auto [key, values] : {std::pair{"tenants", &gpu->tenants}, {"pods", &gpu->pods}}) {
          w_.Key(key);
          w_.StartArray();
          for (const std::string& v : *values) w_.String(v.c_str());
          w_.EndArray();
        }
        w_.EndObject();
      }
    }
    w_.EndArray();
  }

  // The devices of `resource` the hold's believed report names; none without one.
  void WriteReportedDevices(const std::string& node, const topology::PodHold& hold,
                            const std::string& resource) {
    w_.Key("devices");
    w_.StartArray();
    auto pod = reported_.find({node, hold.namespace_name, hold.name});
    if (pod != reported_.end()) {
      for (const topology::ReportedDevice& d : pod->second->devices) {
        if (d.resource != resource) continue;
        w_.StartObject();
        Str(w_, "id", d.id);
        Str(w_, "gpu", d.gpu);
        Str(w_, "sharing", SharingOf(d));
        w_.EndObject();
      }
    }
    w_.EndArray();
  }

  void WriteResource(const topology::NodeState& node, const topology::OfferedResource& r) {
    w_.StartObject();
    Str(w_, "name", r.name);
    Str(w_, "kind", KindName(r.kind));
    Str(w_, "profile", r.mig_profile);
    w_.Key("allocatable");
    w_.Int64(r.allocatable);
    w_.Key("used");
    w_.Int64(node.occupancy.Used(r.name));
    w_.Key("holders");
    w_.StartArray();
    for (const auto& hold : node.holds) {
      const int64_t count = hold->demand.devices.Get(r.name);
      if (count <= 0) continue;
      w_.StartObject();
      Str(w_, "tenant", TenantOf(hold->namespace_name));
      Str(w_, "namespace", hold->namespace_name);
      Str(w_, "pod", hold->name);
      w_.Key("count");
      w_.Int64(count);
      // The GPU its memory counts on: where the node agent saw it, else where bind put it.
      w_.Key("gpuIndex");
      if (std::optional<int> gpu = topology::HeldSharedGpu(*hold, node.facts)) {
        w_.Int(*gpu);
      } else {
        w_.Null();
      }
      w_.Key("assumed");
      w_.Bool(hold->assumed);
      // Fair sharing: among its tenant's newest pods beyond its guarantee, so reclaimable.
      if (!ledger_.tenants.empty()) {
        w_.Key("borrowed");
        w_.Bool(borrowed_.contains(hold->uid));
      }
      WriteReportedDevices(node.facts.name, *hold, r.name);
      w_.EndObject();
    }
    w_.EndArray();
    w_.EndObject();
  }

  void WriteDevice(const topology::DraDevice& d) {
    w_.StartObject();
    Str(w_, "device", d.Id().ToString());
    Str(w_, "type", d.type);
    Str(w_, "profile", d.profile);
    Str(w_, "uuid", d.uuid);
    // The claim that holds the device whole (the first, by namespace and name), if any; the
    // claims holding shares of a multi-allocatable device are its `shares`.
    auto found = holders_.find(d.Id());
    static const std::vector<topology::DraHolder> kNone;
    const std::vector<topology::DraHolder>& holders =
        found == holders_.end() ? kNone : found->second;
    auto whole = std::find_if(holders.begin(), holders.end(), [&](const topology::DraHolder& h) {
      return !topology::IsShare(d, *h.result);
    });
    const topology::DraClaim* owner = whole == holders.end() ? nullptr : whole->claim;
    Str(w_, "tenant", owner ? TenantOf(owner->namespace_name) : "");
    Str(w_, "claim", owner ? owner->namespace_name + "/" + owner->name : "");
    w_.Key("allowMultipleAllocations");
    w_.Bool(d.allow_multiple_allocations);
    WriteShares(d, holders);
    // A partitionable device no claim holds whose shared counters held devices use up.
    w_.Key("blocked");
    w_.Bool(blocked_.contains(&d));
    // Where on its GPU a partitionable placement sits (empty for other devices).
    w_.Key("memorySlices");
    w_.StartArray();
    if (!d.consumes_counters.empty()) {
      for (int i : topology::MemorySlices(d, d.consumes_counters.front().counter_set)) w_.Int(i);
    }
    w_.EndArray();
    w_.EndObject();
  }

  // A multi-allocatable device's shares, each with its tenant, claim, share ID and what it
  // consumes; and per capacity, its value and what the shares consume of it.
  void WriteShares(const topology::DraDevice& d, const std::vector<topology::DraHolder>& holders) {
    topology::DraCapacity consumed;
    w_.Key("shares");
    w_.StartArray();
    for (const topology::DraHolder& h : holders) {
      if (!topology::IsShare(d, *h.result)) continue;
      topology::AddCapacity(consumed, h.result->consumed_capacity, +1);
      w_.StartObject();
      Str(w_, "tenant", TenantOf(h.claim->namespace_name));
      Str(w_, "claim", h.claim->namespace_name + "/" + h.claim->name);
      Str(w_, "shareID", h.result->share_id);
      w_.Key("consumedCapacity");
      w_.StartObject();
      for (const auto& [name, amount] : h.result->consumed_capacity) {
        Str(w_, name.c_str(), topology::CapacityText(amount));
      }
      w_.EndObject();
      w_.EndObject();
    }
    w_.EndArray();
    w_.Key("capacity");
    w_.StartArray();
    if (d.allow_multiple_allocations) {
      for (const topology::DraPublishedCapacity& c : d.published_capacity) {
        auto used = consumed.find(c.name);
        w_.StartObject();
        Str(w_, "name", c.name);
        Str(w_, "value", topology::CapacityText(c.value));
        Str(w_, "consumed",
            topology::CapacityText(used == consumed.end() ? topology::Quantity() : used->second));
        w_.EndObject();
      }
    }
    w_.EndArray();
  }

  const topology::ModelState& state_;
  rapidjson::StringBuffer buffer_;
  Writer w_;
  std::map<std::string, std::string> tenant_of_;  // namespace -> tenant
  std::set<std::string> tenants_, pools_;
  // Per device, the allocated claims' results that name it.
  std::map<topology::DraDeviceId, std::vector<topology::DraHolder>> holders_;
  std::set<const topology::DraDevice*> blocked_;
  std::map<std::string, std::vector<const topology::DraDevice*>> devices_by_node_;
  DeviceAttribution attribution_;
  // (node, namespace, pod) -> its attribution, into attribution_.
  std::map<std::tuple<std::string, std::string, std::string>, const AttributedPod*> reported_;
  std::map<std::string, std::vector<const PhysicalGpu*>> gpus_by_node_;
  topology::FairShareLedger ledger_;
  topology::BorrowedPods borrowed_;
};

}  // namespace gpu_map

std::string GpuMapJson(const topology::ModelState& state) {
  return gpu_map::MapWriter(state).Write();
}

}  // namespace extender
