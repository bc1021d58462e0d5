#include "extender/preempt.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/extender_codec.h"
#include "common/k8s_codec.h"
#include "common/preemption_codec.h"
#include "topology/disruption_budget.h"
#include "topology/dra_extended.h"
#include "topology/preemption.h"

namespace extender {
namespace {

std::string HoldName(const topology::PodHold& hold) {
  return absl::StrCat(hold.namespace_name, "/", hold.name);
}

std::string Unknown(absl::string_view uid) {
  return absl::StrCat("victim ", uid,
                      " is not a GPU pod gpu-tenancy knows here, so whose it is cannot be checked");
}

std::string Protected(absl::string_view victim, absl::string_view tenant, int32_t priority) {
  return absl::StrCat("victim ", victim, " (tenant ", tenant, ", priority ", priority,
                      ") is not a pod this pod may preempt");
}

// Everything about the preemptor that every node shares.
struct Preemptor {
  topology::PodFacts pod;
  topology::GpuDemand demand;
  topology::PodContext ctx;
  std::optional<topology::PodQuotaCheck> quota;
};

// One node's answer, or the reason it is dropped.
void DecideNode(const common::PreemptionArgs::Node& proposed, Preemptor& p,
                const topology::PreemptionRoom& room, const topology::ModelState& state,
                PreemptNode& out, common::NodeVictims& answer) {
  const topology::ClusterSnapshot& snapshot = *state.snapshot;
  auto tenant_of = [&](absl::string_view ns) {
    return topology::ResolveTenant(*state.policy, ns, snapshot.NamespaceLabels(ns));
  };
  const topology::NodeState* node = snapshot.FindNode(proposed.name);
  auto drop = [&](std::string reason) {
    out.outcome = PreemptNode::Outcome::kDropped;
    out.reason = std::move(reason);
  };
  if (!node) {
    for (absl::string_view uid : proposed.uids) out.proposed.emplace_back(uid);
    return drop("node not yet known to gpu-tenancy");
  }
  absl::flat_hash_map<absl::string_view, const topology::PodHold*> holds;
  for (const auto& hold : node->holds) holds[hold->uid] = hold.get();
  for (absl::string_view uid : proposed.uids) {
    auto it = holds.find(uid);
    out.proposed.push_back(it != holds.end() ? HoldName(*it->second) : std::string(uid));
  }
  const topology::DraState& dra = snapshot.dra();
  topology::FitResult fit = topology::QuotaBeforeCapacity(
      topology::DemandUsesDra(p.demand, dra)
          ? topology::FitWithDra(p.demand, p.ctx, *node, dra)
          : topology::Fit(p.demand, p.ctx, node->supply, node->occupancy),
      p.quota ? &*p.quota : nullptr, *node);
  if (!fit.fits()) {
    // Said as the filter says it, so the audit line and kubectl agree.
    if (topology::PreemptionMayCure(fit)) fit = room.Classify(fit, *node);
    if (fit.verdict == topology::Verdict::kUnresolvable) return drop(fit.Reason());
  }

  if (room.uses_dra()) {
    // DRA-backed devices: kube-scheduler's DRA plugin chose the victims whose claims free them;
    // they stand if the policy lets this pod preempt every one.
    for (size_t k = 0; k < proposed.uids.size(); ++k) {
      auto it = holds.find(proposed.uids[k]);
      if (it == holds.end()) return drop(Unknown(proposed.uids[k]));
      const topology::PodHold& victim = *it->second;
      if (!room.MayPreempt(victim)) {
        return drop(
            Protected(out.proposed[k], tenant_of(victim.namespace_name).name, victim.priority));
      }
      answer.uids.emplace_back(proposed.uids[k]);
    }
    if (answer.uids.empty()) return drop("no victims proposed");
    out.victims = out.proposed;
    answer.node = std::string(proposed.name);
    answer.pdb_violations = proposed.pdb_violations;
    return;
  }
  topology::PreemptionChoice choice = room.Choose(*node, snapshot.disruption_budgets());
  if (!choice.possible) {
    return drop(absl::StrCat("no pods it may preempt make room: ", choice.blocked));
  }
  // Victims outside our model: kept as kube-scheduler chose them if we can tell whose they are
  // and the policy lets this pod preempt them.
  std::vector<topology::PodFacts> others;
  for (size_t k = 0; k < proposed.uids.size(); ++k) {
    if (holds.contains(proposed.uids[k])) continue;
    if (proposed.pods.empty()) return drop(Unknown(proposed.uids[k]));
    absl::StatusOr<topology::PodFacts> other = common::ParsePod(*proposed.pods[k], "victim");
    if (!other.ok())
      return drop(absl::StrCat("victim ", proposed.uids[k], ": ", other.status().message()));
    topology::TenantRef tenant = tenant_of(other->namespace_name);
    if (other->priority >= p.pod.priority ||
        !topology::MayPreempt(*state.policy, p.ctx.tenant, p.pod.namespace_name, tenant,
                              other->namespace_name)) {
      return drop(Protected(other->Key(), tenant.name, other->priority));
    }
    others.push_back(*std::move(other));
  }
  if (choice.victims.empty() && others.empty()) {
    return drop("the pod fits without evicting anyone");
  }
  std::vector<topology::BudgetedPod> budgeted;
  for (const topology::PodHold* v : choice.victims) {
    out.victims.push_back(HoldName(*v));
    answer.uids.push_back(v->uid);
  }
  for (const topology::PodFacts& o : others) {
    out.victims.push_back(o.Key());
    answer.uids.push_back(o.uid);
    budgeted.push_back({o.namespace_name, o.name, &o.labels});
  }
  std::vector<bool> violations =
      topology::BudgetViolations(budgeted, snapshot.disruption_budgets());
  answer.pdb_violations =
      choice.pdb_violations + std::count(violations.begin(), violations.end(), true);
  answer.node = std::string(proposed.name);
  std::vector<std::string> a = out.victims, b = out.proposed;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  out.outcome = a == b ? PreemptNode::Outcome::kKept : PreemptNode::Outcome::kChanged;
}

}  // namespace

absl::string_view OutcomeName(PreemptNode::Outcome outcome) {
  switch (outcome) {
    case PreemptNode::Outcome::kKept:
      return "kept";
    case PreemptNode::Outcome::kChanged:
      return "changed";
    case PreemptNode::Outcome::kDropped:
      return "dropped";
  }
  return "unknown";
}

PreemptReply Preempt(absl::string_view body, const topology::ModelState* state) {
  PreemptReply reply;
  auto bad = [&](const absl::Status& status) {
    reply.http_status = 400;
    reply.body = common::EncodeHttpError(status.message());
    return reply;
  };
  absl::StatusOr<common::PreemptionArgs> args = common::ParsePreemptionArgs(body);
  if (!args.ok()) return bad(args.status());
  Preemptor p;
  absl::StatusOr<topology::PodFacts> pod =
      common::ParsePod(*args->pod, "ExtenderPreemptionArgs.Pod");
  if (!pod.ok()) return bad(pod.status());
  p.pod = *std::move(pod);
  reply.pod = p.pod.Key();
  reply.uid = p.pod.uid;
  std::vector<common::NodeVictims> answers;
  if (!state) {
    for (const auto& n : args->nodes) {
      reply.nodes.push_back({std::string(n.name),
                             PreemptNode::Outcome::kDropped,
                             {},
                             {},
                             "gpu-tenancy: cache not synced"});
    }
    reply.body = common::EncodePreemptionResult(answers);
    return reply;
  }
  const topology::ClusterSnapshot& snapshot = *state->snapshot;
  const topology::Policy& policy = *state->policy;
  absl::StatusOr<topology::GpuDemand> demand =
      topology::ComputeDemandWithDra(p.pod, policy, snapshot.dra());
  if (!demand.ok()) return bad(demand.status());
  p.demand = *std::move(demand);
  absl::StatusOr<topology::PodContext> ctx =
      topology::MakePodContext(p.pod, policy, snapshot.NamespaceLabels(p.pod.namespace_name));
  if (!ctx.ok()) return bad(ctx.status());
  p.ctx = *std::move(ctx);
  reply.tenant = p.ctx.tenant.name;
  if (p.ctx.tenant.tier) reply.tier = p.ctx.tenant.tier->name;
  std::optional<topology::QuotaUsage> held;
  if (p.ctx.tenant.tenant && !p.ctx.tenant.tenant->quota.empty()) {
    held = topology::TenantUsage(snapshot, policy, p.ctx.tenant.name);
    p.quota.emplace(*p.ctx.tenant.tenant, policy, p.demand, *held);
  }
  auto tenant_of = [&](absl::string_view ns) {
    return topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns));
  };
  topology::PreemptionRoom room(p.demand, p.ctx, p.pod, held ? &*held : nullptr, snapshot.dra(),
                                tenant_of);
  for (const common::PreemptionArgs::Node& n : args->nodes) {
    PreemptNode out;
    out.node = std::string(n.name);
    common::NodeVictims answer;
    if (p.demand.empty() || p.ctx.tenant.Denied()) {
      // Not a GPU pod of ours: nothing of the contract to apply. A denied tenant's pod never
      // gets a GPU, so it may not take one from anyone either.
      if (p.ctx.tenant.Denied() && !p.demand.empty()) {
        out.outcome = PreemptNode::Outcome::kDropped;
        out.reason = absl::StrCat("tenant ", p.ctx.tenant.name, " is not allowed GPUs by policy");
      } else if (!n.uids.empty()) {
        for (absl::string_view uid : n.uids) answer.uids.emplace_back(uid);
        out.proposed = out.victims = answer.uids;
        answer.node = out.node;
        answer.pdb_violations = n.pdb_violations;
      } else {
        out.outcome = PreemptNode::Outcome::kDropped;
        out.reason = "no victims proposed";
      }
    } else {
      DecideNode(n, p, room, *state, out, answer);
    }
    if (out.outcome != PreemptNode::Outcome::kDropped) answers.push_back(std::move(answer));
    reply.nodes.push_back(std::move(out));
  }
  reply.body = common::EncodePreemptionResult(answers);
  return reply;
}

}  // namespace extender
