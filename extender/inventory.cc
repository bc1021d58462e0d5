#include "extender/inventory.h"

#include <map>
#include <tuple>

#include "common/prometheus_text.h"

namespace extender {

namespace {

absl::string_view KindName(topology::ResourceKind k) {
  switch (k) {
    case topology::ResourceKind::kWholeGpu:
      return "gpu";
    case topology::ResourceKind::kMigInstance:
      return "mig";
    case topology::ResourceKind::kSharedReplica:
      return "replica";
  }
  return "gpu";
}

}  // namespace

void AppendInventoryMetrics(const topology::ModelState& state, common::MetricsText& out) {
  struct Row {
    int64_t allocatable = 0;
    int64_t used = 0;
  };
  // (node, pool, resource, kind) -> counts; pool totals keyed the same way without the node.
  std::map<std::tuple<std::string, std::string, std::string, absl::string_view>, Row> by_node;
  std::map<std::tuple<std::string, std::string, absl::string_view>, Row> by_pool;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> memory;  // node,pool
  std::map<std::string, int> nodes_per_pool;
  int unsettled = 0;
  state.snapshot->ForEachNode([&](const topology::NodeState& n) {
    if (!n.supply.HasGpus()) return;
    const std::string& pool = n.supply.pool;
    ++nodes_per_pool[pool];
    unsettled += !n.supply.mig_unsettled.empty();
    for (const topology::OfferedResource& r : n.supply.resources) {
      Row& row = by_node[{n.facts.name, pool, r.name, KindName(r.kind)}];
      row.allocatable = r.allocatable;
      row.used = n.occupancy.Used(r.name);
      Row& p = by_pool[{pool, r.name, KindName(r.kind)}];
      p.allocatable += r.allocatable;
      p.used += row.used;
      if (r.kind == topology::ResourceKind::kSharedReplica && n.supply.gpu_memory_mib) {
        int64_t total = n.supply.SharedGpuCount(r) * *n.supply.gpu_memory_mib;
        memory[{n.facts.name, pool}] = {total, total - n.occupancy.SharedMemoryUsedMiB()};
      }
    }
  });
  using common::MetricsText;
  out.Family("gpu_tenancy_node_resource_allocatable", MetricsText::kGauge,
             "GPU resource units a node advertises (MIG instances, replicas, whole GPUs).");
  for (const auto& [key, row] : by_node) {
    const auto& [node, pool, resource, kind] = key;
    out.Sample("gpu_tenancy_node_resource_allocatable",
               {{"node", node}, {"pool", pool}, {"resource", resource}, {"kind", kind}},
               row.allocatable);
  }
  out.Family("gpu_tenancy_node_resource_free", MetricsText::kGauge,
             "GPU resource units free on a node after bound and assumed pods.");
  for (const auto& [key, row] : by_node) {
    const auto& [node, pool, resource, kind] = key;
    out.Sample("gpu_tenancy_node_resource_free",
               {{"node", node}, {"pool", pool}, {"resource", resource}, {"kind", kind}},
               std::max<int64_t>(0, row.allocatable - row.used));
  }
  out.Family("gpu_tenancy_pool_resource_free", MetricsText::kGauge,
             "GPU resource units free, summed per pool.");
  for (const auto& [key, row] : by_pool) {
    const auto& [pool, resource, kind] = key;
    out.Sample("gpu_tenancy_pool_resource_free",
               {{"pool", pool}, {"resource", resource}, {"kind", kind}},
               std::max<int64_t>(0, row.allocatable - row.used));
  }
  out.Family("gpu_tenancy_node_shared_memory_free_mib", MetricsText::kGauge,
             "GPU memory (MiB) not promised to pods on a node's shared GPUs.");
  for (const auto& [key, mib] : memory) {
    out.Sample("gpu_tenancy_node_shared_memory_free_mib",
               {{"node", key.first}, {"pool", key.second}}, std::max<int64_t>(0, mib.second));
  }
  out.Family("gpu_tenancy_pool_nodes", MetricsText::kGauge, "GPU nodes per pool.");
  for (const auto& [pool, count] : nodes_per_pool) {
    out.Sample("gpu_tenancy_pool_nodes", {{"pool", pool}}, count);
  }
  out.Family("gpu_tenancy_nodes_mig_unsettled", MetricsText::kGauge,
             "GPU nodes mid-MIG-reconfiguration (not schedulable for GPU pods).");
  out.Sample("gpu_tenancy_nodes_mig_unsettled", {}, unsettled);
}

}  // namespace extender
