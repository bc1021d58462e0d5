// Who holds what: the pods each node's occupancy adds up (NodeState::holds), grouped by the
// tenant their namespace resolves to. Two views of one walk over an immutable snapshot:
//   - Prometheus gauges per tenant and tier (MIG instances per profile, shared replicas, whole
//     GPUs, GPU memory, pods), and per tenant its quota and what is used of it. Labels are tenant,
//     tier and profile names only, never pod names, so cardinality is bounded by the policy and the
//     catalog;
//   - the JSON inventory served at GET /debug/allocations: tenant -> node -> pods, with the
//     devices, MIG profile, shared GPU index and memory of each, and the device IDs the node
//     agent reported (extender/device_attribution.h: per tenant, per pod, per physical GPU,
//     and the pods whose report disagrees); and tenant -> DRA claim ->
//     devices (driver, pool, name, UUID, MIG profile, memory) with the pods it is reserved for;
//     a partitionable device also names the GPU (counter set) it is a slice of and its memory
//     slices, and `partitionedGpus` lists per such GPU the placements held, blocked and still
//     cuttable (topology/dra/partitions.h).
// Both are computed from the same records the scheduler decides on, so they cannot disagree
// with the free counts in /metrics. Pure: no I/O.
#ifndef GPU_TENANCY_EXTENDER_ALLOCATIONS_H_
#define GPU_TENANCY_EXTENDER_ALLOCATIONS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/prometheus_text.h"
#include "rapidjson/rapidjson.h"
#include "topology/dra/model.h"
#include "topology/occupancy.h"
#include "topology/quota.h"
#include "topology/snapshot.h"

namespace extender {

// What one tenant holds, summed over the fleet (or over one node).
struct Held {
  std::map<std::string, int64_t> mig_instances;  // by MIG profile ("1g.10gb")
  int64_t shared_replicas = 0;
  int64_t gpus = 0;            // whole GPUs
  int64_t gpu_memory_mib = 0;  // dedicated (MIG instance or GPU) plus promised shared memory
  int64_t pods = 0;
};

struct NodeAllocation {
  std::string node;
  std::string pool;
  Held held;
  std::vector<std::shared_ptr<const topology::PodHold>> pods;  // sorted by namespace, name
};

// An allocated DRA claim and the devices it holds, counted once per claim however many pods
// reserve it. Pointers into the snapshot the allocations were computed from.
struct ClaimAllocation {
  const topology::DraClaim* claim = nullptr;
  std::vector<const topology::DraDevice*> devices;
  size_t unpublished = 0;  // results whose device no current slice publishes
};

struct TenantAllocation {
  std::string tenant;  // "unknown" for namespaces no tenant claims
  std::string tier;    // empty when the policy denies the tenant GPUs
  Held held;
  // The tenant's quota items with what is used of each, in quota units (empty: no quota).
  std::vector<topology::QuotaLine> quota;
  std::vector<NodeAllocation> nodes;    // sorted by node name
  std::vector<ClaimAllocation> claims;  // sorted by namespace, name
  // DRA devices its claims hold, by device type and MIG profile ("" for whole GPUs).
  std::map<std::pair<std::string, std::string>, int64_t> dra_devices;
};

// Every policy tenant (holding or not), then any other tenant a pod resolves to; by name.
std::vector<TenantAllocation> Allocations(const topology::ModelState& state);

void AppendTenantMetrics(const std::vector<TenantAllocation>& allocations,
                         common::MetricsText& out);

// [{"resource": "nvidia.com/gpu", "quota": 3, "used": 2}, ...] to any rapidjson writer (the
// inventory here, explain's -o json).
template <typename JsonWriter>
void WriteQuotaLines(JsonWriter& w, const std::vector<topology::QuotaLine>& lines) {
  w.StartArray();
  for (const topology::QuotaLine& q : lines) {
    w.StartObject();
    w.Key("resource");
    w.String(q.resource.data(), static_cast<rapidjson::SizeType>(q.resource.size()));
    w.Key("quota");
    w.Int64(q.quota);
    w.Key("used");
    w.Int64(q.used);
    w.EndObject();
  }
  w.EndArray();
}
std::string AllocationsJson(const topology::ModelState& state,
                            const std::vector<TenantAllocation>& allocations);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_ALLOCATIONS_H_
