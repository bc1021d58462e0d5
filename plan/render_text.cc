// The text a person reads: every line comes from the plan document, the configuration
// snippets from the same tree as -o yaml.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "plan/render.h"
#include "topology/wellknown.h"

namespace plan {
namespace {

std::string Heading(absl::string_view title) {
  return absl::StrCat("\n", title, "\n", std::string(title.size(), '-'), "\n");
}

// Right-aligns `text` in `width` columns (never cutting it).
std::string Pad(size_t width, absl::string_view text) {
  return std::string(width - std::min(width, text.size()), ' ');
}

std::string HolderName(const Plan& plan, const Holder& h) {
  if (h.canary()) return "canary";
  const WorkloadPlan& w = plan.workloads[h.workload];
  if (w.replicas == 1) return w.spec.name;
  return absl::StrCat(w.spec.name, " #", h.replica + 1);
}

void AppendFleetAndSummary(const PlanDocument& doc, std::string& out) {
  const Plan& plan = doc.plan;
  std::vector<std::string> nodes;
  for (const NodePlan& n : plan.nodes) {
    std::string zone = n.zone.empty() ? "" : absl::StrCat(", zone ", n.zone);
    nodes.push_back(
        absl::StrCat(n.name, ": ", n.gpus.size(), " x ", plan.gpus[n.gpus.front()].gpu_type, zone));
  }
  absl::StrAppend(&out, "Fleet: ", plan.gpus.size(), " GPUs on ", plan.nodes.size(), " nodes (",
                  absl::StrJoin(nodes, "; "), ")\n\n");
  absl::StrAppend(&out, "Summary: ", doc.summary.text, ".\n");
  absl::StrAppend(&out, "  Baseline: ", doc.summary.baseline, "\n");
  absl::StrAppend(&out, "  No packing of these decisions can use fewer than ",
                  doc.summary.lower_bound, " GPUs (memory and compute slices, shared memory)",
                  doc.summary.optimal ? ", so this one is optimal.\n"
                                      : "; this first-fit packing uses more.\n");
}

std::string MechanismText(const WorkloadPlan& w) {
  switch (w.mechanism) {
    case Mechanism::kMig:
      return absl::StrCat("MIG ", w.profile->name, " on ", w.gpu_type);
    case Mechanism::kExclusive:
      return absl::StrCat("whole GPU", w.gpus_per_replica > 1 ? "s" : "", " (", w.gpus_per_replica,
                          " x ", w.gpu_type, " per replica)");
    case Mechanism::kTimeslice:
      return absl::StrCat("time-sliced ", w.gpu_type);
    case Mechanism::kMps:
      return absl::StrCat("MPS on ", w.gpu_type, " with a memory limit");
    case Mechanism::kVmBoundary:
      return "VM boundary: not placed by this plan";
  }
  return "";
}

void AppendWorkload(const WorkloadPlan& w, std::string& out) {
  std::string replicas = absl::StrCat(w.replicas, w.replicas == 1 ? " replica" : " replicas");
  if (w.spec.mirrored) {
    std::vector<std::string> zones;
    for (const std::string& z : w.replica_zones) {
      if (std::find(zones.begin(), zones.end(), z) == zones.end()) zones.push_back(z);
    }
    absl::StrAppend(&replicas, ", mirrored over zones ", absl::StrJoin(zones, ", "));
  }
  absl::StrAppend(&out, w.spec.name, "  tenant ", w.spec.tenant, " (", TrustName(w.spec.trust),
                  ", ", w.spec.training ? "training" : LatencyName(w.spec.latency), "), ", replicas,
                  "\n");
  absl::StrAppend(&out, "  memory from ", w.sizing.source, ":\n");
  for (const MemoryTerm& t : w.sizing.terms) {
    std::string gib = GiBText(t.bytes, true);
    // The name column is 11 wide; a longer name still gets one space before the figure.
    const size_t name_pad = t.name.size() < 11 ? 11 - t.name.size() : 1;
    absl::StrAppend(&out, "    ", t.name, std::string(name_pad, ' '), Pad(11, gib), gib, "  ",
                    t.how, "\n");
  }
  std::string total = GiBText(w.sizing.total_bytes, true);
  absl::StrAppend(&out, "    total      ", Pad(11, total), total, "\n");
  absl::StrAppend(&out, "  mechanism: ", MechanismText(w), "\n");
  if (!w.rounding.empty()) absl::StrAppend(&out, "    ", w.rounding, "\n");
  for (const std::string& r : w.reasons) absl::StrAppend(&out, "  why: ", r, "\n");
  for (const std::string& r : w.warnings) absl::StrAppend(&out, "  WARNING: ", r, "\n");
  out += "\n";
}

void AppendGpu(const Plan& plan, const GpuPlan& g, std::string& out) {
  std::string zone = g.zone.empty() ? "" : absl::StrCat(", zone ", g.zone);
  absl::StrAppend(&out, g.node, " GPU ", g.index, " (", g.gpu_type, zone, "): ", GpuUseName(g.use));
  if (g.use == GpuUse::kIdle) {
    out += "\n";
    return;
  }
  if (g.use == GpuUse::kMig) {
    std::vector<std::string> cut;
    for (const auto& [name, count] : MigDevices(g)) {
      cut.push_back(count == 1 ? name : absl::StrCat(count, " x ", name));
    }
    absl::StrAppend(&out, ", cut ", absl::StrJoin(cut, " + "), "\n");
    for (const PlannedInstance& inst : g.instances) {
      int last = inst.start + inst.profile->memory_slices - 1;
      std::string slices = last == inst.start ? absl::StrCat("slice  ", inst.start)
                                              : absl::StrCat("slices ", inst.start, "-", last);
      // At least one space after each column, even when a name is wider than it.
      absl::StrAppend(&out, "    ", slices, " ", Pad(11, slices), inst.profile->name, " ",
                      Pad(11, inst.profile->name), HolderName(plan, inst.holder), "\n");
    }
    return;
  }
  std::vector<std::string> who;
  for (const Holder& h : g.clients) who.push_back(HolderName(plan, h));
  absl::StrAppend(&out, ": ", absl::StrJoin(who, ", "));
  if (g.use != GpuUse::kExclusive && g.memory_mib) {
    absl::StrAppend(&out, " (", MibText(g.shared_memory_mib, true), " of ",
                    MibText(*g.memory_mib, false), " declared)");
  }
  out += "\n";
}

absl::Status AppendConfigurations(const PlanDocument& doc, std::string& out) {
  out += Heading("nvidia-smi commands");
  out +=
      "# -cgi creates instances in the order given and each takes its profile's highest free\n"
      "# placement (the behaviour NVIDIA's guide documents), so this order reproduces the\n"
      "# geometry above. Usually mig-manager applies the mig-parted config below instead.\n";
  for (const NodeCommands& node : doc.nvidia_smi) {
    absl::StrAppend(&out, "# on ", node.node, "\n");
    for (const std::string& c : node.commands) absl::StrAppend(&out, c, "\n");
  }

  out += Heading("mig-parted config (mig-manager ConfigMap)");
  ASSIGN_OR_RETURN(std::string mig_parted, RenderYamlTree(MigPartedTree(doc.mig_configs)));
  out += mig_parted;

  out += Heading("Device-plugin sharing config (time-slicing / MPS)");
  if (doc.device_plugin_configs.empty()) {
    out += "none: no workload shares a full GPU in this plan\n";
  } else {
    out += "# one named config per entry of the device plugin's ConfigMap\n";
    ASSIGN_OR_RETURN(std::string plugin,
                     RenderYamlTree(DevicePluginConfigsTree(doc.device_plugin_configs)));
    out += plugin;
  }

  out += Heading("Node labels (nvidia.com/mig.config, nvidia.com/device-plugin.config)");
  for (const NodeLabels& node : doc.node_labels) {
    for (const std::string& c : node.commands) absl::StrAppend(&out, c, "\n");
  }
  if (doc.node_labels.empty()) out += "(no node needs a label)\n";

  out += Heading("Pod resources (per workload)");
  absl::StrAppend(&out, "# mirrored workloads spread over the ", topology::kZoneLabel,
                  " node label\n");
  if (!doc.pods.empty()) {
    ASSIGN_OR_RETURN(std::string pods, RenderYamlTree(PodsTree(doc.pods)));
    out += pods;
  }

  out += Heading("ResourceClaims (DRA, NVIDIA k8s-dra-driver-gpu)");
  out +=
      "# A ResourceClaimTemplate gives each pod its own device; a ResourceClaim is shared by the\n"
      "# workload's pods (how DRA expresses sharing).\n";
  for (size_t i = 0; i < doc.claims.size(); ++i) {
    if (i > 0) out += "---\n";
    ASSIGN_OR_RETURN(std::string claim, RenderYamlTree(ClaimTree(doc.claims[i])));
    out += claim;
  }

  out += Heading("Policy file: tenants section");
  out += "# tiers \"untrusted\" and \"trusted\" as in cmd/demo/policy.yaml\n";
  ASSIGN_OR_RETURN(std::string policy, RenderYamlTree(PolicyTree(doc.policy)));
  out += policy;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RenderText(const PlanDocument& doc) {
  std::string out = "gpu-tenancy plan\n================\n";
  AppendFleetAndSummary(doc, out);
  out += Heading("Workloads");
  for (const WorkloadPlan& w : doc.plan.workloads) AppendWorkload(w, out);
  out += Heading("GPUs");
  for (const GpuPlan& g : doc.plan.gpus) AppendGpu(doc.plan, g, out);
  RETURN_IF_ERROR(AppendConfigurations(doc, out));
  if (!doc.warnings.empty()) {
    out += Heading("Warnings");
    for (const std::string& w : doc.warnings) absl::StrAppend(&out, "- ", w, "\n");
  }
  return out;
}

}  // namespace plan
