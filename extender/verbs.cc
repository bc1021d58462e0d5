#include "extender/verbs.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/extender_codec.h"
#include "common/k8s_codec.h"
#include "extender/decide.h"

namespace extender {
namespace {

constexpr absl::string_view kNotSynced = "gpu-tenancy: cache not synced";

VerbReply BadRequest(const absl::Status& status) {
  return VerbReply{400, common::EncodeHttpError(status.message())};
}

// Full-Node requests may name nodes the snapshot has not seen yet; their supply then comes
// from the Node object in the request, with no pods on them as far as we know.
class RequestNodes {
 public:
  RequestNodes(const common::ExtenderArgs& args, const topology::ModelState& state)
      : args_(args), state_(state) {}

  const topology::NodeState* Lookup(size_t i) {
    if (const topology::NodeState* known = state_.snapshot->FindNode(args_.node_names[i])) {
      return known;
    }
    if (args_.names_only) return nullptr;
    absl::StatusOr<topology::NodeFacts> facts = common::ParseNode(*args_.node_items[i]);
    if (!facts.ok()) return nullptr;
    auto node = std::make_unique<topology::NodeState>();
    node->supply = topology::BuildNodeSupply(*facts, *state_.catalog, *state_.policy);
    node->facts = *std::move(facts);
    extra_.push_back(std::move(node));
    return extra_.back().get();
  }

 private:
  const common::ExtenderArgs& args_;
  const topology::ModelState& state_;
  std::vector<std::unique_ptr<topology::NodeState>> extra_;
};

struct Parsed {
  common::ExtenderArgs args;
  topology::PodFacts pod;
};

absl::StatusOr<Parsed> ParseRequest(absl::string_view body) {
  absl::StatusOr<common::ExtenderArgs> args = common::ParseExtenderArgs(body);
  if (!args.ok()) return args.status();
  absl::StatusOr<topology::PodFacts> pod = common::ParsePod(*args->pod, "ExtenderArgs.Pod");
  if (!pod.ok()) return pod.status();
  return Parsed{*std::move(args), *std::move(pod)};
}

}  // namespace

VerbReply Filter(absl::string_view body, const topology::ModelState* state) {
  absl::StatusOr<Parsed> req = ParseRequest(body);
  if (!req.ok()) return BadRequest(req.status());
  const common::ExtenderArgs& args = req->args;
  if (!state) return VerbReply{200, common::EncodeFilterError(kNotSynced)};

  RequestNodes nodes(args, *state);
  absl::StatusOr<PodDecision> decision =
      Decide(req->pod, *state->snapshot, *state->policy, args.node_names,
             [&](size_t i) { return nodes.Lookup(i); }, /*with_scores=*/false);
  if (!decision.ok()) return BadRequest(decision.status());

  VerbReply reply;
  reply.gpu_pod = !decision->demand.empty();
  common::FilterReply result;
  result.kept.reserve(decision->nodes.size());
  for (size_t i = 0; i < decision->nodes.size(); ++i) {
    NodeDecision& d = decision->nodes[i];
    if (!d.fit.fits()) ++reply.rejections[{topology::VerdictName(d.fit.verdict), d.fit.code}];
    switch (d.fit.verdict) {
      case topology::Verdict::kFits:
        result.kept.push_back(i);
        break;
      case topology::Verdict::kUnschedulable:
        result.failed.insert_or_assign(std::move(d.node), std::move(d.fit.reason));
        break;
      case topology::Verdict::kUnresolvable:
        result.failed_unresolvable.insert_or_assign(std::move(d.node), std::move(d.fit.reason));
        break;
    }
  }
  reply.kept = static_cast<int>(result.kept.size());
  reply.failed = static_cast<int>(result.failed.size());
  reply.unresolvable = static_cast<int>(result.failed_unresolvable.size());
  reply.body = common::EncodeFilterResult(args, result);
  return reply;
}

VerbReply Prioritize(absl::string_view body, const topology::ModelState* state) {
  absl::StatusOr<Parsed> req = ParseRequest(body);
  if (!req.ok()) return BadRequest(req.status());
  const common::ExtenderArgs& args = req->args;
  std::vector<common::HostScore> scores;
  scores.reserve(args.node_names.size());
  if (!state) {
    // Prioritize errors are ignored by kube-scheduler; neutral scores say the same politely.
    for (absl::string_view name : args.node_names) scores.push_back({name, 0});
    return VerbReply{200, common::EncodeHostPriorityList(scores)};
  }
  RequestNodes nodes(args, *state);
  absl::StatusOr<PodDecision> decision =
      Decide(req->pod, *state->snapshot, *state->policy, args.node_names,
             [&](size_t i) { return nodes.Lookup(i); }, /*with_scores=*/true);
  if (!decision.ok()) return BadRequest(decision.status());
  VerbReply reply;
  reply.gpu_pod = !decision->demand.empty();
  for (size_t i = 0; i < decision->nodes.size(); ++i) {
    scores.push_back({args.node_names[i], decision->nodes[i].score});
    reply.kept += decision->nodes[i].fit.fits();
  }
  reply.body = common::EncodeHostPriorityList(scores);
  return reply;
}

}  // namespace extender
