#include "plan/mechanism_choice.h"

#include "absl/strings/str_cat.h"

namespace plan {

absl::string_view MechanismName(Mechanism m) {
  switch (m) {
    case Mechanism::kMig:
      return "mig";
    case Mechanism::kExclusive:
      return "exclusive";
    case Mechanism::kTimeslice:
      return "timeslice";
    case Mechanism::kMps:
      return "mps";
    case Mechanism::kVmBoundary:
      return "vm";
  }
  return "unknown";
}

MechanismChoice ChooseMechanism(const WorkloadSpec& w, absl::string_view gpu_name,
                                bool gpu_has_mig) {
  MechanismChoice c;
  if (w.vm_boundary) {
    c.mechanism = Mechanism::kVmBoundary;
    c.reasons.push_back(absl::StrCat("tenant ", w.tenant, " requires a VM boundary"));
    c.warnings.push_back(absl::StrCat(
        w.name,
        ": a VM boundary means NVIDIA vGPU (NVIDIA AI Enterprise, licensed per concurrent "
        "vGPU) or whole-GPU passthrough to a VM (nvidia.com/gpu.workload.config=vm-vgpu or "
        "vm-passthrough on dedicated nodes); a scheduler cannot provide it, so this plan places "
        "nothing for it"));
    return c;
  }
  if (w.training) {
    c.mechanism = Mechanism::kExclusive;
    c.reasons.emplace_back(
        "training: needs a whole GPU's memory bandwidth, and MIG instances have no GPU-to-GPU P2P");
    return c;
  }
  if (w.trust == Trust::kUntrusted) {
    if (gpu_has_mig) {
      c.mechanism = Mechanism::kMig;
      c.reasons.emplace_back(
          "untrusted tenant: needs a hardware boundary; a MIG instance has its own SMs, L2, "
          "memory and fault domain");
    } else {
      c.mechanism = Mechanism::kExclusive;
      c.reasons.push_back(absl::StrCat("untrusted tenant on ", gpu_name,
                                       ", which has no MIG: a whole GPU is the only hardware "
                                       "boundary"));
      c.warnings.push_back(absl::StrCat(
          gpu_name, " has no MIG: untrusted workload ", w.name,
          " gets whole GPUs, because time-slicing and MPS share one memory heap and fault domain"));
    }
    return c;
  }
  if (w.latency == Latency::kSla) {
    if (gpu_has_mig) {
      c.mechanism = Mechanism::kMig;
      c.reasons.emplace_back(
          "SLA-bound inference: a MIG instance's own SMs, L2 and memory bandwidth keep neighbours "
          "from stretching its latency");
    } else {
      c.mechanism = w.sharing == SharingHint::kTimeslice ? Mechanism::kTimeslice : Mechanism::kMps;
      c.reasons.push_back(
          absl::StrCat("SLA-bound on ", gpu_name, ", which has no MIG: falls back to sharing (",
                       c.mechanism == Mechanism::kMps ? "MPS caps its memory and SM share"
                                                      : "time-slicing, as asked",
                       ")"));
      c.warnings.push_back(absl::StrCat(
          gpu_name, " has no MIG: ", w.name,
          " shares a GPU with no hardware boundary (one memory heap, one fault domain); a "
          "neighbour's fault or burst can break its SLA"));
    }
    return c;
  }
  if (w.sharing == SharingHint::kMps) {
    c.mechanism = Mechanism::kMps;
    c.reasons.emplace_back(
        "trusted best-effort work: MPS runs the clients concurrently, each capped at the GPU's "
        "memory / replicas and an equal SM share");
  } else {
    c.mechanism = Mechanism::kTimeslice;
    c.reasons.emplace_back(
        "trusted, bursty or best-effort work: time-slicing lends it the whole GPU between bursts; "
        "its memory is accounted by the extender, not enforced");
  }
  if (gpu_has_mig)
    c.reasons.push_back(absl::StrCat("the ", gpu_name, " it shares runs with MIG disabled"));
  if (!gpu_has_mig && !gpu_name.empty()) {
    c.warnings.push_back(
        absl::StrCat(gpu_name, " has no MIG: ", w.name, " shares a GPU with no hardware boundary"));
  }
  return c;
}

}  // namespace plan
