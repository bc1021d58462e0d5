// gpu-tenancy explain: why is this pod pending? Evaluates one pod against every node of a
// cluster file (or the demo cluster) with the extender's own decision code, and shows the
// state and devices of its DRA claims (cmd/explain_claims.h): who shares a multi-allocatable
// device, and for a claim not yet allocated, per node, whether free devices pass its class's
// selectors, the tenant's limits and its capacity asks. For a tenant in fair sharing it shows
// where the tenant stands in the cluster (guaranteed, held, borrowed, lent, its fair share) and,
// on each node that fits, whether the pod would be placed within its guarantee or borrow.
#include "cmd/explain.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/explain_claims.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "extender/allocations.h"
#include "extender/decide.h"
#include "extender/device_attribution.h"
#include "extender/fair_share_view.h"
#include "guard/contract.h"
#include "plan/mig_recut.h"
#include "plan/recut_document.h"
#include "plan/recut_input.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "topology/device_report.h"
#include "wire/k8s_codec.h"

namespace cmd {
namespace {

const common::FlagTable kExplainFlags{
    {"gpu-tenancy explain (--cluster-file FILE | --demo) --pod FILE|NAMESPACE/NAME\n"
     "                           [--policy FILE] [-o text|json]"},
    "Why a pod fits or does not fit each node of the cluster, rule by rule.",
    {{"cluster-file", "FILE", "the cluster: kubectl get nodes,pods -A -o json (YAML too)"},
     {"demo", "", "the embedded demo cluster and policy"},
     {"pod", "FILE|NS/NAME", "the pod: a manifest file, or a pod of the cluster file"},
     {"policy", "FILE", "the tenancy policy (default: allow everything; --demo: the demo's)"},
     {"output", "FORMAT", "text or json (default text)", 'o'}}};

// --pod names a manifest file, or a pod inside the cluster file.
absl::StatusOr<topology::PodFacts> FindPod(const std::string& pod_arg,
                                           const topology::ClusterData& cluster) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(pod_arg, ec)) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(pod_arg));
    ASSIGN_OR_RETURN(rapidjson::Document doc, wire::ParseObjectText(text));
    absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(doc);
    if (!pod.ok())
      return absl::InvalidArgumentError(absl::StrCat(pod_arg, ": ", pod.status().message()));
    if (pod->namespace_name.empty()) pod->namespace_name = "default";
    // Explaining a pod means asking where it could go now: forget any binding it carries.
    pod->node_name.clear();
    return pod;
  }
  for (const topology::PodFacts& pod : cluster.pods) {
    if (pod.Key() == pod_arg) {
      topology::PodFacts copy = pod;
      copy.node_name.clear();
      return copy;
    }
  }
  return absl::NotFoundError(
      absl::StrCat("--pod ", pod_arg, ": neither a file nor a NAMESPACE/NAME in the cluster"));
}

std::string DemandText(const topology::GpuDemand& demand) {
  std::vector<std::string> parts;
  for (const topology::ResourceCount& device : demand.devices)
    parts.push_back(absl::StrCat(device.name, "=", device.count));
  if (demand.memory_mib) parts.push_back(absl::StrCat("gpu-memory=", demand.memory_mib, "Mi"));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// "nvidia.com/gpu 2 of 3 used, gpu-memory 40Gi of 160Gi used"
std::string QuotaText(const std::vector<topology::QuotaLine>& quota) {
  std::vector<std::string> parts;
  for (const topology::QuotaLine& q : quota) {
    if (q.resource == "gpu-memory-mib") {
      auto memory = [](int64_t mib) {
        return mib % 1024 == 0 ? absl::StrCat(mib / 1024, "Gi") : absl::StrCat(mib, "Mi");
      };
      parts.push_back(absl::StrCat("gpu-memory ", memory(q.used), " of ", memory(q.quota)));
    } else {
      parts.push_back(absl::StrCat(q.resource, " ", q.used, " of ", q.quota));
    }
  }
  return absl::StrCat(absl::StrJoin(parts, ", "), " used");
}

// A bound pod's devices as the node agent reported the kubelet gave them
// (topology/device_report.h): what the scheduler's record says is promised, not what is used.
struct BoundDevices {
  std::string node;
  bool reported = false;  // the pod carries a report, or its node's agent recorded one
  bool believed = false;  // the node agent's record of it is on `node`
  std::vector<topology::ReportedDevice> devices;
  std::string disagreement;  // topology::ReportDisagreement
};

// For a --pod NAMESPACE/NAME the cluster has bound and the snapshot holds, its devices.
std::optional<BoundDevices> BoundDevicesOf(const std::string& pod_arg,
                                           const topology::ClusterData& cluster,
                                           const topology::ClusterSnapshot& snapshot) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(pod_arg, ec)) return std::nullopt;  // a manifest: unbound
  for (const topology::PodFacts& pod : cluster.pods) {
    if (pod.Key() != pod_arg || pod.node_name.empty()) continue;
    const topology::NodeState* node = snapshot.FindNode(pod.node_name);
    if (!node) return std::nullopt;
    for (const auto& hold : node->holds) {
      if (hold->namespace_name != pod.namespace_name || hold->name != pod.name) continue;
      BoundDevices out{node->facts.name,
                       hold->device_report.has_value(),
                       false,
                       {},
                       topology::ReportDisagreement(*hold, node->facts)};
      if (std::optional<topology::DeviceReport> report =
              topology::BelievedReport(*hold, node->facts)) {
        out.believed = out.reported = true;
        out.devices = topology::ReportedDevices(*report, node->facts);
      }
      return out;
    }
  }
  return std::nullopt;
}

// For a --pod NAMESPACE/NAME the cluster runs, what the contract guard says of it now
// (guard/contract.h): its own rules and its tenant's quota; nullopt for any other pod.
std::optional<std::vector<guard::ContractViolation>> ContractOf(
    const std::string& pod_arg, const topology::ClusterData& cluster,
    const topology::ClusterSnapshot& snapshot, const topology::Policy& policy) {
  auto running = std::find_if(cluster.pods.begin(), cluster.pods.end(), [&](const auto& p) {
    return p.Key() == pod_arg && p.HoldsResources();
  });
  if (running == cluster.pods.end()) return std::nullopt;
  const topology::PodFacts& pod = *running;
  std::vector<guard::ContractViolation> out = guard::CheckPod(pod, snapshot, policy);
  const std::string tenant = topology::ResolveTenant(policy, pod.namespace_name,
                                                     snapshot.NamespaceLabels(pod.namespace_name))
                                 .name;
  for (guard::ContractViolation& v : guard::CheckQuota(tenant, snapshot, policy)) {
    if (v.namespace_name == pod.namespace_name && v.name == pod.name) out.push_back(std::move(v));
  }
  return out;
}

// "MIG-GPU-<uuid>/9/0 (nvidia.com/mig-1g.10gb, on GPU-<uuid>)"
std::string ReportedDeviceText(const topology::ReportedDevice& d) {
  std::string gpu;
  if (!d.gpu.empty() && d.gpu != d.id) {
    gpu = absl::StrCat(d.replica ? ", a replica of " : ", on ", d.gpu);
  }
  return absl::StrCat(d.id, " (", d.resource, gpu, ")");
}

void PrintBoundDevices(const BoundDevices& b) {
  if (!b.reported) {
    std::cout << "devices on " << b.node << ": not reported (no node agent report on the pod)\n";
  } else if (!b.believed) {
    std::cout << "devices on " << b.node << ": the pod's report is not believed (the node agent of "
              << b.node << " recorded none for it, so it did not write it)\n";
  } else {
    std::vector<std::string> devices;
    for (const topology::ReportedDevice& d : b.devices) devices.push_back(ReportedDeviceText(d));
    std::cout << "devices on " << b.node << ", as the node agent reported: "
              << (devices.empty() ? "none" : absl::StrJoin(devices, ", ")) << "\n";
  }
  if (!b.disagreement.empty()) {
    std::cout << "report  disagrees with the scheduler's record: " << b.disagreement << "\n";
  }
}

// "boundNode", "reportedDevices" (null without a believed report) and "reportDisagreement"
// (null when the report agrees).
void WriteBoundDevices(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w, const BoundDevices& b) {
  w.Key("boundNode");
  w.String(b.node.c_str());
  w.Key("reportedDevices");
  if (!b.believed) {
    w.Null();
  } else {
    w.StartArray();
    for (const topology::ReportedDevice& d : b.devices) {
      w.StartObject();
      for (auto [key, value] : {std::pair{"resource", &d.resource},
                                {"id", &d.id},
                                {"gpu", &d.gpu},
                                {"migInstance", &d.mig_instance}}) {
        w.Key(key);
        w.String(value->c_str());
      }
      w.Key("sharing");
      w.String(std::string(extender::SharingOf(d)).c_str());
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("reportDisagreement");
  if (b.disagreement.empty()) {
    w.Null();
  } else {
    w.String(b.disagreement.c_str());
  }
}

// One node's line of the answer.
struct NodeRow {
  std::string node;
  topology::Verdict verdict;
  std::string reason;
  int score = 0;
  // Unschedulable nodes: the pods preemption would evict (the snapshot's holds).
  std::vector<const topology::PodHold*> victims;
  int pdb_violations = 0;
  // Fair sharing, on a node that fits a fair-sharing tenant's pod: "guaranteed" or "borrowed".
  std::string share = {};
  bool fits() const { return verdict == topology::Verdict::kFits; }
};

// The pod's tenant in fair sharing, with the ledger's governed items; null `tenant` when the
// tenant takes no part.
struct ShareOfTenant {
  topology::FairShareLedger ledger;
  const topology::TenantShare* tenant = nullptr;
};

void PrintText(const extender::PodDecision& d, const std::optional<BoundDevices>& bound,
               const std::optional<std::vector<guard::ContractViolation>>& contract,
               const std::vector<ClaimRow>& claims, const std::vector<NodeRow>& nodes,
               const std::string& recut_advice, const ShareOfTenant& share) {
  std::cout << "pod     " << d.pod << "\n"
            << "tenant  " << d.tenant << " (tier " << (d.tier.empty() ? "none: denied" : d.tier)
            << ")\n"
            << "demand  " << DemandText(d.demand) << "\n";
  // A fair-sharing tenant's hard cap is its limit.
  if (!d.quota.empty()) {
    std::cout << (share.tenant ? "limit   " : "quota   ") << QuotaText(d.quota) << "\n";
  }
  if (share.tenant) {
    std::cout << "share   " << extender::ShareText(*share.tenant, share.ledger.items) << "\n";
  }
  if (bound) PrintBoundDevices(*bound);
  if (contract) {
    if (contract->empty()) std::cout << "contract kept: the pod breaks no rule of the policy\n";
    for (const guard::ContractViolation& v : *contract)
      std::cout << "contract " << v.message << "\n";
  }
  PrintClaimRows(claims, std::cout);
  std::cout << "\n";
  size_t width = 4;
  for (const NodeRow& n : nodes) width = std::max(width, n.node.size());
  std::cout << absl::StrFormat("%-*s  %-13s  %5s  %s\n", width, "NODE", "VERDICT", "SCORE",
                               "REASON");
  int fits = 0;
  for (const NodeRow& n : nodes) {
    fits += n.fits();
    std::cout << absl::StrFormat("%-*s  %-13s  %5d  %s\n", width, n.node,
                                 topology::VerdictName(n.verdict), n.score,
                                 n.fits() ? (n.share.empty() ? "-" : n.share) : n.reason);
  }
  std::cout << "\n" << fits << " of " << nodes.size() << " nodes can take the pod\n";
  if (!recut_advice.empty()) {
    std::cout << "\n"
              << recut_advice
              << "\n  (`gpu-tenancy plan --from-cluster`: the re-cuts for all pending MIG pods, "
                 "with configs and commands)\n";
  }
  bool header = false;
  for (const NodeRow& n : nodes) {
    if (n.victims.empty()) continue;
    if (!header) {
      std::cout << "\npreemption could help on these nodes, evicting only pods the policy lets "
                   "this pod preempt:\n";
      header = true;
    }
    std::vector<std::string> names;
    for (const topology::PodHold* v : n.victims) {
      names.push_back(
          absl::StrCat(v->namespace_name, "/", v->name, " (priority ", v->priority, ")"));
    }
    std::cout << absl::StrFormat(
        "  %-*s  %s%s\n", width, n.node, absl::StrJoin(names, ", "),
        n.pdb_violations > 0
            ? absl::StrCat(" (", n.pdb_violations, " PodDisruptionBudget violation(s))")
            : "");
  }
}

void PrintJson(const extender::PodDecision& d, const std::optional<BoundDevices>& bound,
               const std::optional<std::vector<guard::ContractViolation>>& contract,
               const std::vector<ClaimRow>& claims, const std::vector<NodeRow>& nodes,
               const std::string& recut_advice, const ShareOfTenant& share) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("pod");
  w.String(d.pod.c_str());
  w.Key("tenant");
  w.String(d.tenant.c_str());
  w.Key("tier");
  if (d.tier.empty()) {
    w.Null();
  } else {
    w.String(d.tier.c_str());
  }
  w.Key("demand");
  w.StartObject();
  for (const topology::ResourceCount& device : d.demand.devices) {
    w.Key(device.name.c_str());
    w.Int64(device.count);
  }
  w.Key("gpuMemoryMiB");
  w.Int64(d.demand.memory_mib);
  w.EndObject();
  if (!d.quota.empty()) {
    w.Key("quota");
    extender::WriteQuotaLines(w, d.quota);
  }
  if (share.tenant) {
    w.Key("fairShare");
    extender::WriteShareJson(w, *share.tenant, share.ledger.items);
  }
  if (bound) WriteBoundDevices(w, *bound);
  if (contract) {
    w.Key("contract");
    w.StartArray();
    for (const guard::ContractViolation& v : *contract) {
      w.StartObject();
      w.Key("rule");
      w.String(v.rule.c_str());
      w.Key("message");
      w.String(v.message.c_str());
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("recutAdvice");
  if (recut_advice.empty()) {
    w.Null();
  } else {
    w.String(recut_advice.c_str());
  }
  if (!claims.empty()) {
    w.Key("claims");
    WriteClaimRows(w, claims);
  }
  w.Key("nodes");
  w.StartArray();
  for (const NodeRow& n : nodes) {
    w.StartObject();
    w.Key("name");
    w.String(n.node.c_str());
    w.Key("verdict");
    w.String(std::string(topology::VerdictName(n.verdict)).c_str());
    w.Key("reason");
    w.String(n.reason.c_str());
    w.Key("score");
    w.Int(n.score);
    if (!n.share.empty()) {
      w.Key("share");
      w.String(n.share.c_str());
    }
    if (n.verdict == topology::Verdict::kUnschedulable) {
      w.Key("preemptionVictims");
      w.StartArray();
      for (const topology::PodHold* v : n.victims) {
        w.StartObject();
        w.Key("namespace");
        w.String(v->namespace_name.c_str());
        w.Key("name");
        w.String(v->name.c_str());
        w.Key("priority");
        w.Int(v->priority);
        w.EndObject();
      }
      w.EndArray();
      w.Key("pdbViolations");
      w.Int(n.pdb_violations);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  std::cout << buffer.GetString() << "\n";
}

}  // namespace

const common::FlagTable& ExplainFlags() { return kExplainFlags; }

absl::StatusOr<ExplainOptions> ParseExplainOptions(const ParsedFlags& flags) {
  ExplainOptions out;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  ASSIGN_OR_RETURN(out.output,
                   ParseOutputFormat(flags, {OutputFormat::kText, OutputFormat::kJson}));
  ASSIGN_OR_RETURN(out.pod, NonEmptyFlag(flags, "pod", "a file or NAMESPACE/NAME"));
  if (out.pod.empty()) return absl::InvalidArgumentError("--pod is required");
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  if (!out.inputs.has_cluster()) {
    return absl::InvalidArgumentError("give --cluster-file FILE (or --demo)");
  }
  return out;
}

int RunExplain(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kExplainFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<ExplainOptions> options = ParseExplainOptions(flags);
  if (!options.ok()) return kExplainFlags.Refuse(options.status());
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());
  absl::StatusOr<topology::ClusterData> cluster = ReadCluster(options->inputs);
  if (!cluster.ok()) return kExplainFlags.Refuse(cluster.status());
  absl::StatusOr<topology::PodFacts> pod = FindPod(options->pod, *cluster);
  if (!pod.ok()) return Fail(pod.status());

  std::vector<std::string> skipped;
  topology::ClusterSnapshot snapshot =
      topology::BuildSnapshot(*cluster, common::BuiltinCatalog(), *policy, &skipped);
  for (const std::string& why : skipped) std::cerr << "warning: pod skipped: " << why << "\n";
  std::vector<std::string> names = snapshot.SortedNodeNames();
  std::vector<absl::string_view> candidates(names.begin(), names.end());
  std::vector<NodeRow> nodes;
  // Fair sharing: where the pod's tenant stands in the cluster, and its fair share of it.
  ShareOfTenant share{topology::MakeLedger(snapshot, *policy)};
  if (absl::StatusOr<topology::PodContext> ctx =
          topology::MakePodContext(*pod, *policy, snapshot.NamespaceLabels(pod->namespace_name));
      ctx.ok()) {
    share.tenant = share.ledger.Find(ctx->tenant.name);
  }
  const bool tenant_share = share.tenant != nullptr;
  // The policy checks guarantees against fairSharing.capacity when it states one; here the
  // cluster itself is at hand.
  if (tenant_share) {
    if (absl::Status fits = topology::CheckGuarantees(*policy, share.ledger.capacity); !fits.ok()) {
      std::cerr << "warning: fair sharing: " << fits.message() << "\n";
    }
  }
  absl::StatusOr<extender::PodDecision> decision = extender::Decide(
      *pod, snapshot, *policy, candidates,
      [&](size_t i) { return snapshot.FindNode(candidates[i]); },
      extender::DecideOptions{/*scores=*/true, /*victims=*/true},
      [&](size_t i, const extender::NodeOutcome& o) {
        NodeRow row{std::string(candidates[i]), o.fit.verdict, o.fit.Reason(), o.score,
                    o.preemption.victims};
        row.pdb_violations = o.preemption.pdb_violations;
        if (o.fits() && tenant_share) row.share = std::string(topology::ShareKindName(o.share));
        nodes.push_back(std::move(row));
      });
  if (!decision.ok()) return Fail(decision.status());
  std::vector<ClaimRow> claims = ClaimRows(*pod, snapshot, *policy);
  // Where no node takes a MIG pod as things stand, whether a re-cut of one it may use would.
  std::string advice;
  if (std::none_of(nodes.begin(), nodes.end(), [](const NodeRow& n) { return n.fits(); })) {
    topology::PodFacts unbound = *pod;
    unbound.node_name.clear();
    plan::RecutInput recut = plan::RecutInputFromCluster(snapshot, *policy, {unbound});
    advice = plan::RecutAdvice(recut, plan::ProposeRecuts(recut.problem));
  }
  const std::optional<BoundDevices> bound = BoundDevicesOf(options->pod, *cluster, snapshot);
  const std::optional<std::vector<guard::ContractViolation>> contract =
      ContractOf(options->pod, *cluster, snapshot, *policy);
  if (options->output == OutputFormat::kJson) {
    PrintJson(*decision, bound, contract, claims, nodes, advice, share);
  } else {
    PrintText(*decision, bound, contract, claims, nodes, advice, share);
  }
  return 0;
}

}  // namespace cmd
