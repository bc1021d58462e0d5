// The go-live checklist: one small named function per item, each reading the snapshot, the
// policy and the inputs the snapshot does not carry, and naming every object that fails.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/device_report.h"
#include "topology/mig_drift.h"
#include "views/audit.h"
#include "views/audit_contract.h"
#include "views/audit_fair_share.h"

namespace views {
namespace {

using topology::NodeState;
using topology::SharingMode;

absl::string_view LabelOf(const NodeState& node, absl::string_view key) {
  auto it = node.facts.labels.find(key);
  return it == node.facts.labels.end() ? absl::string_view() : absl::string_view(it->second);
}

std::string NodeObject(const NodeState& node) { return absl::StrCat("node/", node.facts.name); }

// Nodes in name order, so findings come out stable.
std::vector<const NodeState*> SortedNodes(const topology::ClusterSnapshot& snapshot) {
  std::vector<const NodeState*> out;
  for (const std::string& name : snapshot.SortedNodeNames()) out.push_back(snapshot.FindNode(name));
  return out;
}

bool IsMigNode(const NodeState& node) {
  absl::string_view strategy = LabelOf(node, topology::kMigStrategyLabel);
  return strategy == "mixed" || strategy == "single";
}

// The device plugin shares this node's GPUs (time-slicing or MPS with more than one replica).
bool SharesGpus(const NodeState& node) {
  absl::string_view strategy = LabelOf(node, topology::kSharingStrategyLabel);
  int64_t replicas = 0;
  return (strategy == "time-slicing" || strategy == "mps") &&
         absl::SimpleAtoi(LabelOf(node, topology::kReplicasLabel), &replicas) && replicas > 1;
}

bool Offers(const NodeState& node, SharingMode mode) {
  for (const topology::OfferedResource& r : node.supply.resources) {
    if (r.mode == mode && r.allocatable > 0) return true;
  }
  return false;
}

CheckResult Result(absl::string_view id, std::vector<CheckFinding> findings,
                   absl::string_view pass_detail, absl::string_view fix) {
  CheckResult r;
  r.id = std::string(id);
  r.findings = std::move(findings);
  r.status = r.findings.empty() ? CheckStatus::kPass : CheckStatus::kFail;
  if (r.status == CheckStatus::kPass) {
    r.detail = std::string(pass_detail);
  } else {
    r.fix = std::string(fix);
  }
  return r;
}

// Tenants whose tier may not share get only MIG instances and whole GPUs, in pools of those.
CheckResult UntrustedIsolation(const AuditInputs& in) {
  const topology::Policy& policy = *in.state->policy;
  std::vector<CheckFinding> findings;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    for (const auto& hold : node->holds) {
      topology::TenantRef who = topology::ResolveTenant(
          policy, hold->namespace_name, in.state->snapshot->NamespaceLabels(hold->namespace_name));
      if (who.tier == nullptr || who.tier->modes.HasShared()) continue;
      std::set<std::string> shared;
      for (const topology::ResourceCount& r : hold->demand.devices) {
        const topology::OfferedResource* offer = node->supply.Find(r);
        if (offer != nullptr && topology::IsSharedMode(offer->mode)) shared.insert(r.name);
      }
      if (hold->demand.devices.empty() && hold->demand.memory_mib > 0) shared.insert("GPU memory");
      std::string pool_note;
      if (node->supply.pool_mode && topology::IsSharedMode(*node->supply.pool_mode)) {
        pool_note = absl::StrCat(" in pool ", node->supply.pool, " (",
                                 topology::ModeName(*node->supply.pool_mode), ")");
      }
      if (shared.empty() && pool_note.empty()) continue;
      findings.push_back(
          {absl::StrCat("pod/", hold->namespace_name, "/", hold->name),
           absl::StrCat("tenant ", who.name, " (tier ", who.tier->name, ", may use only ",
                        who.tier->modes.ToString(), ") holds ",
                        shared.empty() ? "a GPU" : absl::StrJoin(shared, ", "), " on node ",
                        node->facts.name, pool_note, ": a fault domain shared with other pods")});
    }
  }
  return Result("untrusted-isolation", std::move(findings),
                "every pod of a tier that may not share holds MIG instances or whole GPUs",
                "move these pods to MIG or whole-GPU nodes (delete them; the extender then places "
                "them by tier), and make the shared nodes advertise their replicas under a "
                "separate name (renameByDefault) in a pool the tier may not use");
}

CheckResult MigPoolsOnMigGpus(const AuditInputs& in) {
  std::vector<CheckFinding> findings;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    const std::optional<SharingMode>& mode = node->supply.pool_mode;
    if (!node->supply.HasGpus() || !mode ||
        (*mode != SharingMode::kMig && *mode != SharingMode::kMigShared)) {
      continue;
    }
    const bool model_has_mig =
        node->supply.model != nullptr && !node->supply.model->profiles.empty();
    if (model_has_mig && LabelOf(*node, "nvidia.com/mig.capable") != "false") continue;
    findings.push_back(
        {NodeObject(*node),
         absl::StrCat("in MIG pool ", node->supply.pool, " but its GPU (",
                      node->supply.product.empty() ? "no product label" : node->supply.product,
                      ") has no MIG")});
  }
  return Result("mig-pools-on-mig-gpus", std::move(findings),
                "every node of a MIG pool has MIG-capable GPUs",
                "label these nodes with a pool of their real isolation (exclusive or shared)");
}

// Exclusive, MIG and shared resources under different names and in different pools.
CheckResult SeparateResourceNames(const AuditInputs& in) {
  const topology::Policy& policy = *in.state->policy;
  std::vector<CheckFinding> findings;
  bool any_shared = false;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    if (SharesGpus(*node)) {
      any_shared = true;
      const topology::OfferedResource* gpu = node->supply.Find(topology::kGpuResource);
      if (gpu != nullptr && gpu->allocatable > 0) {
        findings.push_back(
            {NodeObject(*node),
             absl::StrCat(LabelOf(*node, topology::kSharingStrategyLabel), " with ",
                          LabelOf(*node, topology::kReplicasLabel),
                          " replicas per GPU, advertised as ", topology::kGpuResource,
                          " (not renamed): a pod asking for a whole GPU gets a shared replica")});
      }
    }
    // Shared resources in a pool that promises more isolation.
    if (node->supply.pool_mode && !topology::IsSharedMode(*node->supply.pool_mode)) {
      std::set<std::string> shared;
      for (const topology::OfferedResource& r : node->supply.resources) {
        if (r.allocatable > 0 && topology::IsSharedMode(r.mode)) shared.insert(r.name);
      }
      if (!shared.empty()) {
        findings.push_back(
            {NodeObject(*node), absl::StrCat("offers shared ", absl::StrJoin(shared, ", "),
                                             " in pool ", node->supply.pool, " (",
                                             topology::ModeName(*node->supply.pool_mode), ")")});
      }
    }
  }
  if (any_shared && !policy.fail_requests_greater_than_one) {
    findings.push_back({"policy",
                        "failRequestsGreaterThanOne is false: a container may ask for "
                        "several replicas of a shared GPU and believe it got more"});
  }
  return Result("separate-resource-names", std::move(findings),
                "shared replicas are advertised under their own names (.shared), in shared pools, "
                "and more than one replica per container is refused",
                "set renameByDefault: true and failRequestsGreaterThanOne: true in the device "
                "plugin's sharing config (and failRequestsGreaterThanOne in the policy), and give "
                "shared nodes a pool of a shared mode");
}

CheckResult MpsNotMixed(const AuditInputs& in) {
  std::vector<CheckFinding> findings;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    const bool mps = Offers(*node, SharingMode::kMps) ||
                     LabelOf(*node, topology::kSharingStrategyLabel) == "mps";
    if (!mps) continue;
    if (Offers(*node, SharingMode::kTimeslice) || Offers(*node, SharingMode::kMigShared)) {
      findings.push_back({NodeObject(*node), "offers MPS and time-sliced resources at once"});
    }
    if (Offers(*node, SharingMode::kMig)) {
      findings.push_back({NodeObject(*node),
                          "runs MPS on a node with MIG enabled (the device "
                          "plugin does not support MPS on MIG devices)"});
    }
  }
  return Result("mps-timeslice-separate", std::move(findings),
                "no node mixes MPS with time-slicing, and no MPS runs on MIG devices",
                "give each node one sharing strategy, and MPS only GPUs with MIG disabled");
}

// Each MIG node settled, and showing what its nvidia.com/mig.config predicts: by the given
// mig-parted config, else by NVIDIA's default configs of that name (topology/mig_drift.h).
CheckResult MigConfigApplied(const AuditInputs& in) {
  std::vector<CheckFinding> findings;
  std::vector<std::string> not_compared;
  int mig_nodes = 0;
  const topology::Catalog no_catalog;
  const topology::Catalog& catalog = in.state->catalog != nullptr ? *in.state->catalog : no_catalog;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    if (!IsMigNode(*node)) continue;
    ++mig_nodes;
    absl::string_view state = LabelOf(*node, topology::kMigConfigStateLabel);
    if (state != "success") {
      findings.push_back(
          {NodeObject(*node), absl::StrCat(topology::kMigConfigStateLabel, " is ",
                                           state.empty() ? "absent" : state, ", not success")});
      continue;
    }
    if (!node->supply.mig_unsettled.empty()) {  // state success, device plugin still paused
      findings.push_back({NodeObject(*node), absl::StrCat(node->supply.mig_unsettled,
                                                          " while mig-manager reports success")});
      continue;
    }
    topology::MigDrift drift = topology::CheckMigDrift(node->facts, catalog);
    switch (drift.verdict) {
      case topology::MigDriftVerdict::kMatches:
        break;
      case topology::MigDriftVerdict::kDrifted:
        findings.push_back(
            {NodeObject(*node),
             absl::StrCat(
                 "geometry differs from config ", drift.config,
                 drift.source == topology::MigLayoutSource::kDefaults ? " (NVIDIA's default)" : "",
                 ": ", absl::StrJoin(drift.differences, "; "),
                 "; mig-manager re-cuts it when it next runs")});
        break;
      case topology::MigDriftVerdict::kConfigInvalid:
        findings.push_back({NodeObject(*node), drift.why});
        break;
      case topology::MigDriftVerdict::kNotCompared:
      case topology::MigDriftVerdict::kNotApplicable:
        not_compared.push_back(absl::StrCat(NodeObject(*node), " (", drift.why, ")"));
        break;
    }
  }
  CheckResult r = Result("mig-config-applied", std::move(findings),
                         "every MIG node is settled and shows the geometry its config predicts",
                         "wait for or repair mig-manager on these nodes (gpu-tenancy reconfigure "
                         "applies a config and checks the result)");
  if (r.status == CheckStatus::kPass && mig_nodes == 0) {
    r.detail = "no MIG nodes";
  } else if (r.status == CheckStatus::kPass && !not_compared.empty()) {
    r.status = CheckStatus::kWarn;
    r.detail = absl::StrCat("every MIG node is settled; geometry not compared on ",
                            absl::StrJoin(not_compared, ", "));
    r.fix = "pass the mig-parted config that defines these names (--mig-parted-config)";
  }
  return r;
}

CheckResult CanarySliceFree(const AuditInputs& in) {
  const std::optional<topology::Canary>& canary = in.state->policy->canary;
  std::vector<CheckFinding> findings;
  if (canary) {
    const std::string resource = absl::StrCat(topology::kMigResourcePrefix, canary->mig_profile);
    for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
      const topology::OfferedResource* offer = node->supply.Find(resource);
      if (offer == nullptr || offer->kind != topology::ResourceKind::kMigInstance) continue;
      const int64_t free = offer->allocatable - node->occupancy.Used(resource);
      if (free < canary->reserve) {
        findings.push_back({NodeObject(*node),
                            absl::StrCat(free, " of ", offer->allocatable, " ", canary->mig_profile,
                                         " free; the canary reserve is ", canary->reserve)});
      }
    }
  }
  CheckResult r = Result(
      "canary-slice-free", std::move(findings),
      canary ? "every MIG node keeps its canary slice free" : "the policy reserves no canary slice",
      "free a canary slice on these nodes (move a pod), or change the geometry");
  return r;
}

// Every GPU resource name a node advertises goes through the extender, kube-scheduler asks the
// extender before it evicts for any pod, and both webhooks exist.
CheckResult WiringCoversResources(const AuditInputs& in) {
  CheckResult r;
  r.id = "scheduler-webhook-wiring";
  const Wiring& w = in.wiring;
  const topology::Policy& policy = *in.state->policy;
  std::set<std::string> advertised;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    for (const topology::OfferedResource& res : node->supply.resources) advertised.insert(res.name);
  }
  auto gpu_name = [&](const std::string& name) {
    return advertised.count(name) || absl::StartsWith(name, topology::kNvidiaResourcePrefix) ||
           policy.IsMemoryResource(name);
  };
  if (w.extenders) {
    std::set<std::string> filtered;  // names some entry with filterVerb manages
    bool asked_about_every_pod = false;
    for (size_t i = 0; i < w.extenders->size(); ++i) {
      const SchedulerExtender& e = (*w.extenders)[i];
      if (e.filter) filtered.insert(e.managed_resources.begin(), e.managed_resources.end());
      if (e.preempt && e.managed_resources.empty()) asked_about_every_pod = true;
      std::vector<std::string> gpu;
      for (const std::string& name : e.managed_resources) {
        if (gpu_name(name)) gpu.push_back(name);
      }
      if (gpu.empty() || e.preempt) continue;
      const size_t shown = std::min<size_t>(gpu.size(), 3);
      r.findings.push_back(
          {absl::StrCat("extenders/", i),
           absl::StrCat(
               e.url_prefix.empty() ? "the entry" : e.url_prefix, " manages ", gpu.size(),
               " GPU resource names (", absl::StrJoin(gpu.begin(), gpu.begin() + shown, ", "),
               gpu.size() > shown ? ", ..." : "",
               ") without preemptVerb: kube-scheduler evicts for such pods with its own view "
               "(node-level counts, no tenants, quotas or MIG placement) and never asks the "
               "extender which victims the policy allows")});
    }
    std::map<std::string, std::vector<std::string>> missing;  // name -> nodes
    for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
      for (const topology::OfferedResource& res : node->supply.resources) {
        if (!filtered.count(res.name)) missing[res.name].push_back(node->facts.name);
      }
    }
    for (const auto& [name, nodes] : missing) {
      r.findings.push_back({absl::StrCat("resource/", name),
                            absl::StrCat("advertised by ", absl::StrJoin(nodes, ", "),
                                         " but not in the extender's managedResources: "
                                         "kube-scheduler places such pods alone")});
    }
    if (!asked_about_every_pod) {
      r.findings.push_back(
          {"extenders",
           "no entry has preemptVerb without managedResources: kube-scheduler asks an extender "
           "only about pods that request one of its names, so a CPU-only pod, or one whose GPUs "
           "come through ResourceClaims, picks its victims alone and may evict another tenant's "
           "GPU pods"});
    }
  }
  if (w.validating_webhook && !*w.validating_webhook) {
    r.findings.push_back(
        {"validatingwebhookconfiguration",
         "no webhook of validate.gpu-tenancy.io: pods and claims are not checked"});
  }
  if (w.mutating_webhook && !*w.mutating_webhook) {
    r.findings.push_back({"mutatingwebhookconfiguration",
                          "no webhook of mutate.gpu-tenancy.io: pods get no pool affinity and "
                          "claims no tenant limits"});
  }
  if (!r.findings.empty()) {
    r.status = CheckStatus::kFail;
    r.fix =
        "regenerate the extender entries with gpu-tenancy scheduler-config (both: the first "
        "filters, prioritizes, binds and preempts for GPU pods; the second, with no "
        "managedResources, answers every preemption) and apply manifests/ (webhook "
        "configurations)";
    return r;
  }
  std::vector<std::string> unseen;
  std::vector<std::string> fixes;
  if (!w.extenders) {
    if (w.extenders_unseen.empty()) {
      unseen.emplace_back("the scheduler configuration (not given)");
    } else {
      unseen.push_back(absl::StrCat("the scheduler configuration (", w.extenders_unseen, ")"));
    }
    fixes.push_back(
        "pass --scheduler-config: kube-scheduler's configuration is a file on the control "
        "plane, not an object kube-apiserver serves");
  }
  if (!w.validating_webhook || !w.mutating_webhook) {
    // An if, not a conditional of two strings: GCC 12 at -O3 reports a false -Warray-bounds
    // on moving the literal's temporary.
    if (w.webhooks_unseen.empty()) {
      unseen.emplace_back("the webhook configurations (not given)");
    } else {
      unseen.push_back(absl::StrCat("the webhook configurations (", w.webhooks_unseen, ")"));
    }
    fixes.push_back(
        "run gpu-tenancy audit against the cluster with a user that may list "
        "validating- and mutatingwebhookconfigurations, or on a cluster file that lists them");
  }
  if (!unseen.empty()) {
    r.status = CheckStatus::kWarn;
    r.detail = absl::StrCat("not inspected: ", absl::StrJoin(unseen, " and "));
    r.fix = absl::StrJoin(fixes, "; ");
    return r;
  }
  r.detail = absl::StrCat("the extender manages all ", advertised.size(),
                          " GPU resource names the nodes advertise and answers every "
                          "preemption, and both webhooks exist");
  return r;
}

CheckResult EscapeHatchesHeldByDeviceTiers(const AuditInputs& in) {
  if (!in.escape_hatches) {
    CheckResult r;
    r.id = "device-escape-hatches";
    r.status = CheckStatus::kWarn;
    r.detail = in.escape_hatches_unseen.empty()
                   ? std::string("pod and claim specs not inspected here")
                   : absl::StrCat("pod and claim specs not inspected: ", in.escape_hatches_unseen);
    r.fix =
        "run gpu-tenancy audit against the cluster (it lists the pods and claims) or on a "
        "cluster file with them";
    return r;
  }
  const topology::Policy& policy = *in.state->policy;
  std::vector<CheckFinding> findings;
  for (const EscapeHatch& h : *in.escape_hatches) {
    topology::TenantRef who = topology::ResolveTenant(
        policy, h.namespace_name, in.state->snapshot->NamespaceLabels(h.namespace_name));
    if (who.tier != nullptr && who.tier->device_access) continue;
    findings.push_back(
        {h.object, absl::StrCat(h.what, "; tenant ", who.name, " (tier ",
                                who.tier ? who.tier->name : "none", ") has no device access")});
  }
  return Result("device-escape-hatches", std::move(findings),
                "only tiers with device access hold privileged pods, device host paths or DRA "
                "admin access",
                "remove the escape hatch from these objects, or move them to a tenant whose tier "
                "has deviceAccess");
}

// A device report is believed only as the pod's node agent recorded it on its Node; a report on a
// pod that says anything else was written by someone else (topology/device_report.h).
CheckResult DeviceReportsFromTheAgent(const AuditInputs& in) {
  std::vector<CheckFinding> findings;
  int reports = 0;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    for (const auto& hold : node->holds) {
      if (!hold->device_report) continue;
      ++reports;
      std::string doubt = topology::ReportDoubt(*hold, node->facts);
      if (doubt.empty()) continue;
      findings.push_back(
          {absl::StrCat("pod/", hold->namespace_name, "/", hold->name),
           absl::StrCat("gpu-tenancy.io/devices on node ", node->facts.name, ": ", doubt)});
    }
  }
  CheckResult r = Result(
      "device-reports-from-agent", std::move(findings),
      "every GPU pod's device report is the one its node's agent recorded",
      "find who wrote these annotations (kube-apiserver's audit log names the user), and apply "
      "manifests/node-agent: its admission policies let only each node's agent write them, in "
      "every namespace. Until then the model believes the agents' records, not these reports");
  if (r.status == CheckStatus::kPass && reports == 0) r.detail = "no GPU pod carries a report";
  return r;
}

CheckResult MetricsAttributable(const AuditInputs& in) {
  CheckResult r;
  r.id = "gpu-metrics-attributable";
  std::vector<const NodeState*> gpu_nodes;
  bool any_agent = false;
  for (const NodeState* node : SortedNodes(*in.state->snapshot)) {
    if (!node->supply.HasGpus()) continue;
    gpu_nodes.push_back(node);
    // The agent writes the node's GPU list every round, even an empty one.
    any_agent |= node->facts.reported_gpus.has_value();
  }
  bool without_agent = false, without_dcgm = false;
  for (const NodeState* node : gpu_nodes) {
    std::vector<std::string> missing;
    if (any_agent && !node->facts.reported_gpus) {
      missing.push_back("no node agent report (gpu-tenancy.io/gpu-devices is absent)");
      without_agent = true;
    }
    if (LabelOf(*node, "nvidia.com/gpu.deploy.dcgm-exporter") != "true") {
      missing.push_back("no DCGM exporter (nvidia.com/gpu.deploy.dcgm-exporter is not true)");
      without_dcgm = true;
    }
    if (!missing.empty()) r.findings.push_back({NodeObject(*node), absl::StrJoin(missing, "; ")});
  }
  if (!any_agent && !gpu_nodes.empty()) {
    // Not deployed at all: an optional component, so a warning that says what is lost.
    r.status = CheckStatus::kWarn;
    r.detail =
        "missing: no node agent reports which GPU (UUID) each pod's containers got, so "
        "DCGM's per-GPU metrics cannot be attributed to a tenant on device-plugin nodes";
    r.fix = "deploy the gpu-tenancy node agent (manifests/node-agent) on every GPU node";
    return r;
  }
  if (r.findings.empty()) {
    r.detail = "the node agent and DCGM run on every GPU node";
    return r;
  }
  r.status = CheckStatus::kFail;
  std::vector<std::string> fixes;
  if (without_agent) {
    fixes.push_back(
        "schedule the node agent's DaemonSet on these nodes too (its nodeSelector "
        "and tolerations)");
  }
  if (without_dcgm) fixes.push_back("enable the GPU operator's DCGM exporter on these nodes");
  r.fix = absl::StrJoin(fixes, "; ");
  return r;
}

}  // namespace

const std::vector<AuditCheck>& AuditChecks() {
  static const std::vector<AuditCheck>* checks = new std::vector<AuditCheck>{
      {"untrusted-isolation", "Untrusted tiers only on MIG or whole-GPU pools", UntrustedIsolation},
      {"mig-pools-on-mig-gpus", "No MIG pool on GPUs without MIG", MigPoolsOnMigGpus},
      {"separate-resource-names",
       "Exclusive, MIG and shared resources under different names and pools",
       SeparateResourceNames},
      {"mps-timeslice-separate", "MPS and time-slicing not mixed on a node, MPS not on MIG",
       MpsNotMixed},
      {"mig-config-applied", "Every MIG node settled, with the geometry its mig.config predicts",
       MigConfigApplied},
      {"canary-slice-free", "A canary slice free on each MIG node, where the policy asks for one",
       CanarySliceFree},
      {"scheduler-webhook-wiring",
       "Webhook and extender wired, covering every GPU resource name and every preemption",
       WiringCoversResources},
      {"device-escape-hatches", "Device escape hatches held only by tiers with device access",
       EscapeHatchesHeldByDeviceTiers},
      {"device-reports-from-agent", "Device reports on pods written only by their node's agent",
       DeviceReportsFromTheAgent},
      {"gpu-metrics-attributable", "Per-tenant GPU metrics attributable (node agent and DCGM)",
       MetricsAttributable},
      {"contract-held", "Every placed GPU pod and allocated claim keeps the policy now",
       ContractHeld},
      {"fair-share-guarantees-fit", "Fair-sharing guarantees fit in what the cluster offers",
       FairShareGuaranteesFit},
  };
  return *checks;
}

}  // namespace views
