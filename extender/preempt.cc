#include "extender/preempt.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "topology/disruption_budget.h"
#include "topology/dra/extended_resources.h"
#include "topology/fair_share_check.h"
#include "topology/preemption.h"
#include "wire/extender_codec.h"
#include "wire/k8s_codec.h"
#include "wire/preemption_codec.h"

namespace extender {
namespace {

std::string HoldName(const topology::PodHold& hold) {
  return absl::StrCat(hold.namespace_name, "/", hold.name);
}

std::string Unresolved(absl::string_view uid, absl::string_view node) {
  return absl::StrCat("victim ", uid, " is no pod gpu-tenancy's watch has seen on node ", node,
                      ", so whose it is cannot be checked");
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
  // Fair sharing, for a tenant that takes part: a pod within its guarantee may reclaim.
  std::optional<topology::FairShareLedger> ledger;
  std::optional<topology::PodShareCheck> share;
};

// One of kube-scheduler's victims on a node, and what tells us whose it is: the model's hold
// (a GPU pod), the Pod object kube-scheduler sent (nodeCacheCapable: false), or the watch's
// directory of bound pods (nodeCacheCapable: true sends the UID alone).
struct Victim {
  absl::string_view uid;
  const topology::PodHold* hold = nullptr;
  std::optional<topology::PodFacts> facts;
  const topology::BoundPodRef* ref = nullptr;

  bool resolved() const { return hold || facts || ref; }
  std::string Key() const {
    if (hold) return HoldName(*hold);
    if (facts) return facts->Key();
    if (ref) return ref->Key();
    return std::string(uid);
  }
  absl::string_view namespace_name() const {
    return hold ? hold->namespace_name : facts ? facts->namespace_name : ref->namespace_name;
  }
  int32_t priority() const {
    return hold ? hold->priority : facts ? facts->priority : ref->priority;
  }
};

// Every victim kube-scheduler proposed on `node`, resolved as far as the request and the
// snapshot allow, with `out.proposed` named after them. An error only for a Pod object the
// request carries but that does not parse.
absl::StatusOr<std::vector<Victim>> ResolveVictims(const wire::PreemptionArgs::Node& proposed,
                                                   const topology::NodeState& node,
                                                   const topology::ClusterSnapshot& snapshot,
                                                   PreemptNode& out) {
  absl::flat_hash_map<absl::string_view, const topology::PodHold*> holds;
  for (const auto& hold : node.holds) holds[hold->uid] = hold.get();
  std::vector<Victim> victims;
  for (size_t k = 0; k < proposed.uids.size(); ++k) {
    Victim v;
    v.uid = proposed.uids[k];
    if (auto it = holds.find(v.uid); it != holds.end()) {
      v.hold = it->second;
    } else if (!proposed.pods.empty()) {
      absl::StatusOr<topology::PodFacts> facts = wire::ParsePod(*proposed.pods[k], "victim");
      if (!facts.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("victim ", v.uid, ": ", facts.status().message()));
      }
      v.facts = *std::move(facts);
    } else if (const topology::BoundPodRef* ref = snapshot.FindBoundPod(v.uid);
               ref && ref->node == node.facts.name) {
      v.ref = ref;
    }
    out.proposed.push_back(v.Key());
    victims.push_back(std::move(v));
  }
  return victims;
}

// Whether the pod `uid` of `namespace_name` holds devices through an allocated ResourceClaim
// reserved for it: a GPU pod the model counts by its claims, not by a hold.
bool HoldsClaimedDevices(const topology::DraState& dra, absl::string_view namespace_name,
                         absl::string_view uid) {
  bool holds = false;
  dra.claims.ForEachIn(namespace_name, [&](const topology::DraClaim& claim) {
    if (holds || !claim.allocated || claim.results.empty()) return;
    for (const topology::DraReservation& r : claim.reserved_for) holds |= r.uid == uid;
  });
  return holds;
}

// The node's answer when kube-scheduler's victims stand as proposed.
void KeepProposed(const wire::PreemptionArgs::Node& proposed, PreemptNode& out,
                  wire::NodeVictims& answer) {
  for (absl::string_view uid : proposed.uids) answer.uids.emplace_back(uid);
  out.victims = out.proposed;
  answer.node = std::string(proposed.name);
  answer.pdb_violations = proposed.pdb_violations;
}

class NodeDecision {
 public:
  NodeDecision(Preemptor& p, const topology::PreemptionRoom& room,
               const topology::ModelState& state)
      : p_(p), room_(room), state_(state), snapshot_(*state.snapshot) {}

  void Decide(const wire::PreemptionArgs::Node& proposed, PreemptNode& out,
              wire::NodeVictims& answer) const;

 private:
  topology::TenantRef TenantOf(absl::string_view ns) const {
    return topology::ResolveTenant(*state_.policy, ns, snapshot_.NamespaceLabels(ns));
  }
  // Why the policy keeps this pod from evicting `v` on `node`; "" when it may.
  std::string ProtectedBy(const Victim& v, const topology::NodeState& node) const;
  // kube-scheduler's victims for a pod that holds no GPU of ours (CPU only, or GPUs the
  // extender is not asked about): they stand unless one is another tenant's GPU pod the
  // policy protects from it.
  void DecideForOtherPod(const wire::PreemptionArgs::Node& proposed,
                         const topology::NodeState& node, const std::vector<Victim>& victims,
                         PreemptNode& out, wire::NodeVictims& answer) const;
  void DecideForGpuPod(const wire::PreemptionArgs::Node& proposed, const topology::NodeState& node,
                       const std::vector<Victim>& victims, PreemptNode& out,
                       wire::NodeVictims& answer) const;

  Preemptor& p_;  // its quota check remembers the last node it saw
  const topology::PreemptionRoom& room_;
  const topology::ModelState& state_;
  const topology::ClusterSnapshot& snapshot_;
};

std::string NodeDecision::ProtectedBy(const Victim& v, const topology::NodeState& node) const {
  if (v.hold) {
    if (room_.MayEvict(*v.hold, node)) return "";
  } else if (v.priority() < p_.pod.priority &&
             topology::MayPreempt(*state_.policy, p_.ctx.tenant, p_.pod.namespace_name,
                                  TenantOf(v.namespace_name()), v.namespace_name())) {
    return "";
  }
  return Protected(v.Key(), TenantOf(v.namespace_name()).name, v.priority());
}

void NodeDecision::Decide(const wire::PreemptionArgs::Node& proposed, PreemptNode& out,
                          wire::NodeVictims& answer) const {
  auto drop = [&](std::string reason) {
    out.outcome = PreemptNode::Outcome::kDropped;
    out.reason = std::move(reason);
  };
  const topology::NodeState* node = snapshot_.FindNode(proposed.name);
  if (!node) {
    for (absl::string_view uid : proposed.uids) out.proposed.emplace_back(uid);
    return drop("node not yet known to gpu-tenancy");
  }
  absl::StatusOr<std::vector<Victim>> victims = ResolveVictims(proposed, *node, snapshot_, out);
  if (!victims.ok()) return drop(std::string(victims.status().message()));
  for (const Victim& v : *victims) {
    if (!v.resolved()) return drop(Unresolved(v.uid, proposed.name));
  }
  if (p_.demand.empty()) return DecideForOtherPod(proposed, *node, *victims, out, answer);
  DecideForGpuPod(proposed, *node, *victims, out, answer);
}

void NodeDecision::DecideForOtherPod(const wire::PreemptionArgs::Node& proposed,
                                     const topology::NodeState& node,
                                     const std::vector<Victim>& victims, PreemptNode& out,
                                     wire::NodeVictims& answer) const {
  for (const Victim& v : victims) {
    // A GPU pod: a hold of the model, a pod holding devices through claims, or a Pod object
    // the watch has not counted yet that asks for GPUs.
    bool gpu = v.hold != nullptr || HoldsClaimedDevices(snapshot_.dra(), v.namespace_name(), v.uid);
    if (v.facts && !gpu) {
      absl::StatusOr<topology::GpuDemand> demand =
          topology::ComputeDemandWithDra(*v.facts, *state_.policy, snapshot_.dra());
      gpu = !demand.ok() || !demand->empty() || !v.facts->resource_claims.empty();
    }
    if (!gpu) continue;
    if (std::string why = ProtectedBy(v, node); !why.empty()) {
      out.outcome = PreemptNode::Outcome::kDropped;
      out.reason = std::move(why);
      return;
    }
  }
  if (proposed.uids.empty()) {
    out.outcome = PreemptNode::Outcome::kDropped;
    out.reason = "no victims proposed";
    return;
  }
  KeepProposed(proposed, out, answer);
}

void NodeDecision::DecideForGpuPod(const wire::PreemptionArgs::Node& proposed,
                                   const topology::NodeState& node,
                                   const std::vector<Victim>& victims, PreemptNode& out,
                                   wire::NodeVictims& answer) const {
  auto drop = [&](std::string reason) {
    out.outcome = PreemptNode::Outcome::kDropped;
    out.reason = std::move(reason);
  };
  const topology::DraState& dra = snapshot_.dra();
  topology::FitResult fit = topology::QuotaBeforeCapacity(
      topology::DemandUsesDra(p_.demand, dra)
          ? topology::FitWithDra(p_.demand, p_.ctx, node, dra)
          : topology::Fit(p_.demand, p_.ctx, node.supply, node.occupancy),
      p_.quota ? &*p_.quota : nullptr, node);
  fit = topology::ShareBeforeCapacity(fit, p_.share ? &*p_.share : nullptr, node);
  if (!fit.fits()) {
    // Said as the filter says it, so the audit line and kubectl agree.
    if (topology::PreemptionMayCure(fit)) fit = room_.Classify(fit, node);
    if (fit.verdict == topology::Verdict::kUnresolvable) return drop(fit.Reason());
  }

  if (room_.uses_dra()) {
    // DRA-backed devices: kube-scheduler's DRA plugin chose the victims whose claims free them;
    // they stand if the policy lets this pod preempt every one.
    for (const Victim& v : victims) {
      if (std::string why = ProtectedBy(v, node); !why.empty()) return drop(std::move(why));
    }
    if (proposed.uids.empty()) return drop("no victims proposed");
    return KeepProposed(proposed, out, answer);
  }
  topology::PreemptionChoice choice = room_.Choose(node, snapshot_.disruption_budgets());
  if (!choice.possible) {
    return drop(absl::StrCat("no pods it may preempt make room: ", choice.blocked));
  }
  // Victims outside our model (they free what kube-scheduler's own plugins counted: CPU,
  // memory, ports) stay as it chose them if the policy lets this pod preempt them.
  std::vector<const Victim*> others;
  for (const Victim& v : victims) {
    if (v.hold) continue;
    if (std::string why = ProtectedBy(v, node); !why.empty()) return drop(std::move(why));
    others.push_back(&v);
  }
  if (choice.victims.empty() && others.empty()) {
    return drop("the pod fits without evicting anyone");
  }
  for (const topology::PodHold* v : choice.victims) {
    out.victims.push_back(HoldName(*v));
    answer.uids.push_back(v->uid);
  }
  // PodDisruptionBudgets: counted for the Pod objects we were sent. The watch keeps no labels,
  // so for victims known by UID only, kube-scheduler's own count for its set stands in, less
  // what its GPU victims among them account for.
  std::vector<topology::BudgetedPod> budgeted;
  int64_t uid_only = 0;
  for (const Victim* o : others) {
    out.victims.push_back(o->Key());
    answer.uids.emplace_back(o->uid);
    if (o->facts) {
      budgeted.push_back({o->facts->namespace_name, o->facts->name, &o->facts->labels});
    } else {
      ++uid_only;
    }
  }
  const auto& budgets = snapshot_.disruption_budgets();
  std::vector<bool> violations = topology::BudgetViolations(budgeted, budgets);
  int64_t pdb = choice.pdb_violations + std::count(violations.begin(), violations.end(), true);
  if (uid_only > 0) {
    std::vector<topology::BudgetedPod> proposed_gpu;
    for (const Victim& v : victims) {
      if (v.hold) proposed_gpu.push_back({v.hold->namespace_name, v.hold->name, &v.hold->labels});
    }
    std::vector<bool> gpu_violations = topology::BudgetViolations(proposed_gpu, budgets);
    const int64_t rest =
        proposed.pdb_violations - std::count(gpu_violations.begin(), gpu_violations.end(), true);
    pdb += std::clamp<int64_t>(rest, 0, uid_only);
  }
  answer.pdb_violations = pdb;
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
    reply.body = wire::EncodeHttpError(status.message());
    return reply;
  };
  absl::StatusOr<wire::PreemptionArgs> args = wire::ParsePreemptionArgs(body);
  if (!args.ok()) return bad(args.status());
  Preemptor p;
  absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(*args->pod, "ExtenderPreemptionArgs.Pod");
  if (!pod.ok()) return bad(pod.status());
  p.pod = *std::move(pod);
  reply.pod = p.pod.Key();
  reply.uid = p.pod.uid;
  std::vector<wire::NodeVictims> answers;
  if (!state) {
    for (const auto& n : args->nodes) {
      reply.nodes.push_back({std::string(n.name),
                             PreemptNode::Outcome::kDropped,
                             {},
                             {},
                             "gpu-tenancy: cache not synced"});
    }
    reply.body = wire::EncodePreemptionResult(answers);
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
  if (!p.demand.empty() && p.ctx.tenant.tenant && !p.ctx.tenant.tenant->quota.empty()) {
    held = topology::TenantUsage(snapshot, policy, p.ctx.tenant.name);
    p.quota.emplace(*p.ctx.tenant.tenant, policy, p.demand, *held);
  }
  auto tenant_of = [&](absl::string_view ns) {
    return topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns));
  };
  if (!p.demand.empty() && p.ctx.tenant.tenant && p.ctx.tenant.tenant->fair_share) {
    p.ledger.emplace(topology::MakeLedger(snapshot, policy));
    p.share.emplace(*p.ledger, policy, *p.ctx.tenant.tenant, p.demand,
                    held ? *held : topology::TenantUsage(snapshot, policy, p.ctx.tenant.name));
  }
  topology::PreemptionRoom room(p.demand, p.ctx, p.pod, held ? &*held : nullptr, snapshot.dra(),
                                tenant_of);
  if (p.share) {
    room.EnableReclaim(snapshot, *p.ledger, [&](const topology::NodeState& node) {
      return p.share->GuaranteedOn(node.supply, node.facts.labels);
    });
  }
  NodeDecision decision(p, room, *state);
  for (const wire::PreemptionArgs::Node& n : args->nodes) {
    PreemptNode out;
    out.node = std::string(n.name);
    wire::NodeVictims answer;
    if (p.ctx.tenant.Denied() && !p.demand.empty()) {
      // A denied tenant's pod never gets a GPU, so it may not take one from anyone either.
      for (absl::string_view uid : n.uids) out.proposed.emplace_back(uid);
      out.outcome = PreemptNode::Outcome::kDropped;
      out.reason = absl::StrCat("tenant ", p.ctx.tenant.name, " is not allowed GPUs by policy");
    } else {
      decision.Decide(n, out, answer);
    }
    if (out.outcome != PreemptNode::Outcome::kDropped) answers.push_back(std::move(answer));
    reply.nodes.push_back(std::move(out));
  }
  reply.body = wire::EncodePreemptionResult(answers);
  return reply;
}

}  // namespace extender
