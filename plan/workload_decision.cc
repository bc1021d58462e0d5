#include "plan/workload_decision.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "plan/mig_profile_choice.h"
#include "plan/quantity_text.h"

namespace plan {
namespace {

using topology::Catalog;
using topology::GpuModel;

// Which fleet GPU type a workload runs on: the one it names, else the first that suits the
// mechanism it would get on a MIG GPU.
absl::StatusOr<int> PickType(const Plan& fleet, const Catalog& catalog, const WorkloadSpec& w,
                             const MemorySizing& sizing) {
  const std::vector<GpuType>& types = fleet.gpu_types;
  if (!w.gpu.empty()) {
    const GpuModel* wanted = catalog.FindModel(w.gpu);
    if (!wanted) wanted = catalog.MatchProduct(w.gpu);
    for (size_t t = 0; t < types.size(); ++t) {
      if (types[t].name == w.gpu || (wanted && types[t].model == wanted))
        return static_cast<int>(t);
    }
    std::vector<std::string> names;
    for (const GpuType& t : types) names.push_back(t.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu \"", w.gpu, "\" is not in the fleet (it has ", absl::StrJoin(names, ", "), ")"));
  }
  Mechanism ideal = ChooseMechanism(w, "", true).mechanism;
  for (size_t t = 0; t < types.size(); ++t) {
    const GpuType& type = types[t];
    switch (ideal) {
      case Mechanism::kMig:
        if (type.HasMig()) return static_cast<int>(t);
        break;
      case Mechanism::kTimeslice:
      case Mechanism::kMps:
        if (!type.HasMig()) return static_cast<int>(t);
        break;
      case Mechanism::kExclusive:
        if (type.memory_mib && *type.memory_mib * w.max_gpus >= sizing.total_mib) {
          return static_cast<int>(t);
        }
        break;
      case Mechanism::kVmBoundary:
        return 0;
    }
  }
  return 0;
}

absl::Status NoTotalMemory(const WorkloadSpec& spec, const GpuType& type) {
  return WithWorkload(spec, absl::FailedPreconditionError(absl::StrCat(
                                "cannot size on ", type.name,
                                ": the catalog has no total memory for it; give the fleet "
                                "entry a memory")));
}

// A MIG workload gets the smallest profile that holds it, or whole GPUs when none does.
absl::Status RoundToProfile(const GpuType& type, WorkloadPlan& wp) {
  absl::StatusOr<ProfileChoice> profile = ChooseProfile(*type.model, wp.sizing.total_bytes);
  if (!profile.ok()) return WithWorkload(wp.spec, profile.status());
  wp.rounding = profile->explanation;
  if (profile->profile) {
    wp.profile = profile->profile;
  } else {
    wp.mechanism = Mechanism::kExclusive;
    wp.reasons.emplace_back(
        "no MIG profile short of the whole card holds it, so it gets whole GPUs");
  }
  return absl::OkStatus();
}

absl::Status RoundToWholeGpus(const GpuType& type, WorkloadPlan& wp) {
  const WorkloadSpec& spec = wp.spec;
  if (!type.memory_mib) return NoTotalMemory(spec, type);
  int gpus = CeilDiv(wp.sizing.total_mib, *type.memory_mib);
  if (gpus > spec.max_gpus) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "workload \"", spec.name, "\" cannot fit: it needs ", GiBText(wp.sizing.total_bytes, true),
        ", more than ", spec.max_gpus == 1 ? "one " : absl::StrCat(spec.max_gpus, " x "), type.name,
        " holds (", MibText(*type.memory_mib * spec.max_gpus, false), "), and maxGpus is ",
        spec.max_gpus, spec.max_gpus == 1 ? " (no multi-GPU)" : "", ": allow maxGpus: ", gpus,
        " or shrink it"));
  }
  wp.gpus_per_replica = gpus;
  std::string whole =
      gpus == 1 ? absl::StrCat("1 whole ", type.name, " (", MibText(*type.memory_mib, false), ")")
                : absl::StrCat(gpus, " whole ", type.name, " (", gpus, " x ",
                               MibText(*type.memory_mib, false), ", memory split across them)");
  wp.rounding = wp.rounding.empty()
                    ? absl::StrCat("needs ", GiBText(wp.sizing.total_bytes, true), " -> ", whole)
                    : absl::StrCat(wp.rounding, " -> ", whole);
  return absl::OkStatus();
}

absl::Status RoundToShare(const GpuType& type, absl::string_view memory_annotation,
                          WorkloadPlan& wp) {
  const WorkloadSpec& spec = wp.spec;
  if (!type.memory_mib) return NoTotalMemory(spec, type);
  if (wp.sizing.total_mib > *type.memory_mib) {
    return absl::ResourceExhaustedError(
        absl::StrCat("workload \"", spec.name, "\" cannot fit: it needs ",
                     GiBText(wp.sizing.total_bytes, true), ", more than a whole ", type.name, " (",
                     MibText(*type.memory_mib, false), "), and a shared GPU cannot span cards"));
  }
  wp.rounding =
      absl::StrCat("needs ", GiBText(wp.sizing.total_bytes, true), " of a shared ", type.name, " (",
                   MibText(*type.memory_mib, false), "); ",
                   wp.mechanism == Mechanism::kMps
                       ? "MPS caps each client at the GPU's memory / replicas"
                       : absl::StrCat("declared with ", memory_annotation,
                                      " so the extender keeps the card's sum under its memory"));
  return absl::OkStatus();
}

// Mirrored workloads put the same number of replicas in each zone of their GPU type.
absl::Status AssignReplicas(const Plan& fleet, const std::vector<int>& gpu_type, int type_index,
                            WorkloadPlan& wp) {
  const WorkloadSpec& spec = wp.spec;
  if (!spec.mirrored || wp.mechanism == Mechanism::kVmBoundary) {
    wp.replicas = std::max(1, spec.replicas);
    wp.replica_zones.assign(wp.replicas, "");
    return absl::OkStatus();
  }
  std::vector<std::string> zones;
  for (size_t g = 0; g < fleet.gpus.size(); ++g) {
    const std::string& z = fleet.gpus[g].zone;
    if (gpu_type[g] == type_index && !z.empty() &&
        std::find(zones.begin(), zones.end(), z) == zones.end()) {
      zones.push_back(z);
    }
  }
  if (zones.size() < 2) {
    return WithWorkload(spec, absl::InvalidArgumentError(absl::StrCat(
                                  "mirrored, but the fleet's ", fleet.gpu_types[type_index].name,
                                  " GPUs are in fewer than two zones (give nodes a zone)")));
  }
  wp.replicas = spec.replicas > 0 ? spec.replicas : static_cast<int>(zones.size());
  if (wp.replicas % static_cast<int>(zones.size()) != 0) {
    return WithWorkload(
        spec, absl::InvalidArgumentError(absl::StrCat(
                  "mirrored over ", zones.size(), " zones (", absl::StrJoin(zones, ", "),
                  "), so replicas must be a multiple of ", zones.size(), ", not ", wp.replicas)));
  }
  for (int r = 0; r < wp.replicas; ++r) wp.replica_zones.push_back(zones[r % zones.size()]);
  wp.reasons.push_back(absl::StrCat("mirrored: ", wp.replicas / zones.size(),
                                    " replica(s) in each of zones ", absl::StrJoin(zones, ", ")));
  return absl::OkStatus();
}

void SetBaselines(WorkloadPlan& wp) {
  switch (wp.mechanism) {
    case Mechanism::kVmBoundary:
      break;
    case Mechanism::kExclusive:
      wp.baseline_gpus = wp.gpus_per_replica;
      wp.baseline_replica_gpus = wp.gpus_per_replica * wp.replicas;
      break;
    default:
      wp.baseline_gpus = 1;
      wp.baseline_replica_gpus = wp.replicas;
  }
}

}  // namespace

absl::Status WithWorkload(const WorkloadSpec& w, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("workload \"", w.name, "\": ", s.message()));
}

absl::StatusOr<WorkloadDecision> DecideWorkload(const WorkloadSpec& spec, const Plan& fleet,
                                                const std::vector<int>& gpu_type,
                                                const Catalog& catalog) {
  if (spec.max_gpus < 1)
    return WithWorkload(spec, absl::InvalidArgumentError("maxGpus must be >= 1"));
  if (spec.replicas < 0)
    return WithWorkload(spec, absl::InvalidArgumentError("replicas must be >= 1"));

  WorkloadDecision out;
  WorkloadPlan& wp = out.plan;
  wp.spec = spec;
  if (wp.spec.namespace_name.empty()) wp.spec.namespace_name = spec.tenant;
  absl::StatusOr<MemorySizing> sizing = SizeMemory(spec.memory);
  if (!sizing.ok()) return WithWorkload(spec, sizing.status());
  wp.sizing = *std::move(sizing);
  absl::StatusOr<int> type_index = PickType(fleet, catalog, spec, wp.sizing);
  if (!type_index.ok()) return WithWorkload(spec, type_index.status());
  out.gpu_type = *type_index;
  const GpuType& type = fleet.gpu_types[*type_index];
  MechanismChoice choice = ChooseMechanism(spec, type.name, type.HasMig());
  wp.mechanism = choice.mechanism;
  wp.reasons = std::move(choice.reasons);
  wp.warnings = std::move(choice.warnings);

  if (wp.mechanism != Mechanism::kVmBoundary) wp.gpu_type = type.name;
  // A MIG workload may become exclusive here, so the order of these matters.
  if (wp.mechanism == Mechanism::kMig) RETURN_IF_ERROR(RoundToProfile(type, wp));
  if (wp.mechanism == Mechanism::kExclusive) RETURN_IF_ERROR(RoundToWholeGpus(type, wp));
  if (wp.mechanism == Mechanism::kTimeslice || wp.mechanism == Mechanism::kMps) {
    RETURN_IF_ERROR(RoundToShare(type, fleet.memory_annotation, wp));
  }
  RETURN_IF_ERROR(AssignReplicas(fleet, gpu_type, *type_index, wp));
  SetBaselines(wp);
  return out;
}

}  // namespace plan
