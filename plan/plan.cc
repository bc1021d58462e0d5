#include "plan/plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "plan/fleet_packing.h"
#include "plan/quantity_text.h"
#include "plan/workload_decision.h"

namespace plan {
namespace {

using topology::Catalog;
using topology::GpuModel;

// Per entry of Plan::gpus: its index into Plan::gpu_types and into Plan::nodes.
struct FleetIndex {
  std::vector<int> gpu_type;
  std::vector<int> gpu_node;
};

// The GPU type of a fleet entry, added to plan.gpu_types when it is new; its index there.
absl::StatusOr<int> FindOrAddGpuType(const FleetNode& node, const Catalog& catalog, Plan& plan) {
  const GpuModel* model = catalog.FindModel(node.gpu);
  if (!model) model = catalog.MatchProduct(node.gpu);
  GpuType type{model ? model->model : node.gpu, model, node.memory_mib};
  if (!type.memory_mib && model) type.memory_mib = model->total_memory_mib;
  if (!model && !type.memory_mib) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fleet: node ", node.name, ": GPU \"", node.gpu,
        "\" is not in the MIG catalog; give its memory (e.g. memory: 24Gi) and it is planned "
        "without MIG"));
  }
  for (size_t t = 0; t < plan.gpu_types.size(); ++t) {
    if (plan.gpu_types[t].name != type.name) continue;
    std::optional<int64_t>& known = plan.gpu_types[t].memory_mib;
    if (type.memory_mib) {
      if (known && node.memory_mib && *known != *node.memory_mib) {
        return absl::InvalidArgumentError(absl::StrCat("fleet: nodes disagree on the memory of ",
                                                       type.name, " (", *known, " and ",
                                                       *node.memory_mib, " MiB)"));
      }
      if (!known || node.memory_mib) known = type.memory_mib;
    }
    return static_cast<int>(t);
  }
  plan.gpu_types.push_back(type);
  return static_cast<int>(plan.gpu_types.size()) - 1;
}

// The fleet's GPU types, nodes and GPUs, all idle.
absl::StatusOr<FleetIndex> ReadFleet(const PlanInput& input, const Catalog& catalog, Plan& plan) {
  FleetIndex index;
  std::set<std::string> node_names;
  for (const FleetNode& node : input.fleet) {
    if (node.name.empty()) return absl::InvalidArgumentError("fleet: a node has no name");
    if (!node_names.insert(node.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("fleet: node ", node.name, " is listed twice"));
    }
    if (node.count < 1 || node.count > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("fleet: node ", node.name, ": count must be 1..64"));
    }
    ASSIGN_OR_RETURN(int t, FindOrAddGpuType(node, catalog, plan));
    NodePlan np;
    np.name = node.name;
    np.zone = node.zone;
    for (int i = 0; i < node.count; ++i) {
      np.gpus.push_back(static_cast<int>(plan.gpus.size()));
      GpuPlan gpu;
      gpu.node = node.name;
      gpu.zone = node.zone;
      gpu.index = i;
      gpu.gpu_type = plan.gpu_types[t].name;
      gpu.model = plan.gpu_types[t].model;
      plan.gpus.push_back(std::move(gpu));
      index.gpu_type.push_back(t);
      index.gpu_node.push_back(static_cast<int>(plan.nodes.size()));
    }
    plan.nodes.push_back(std::move(np));
  }
  for (size_t g = 0; g < plan.gpus.size(); ++g) {
    plan.gpus[g].memory_mib = plan.gpu_types[index.gpu_type[g]].memory_mib;
  }
  return index;
}

// Workload names are unique and a tenant has one trust, whatever its workloads say. Checked
// one workload at a time, before its decisions, so the first bad workload is the one reported.
class WorkloadNameCheck {
 public:
  [[nodiscard]] absl::Status Add(const WorkloadSpec& spec) {
    if (spec.name.empty()) return absl::InvalidArgumentError("workloads: a workload has no name");
    if (!names_.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload \"", spec.name, "\" is listed twice"));
    }
    if (spec.tenant.empty()) return WithWorkload(spec, absl::InvalidArgumentError("no tenant"));
    auto [it, fresh] = tenant_trust_.emplace(spec.tenant, std::make_pair(spec.trust, spec.name));
    if (!fresh && it->second.first != spec.trust) {
      return absl::InvalidArgumentError(
          absl::StrCat("tenant ", spec.tenant, ": workloads \"", it->second.second, "\" and \"",
                       spec.name, "\" disagree on trust; a tenant has one tier"));
    }
    return absl::OkStatus();
  }

 private:
  std::set<std::string> names_;
  std::map<std::string, std::pair<Trust, std::string>> tenant_trust_;  // first workload's
};

// One packing item per replica of a placed workload.
void AddReplicas(const WorkloadDecision& decision, int workload_index,
                 std::vector<PackingItem>& items) {
  const WorkloadPlan& wp = decision.plan;
  if (wp.mechanism == Mechanism::kVmBoundary) return;
  for (int r = 0; r < wp.replicas; ++r) {
    PackingItem item;
    item.holder = Holder{workload_index, r};
    item.zone = wp.replica_zones[r];
    item.type = decision.gpu_type;
    item.mechanism = wp.mechanism;
    item.profile = wp.profile;
    item.gpus = wp.gpus_per_replica;
    item.memory_mib = wp.sizing.total_mib;
    items.push_back(std::move(item));
  }
}

// GPUs used, the lower bound, and a warning naming the idle GPUs.
void AddTotals(const std::vector<int>& gpu_type, Plan& plan) {
  // Totals and a lower bound for the mechanisms chosen: whole GPUs as they are, MIG by memory
  // and compute slices per model, shared clients by memory per GPU type.
  std::map<int, std::pair<int, int>> mig_slices;      // type -> (memory, compute)
  std::map<std::pair<int, int>, int64_t> shared_mib;  // (type, use) -> MiB
  for (size_t g = 0; g < plan.gpus.size(); ++g) {
    const GpuPlan& gpu = plan.gpus[g];
    if (gpu.use == GpuUse::kIdle) continue;
    ++plan.gpus_used;
    if (gpu.use == GpuUse::kExclusive) ++plan.lower_bound;
    if (gpu.use == GpuUse::kMig) {
      for (const PlannedInstance& inst : gpu.instances) {
        mig_slices[gpu_type[g]].first += inst.profile->memory_slices;
        mig_slices[gpu_type[g]].second += inst.profile->compute_slices;
      }
    }
    if (gpu.use == GpuUse::kTimeslice || gpu.use == GpuUse::kMps) {
      shared_mib[{gpu_type[g], static_cast<int>(gpu.use)}] += gpu.shared_memory_mib;
    }
  }
  for (const auto& [t, slices] : mig_slices) {
    const GpuModel& m = *plan.gpu_types[t].model;
    plan.lower_bound +=
        std::max(CeilDiv(slices.first, m.memory_slices), CeilDiv(slices.second, m.compute_slices));
  }
  for (const auto& [key, mib] : shared_mib) {
    plan.lower_bound += CeilDiv(mib, *plan.gpu_types[key.first].memory_mib);
  }
  std::vector<std::string> idle;
  for (const GpuPlan& gpu : plan.gpus) {
    if (gpu.use == GpuUse::kIdle) idle.push_back(absl::StrCat(gpu.node, "/", gpu.index));
  }
  if (!idle.empty()) {
    plan.warnings.push_back(
        absl::StrCat(Plural(static_cast<int64_t>(idle.size()), "GPU stays", "GPUs stay"),
                     " idle: ", absl::StrJoin(idle, ", ")));
  }
}

}  // namespace

absl::string_view GpuUseName(GpuUse use) {
  switch (use) {
    case GpuUse::kIdle:
      return "idle";
    case GpuUse::kMig:
      return "mig";
    case GpuUse::kExclusive:
      return "exclusive";
    case GpuUse::kTimeslice:
      return "timeslice";
    case GpuUse::kMps:
      return "mps";
  }
  return "unknown";
}

absl::StatusOr<Plan> MakePlan(const PlanInput& input, const Catalog& catalog) {
  Plan plan;
  plan.canary_profile = input.canary_profile;
  plan.memory_annotation = input.memory_annotation;
  if (input.fleet.empty()) return absl::InvalidArgumentError("fleet: no nodes");
  if (input.workloads.empty()) return absl::InvalidArgumentError("workloads: none given");
  ASSIGN_OR_RETURN(FleetIndex fleet, ReadFleet(input, catalog, plan));

  std::vector<PackingItem> items;
  WorkloadNameCheck names;
  for (const WorkloadSpec& spec : input.workloads) {
    RETURN_IF_ERROR(names.Add(spec));
    ASSIGN_OR_RETURN(WorkloadDecision decision,
                     DecideWorkload(spec, plan, fleet.gpu_type, catalog));
    AddReplicas(decision, static_cast<int>(plan.workloads.size()), items);
    plan.baseline_gpus += decision.plan.baseline_gpus;
    plan.baseline_replica_gpus += decision.plan.baseline_replica_gpus;
    plan.workloads.push_back(std::move(decision.plan));
  }
  RETURN_IF_ERROR(PackFleet(std::move(items), fleet.gpu_type, fleet.gpu_node, plan));
  AddTotals(fleet.gpu_type, plan);
  return plan;
}

}  // namespace plan
