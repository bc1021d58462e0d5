#include "extender/verbs.h"

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "extender/decide.h"
#include "wire/extender_codec.h"
#include "wire/k8s_codec.h"

namespace extender {
namespace {

constexpr absl::string_view kNotSynced = "gpu-tenancy: cache not synced";

VerbReply BadRequest(const absl::Status& status) {
  return VerbReply{400, wire::EncodeHttpError(status.message())};
}

// Full-Node requests may name nodes the snapshot has not seen yet; their supply then comes
// from the Node object in the request, with no pods on them as far as we know.
class RequestNodes {
 public:
  RequestNodes(const wire::ExtenderArgs& args, const topology::ModelState& state)
      : args_(args), state_(state) {}

  const topology::NodeState* Lookup(size_t i) {
    if (known_.empty() && !args_.node_names.empty()) {
      // All candidates at once, on the first call: the snapshot overlaps the lookups' misses.
      known_.resize(args_.node_names.size());
      state_.snapshot->FindNodes(args_.node_names, absl::MakeSpan(known_));
    }
    if (known_[i]) return known_[i];
    if (args_.names_only) return nullptr;
    absl::StatusOr<topology::NodeFacts> facts = wire::ParseNode(*args_.node_items[i]);
    if (!facts.ok()) return nullptr;
    auto node = std::make_unique<topology::NodeState>();
    node->supply = topology::BuildNodeSupply(*facts, *state_.catalog, *state_.policy);
    node->facts = *std::move(facts);
    extra_.push_back(std::move(node));
    return extra_.back().get();
  }

  // The snapshot's entry for candidate i's name (one per name), null when it has none. Only
  // after Lookup(i).
  const void* Identity(size_t i) const { return i < known_.size() ? known_[i] : nullptr; }

 private:
  const wire::ExtenderArgs& args_;
  const topology::ModelState& state_;
  std::vector<const topology::NodeState*> known_;
  std::vector<std::unique_ptr<topology::NodeState>> extra_;
};

// Rejected candidates of one verdict, collected without a string per node: reasons go into one
// buffer, and nodes rejected with a result seen among the last few distinct ones share its copy,
// formatted once (candidates of a few kinds often alternate, so "the same as the last" is not
// enough).
// Entries() gives what the reply's object needs: one entry per node name, the last one winning, as
// a map keyed by name would hold (kube-scheduler sends distinct names; a repeated name must not
// repeat a key).
class Rejected {
 public:
  // `fit` is a rejection; the views of every result added stay valid for the request.
  void Add(size_t candidate, const topology::FitResult& fit) {
    const Formatted* reason = nullptr;
    for (const Formatted& f : recent_) {
      if (f.fit == fit) {
        reason = &f;
        break;
      }
    }
    if (!reason) {
      Formatted& slot = recent_[next_slot_];
      next_slot_ = (next_slot_ + 1) % recent_.size();
      slot.fit = fit;
      slot.begin = reasons_.size();
      fit.AppendReason(reasons_);
      slot.size = reasons_.size() - slot.begin;
      reason = &slot;
    }
    entries_.push_back({candidate, reason->begin, reason->size});
  }

  size_t size() const { return entries_.size(); }

  // `identity(candidate)` is the snapshot's entry for that name (one per name), or null.
  template <typename Identity>
  std::vector<wire::FailedNode> Entries(const std::vector<absl::string_view>& names,
                                        Identity identity) const {
    std::vector<wire::FailedNode> out;
    out.reserve(entries_.size());
    if (!MayRepeat(identity)) {
      for (const Entry& e : entries_) out.push_back({e.candidate, Reason(e)});
      return out;
    }
    absl::flat_hash_map<absl::string_view, size_t> last;  // name -> its last entry
    last.reserve(entries_.size());
    for (size_t k = 0; k < entries_.size(); ++k) last[names[entries_[k].candidate]] = k;
    for (size_t k = 0; k < entries_.size(); ++k) {
      if (last[names[entries_[k].candidate]] == k)
        out.push_back({entries_[k].candidate, Reason(entries_[k])});
    }
    return out;
  }

 private:
  struct Entry {
    size_t candidate;
    size_t begin, size;
  };
  absl::string_view Reason(const Entry& e) const {
    return absl::string_view(reasons_).substr(e.begin, e.size);
  }
  // False when every candidate is a distinct node of the snapshot: distinct entries have
  // distinct names, so no name repeats (checked by pointer, without hashing names).
  template <typename Identity>
  bool MayRepeat(Identity identity) const {
    absl::flat_hash_set<const void*> seen;
    seen.reserve(entries_.size());
    for (const Entry& e : entries_) {
      const void* id = identity(e.candidate);
      if (!id || !seen.insert(id).second) return true;
    }
    return false;
  }
  // A result already formatted into reasons_. An unused slot holds a fitting result, which is
  // never added, so it matches nothing.
  struct Formatted {
    topology::FitResult fit;
    size_t begin = 0, size = 0;
  };
  std::vector<Entry> entries_;
  std::string reasons_;
  std::array<Formatted, 4> recent_;
  size_t next_slot_ = 0;
};

struct Parsed {
  wire::ExtenderArgs args;
  topology::PodFacts pod;
};

absl::StatusOr<Parsed> ParseRequest(absl::string_view body) {
  absl::StatusOr<wire::ExtenderArgs> args = wire::ParseExtenderArgs(body);
  if (!args.ok()) return args.status();
  absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(*args->pod, "ExtenderArgs.Pod");
  if (!pod.ok()) return pod.status();
  return Parsed{*std::move(args), *std::move(pod)};
}

}  // namespace

VerbReply Filter(absl::string_view body, const topology::ModelState* state) {
  absl::StatusOr<Parsed> req = ParseRequest(body);
  if (!req.ok()) return BadRequest(req.status());
  const wire::ExtenderArgs& args = req->args;
  if (!state) return VerbReply{200, wire::EncodeFilterError(kNotSynced)};

  RequestNodes nodes(args, *state);
  std::vector<size_t> kept;
  kept.reserve(args.node_names.size());
  Rejected failed, unresolvable;
  // Rejections per (verdict, rule code): a handful of codes, counted without a map per node.
  absl::InlinedVector<std::pair<std::pair<absl::string_view, absl::string_view>, int>, 8> counts;
  absl::StatusOr<PodDecision> decision = Decide(
      req->pod, *state->snapshot, *state->policy, args.node_names,
      [&](size_t i) { return nodes.Lookup(i); }, /*with_scores=*/false,
      [&](size_t i, const NodeOutcome& o) {
        switch (o.fit.verdict) {
          case topology::Verdict::kFits:
            kept.push_back(i);
            return;
          case topology::Verdict::kUnschedulable:
            failed.Add(i, o.fit);
            break;
          case topology::Verdict::kUnresolvable:
            unresolvable.Add(i, o.fit);
            break;
        }
        std::pair<absl::string_view, absl::string_view> key{topology::VerdictName(o.fit.verdict),
                                                            o.fit.code()};
        auto it = std::find_if(counts.begin(), counts.end(),
                               [&](const auto& c) { return c.first == key; });
        if (it == counts.end()) {
          counts.push_back({key, 1});
        } else {
          ++it->second;
        }
      });
  if (!decision.ok()) return BadRequest(decision.status());

  VerbReply reply;
  reply.gpu_pod = !decision->demand.empty();
  for (const auto& [key, n] : counts) reply.rejections[key] += n;
  auto identity = [&](size_t i) { return nodes.Identity(i); };
  std::vector<wire::FailedNode> failed_nodes = failed.Entries(args.node_names, identity);
  std::vector<wire::FailedNode> unresolvable_nodes =
      unresolvable.Entries(args.node_names, identity);
  reply.kept = static_cast<int>(kept.size());
  reply.failed = static_cast<int>(failed_nodes.size());
  reply.unresolvable = static_cast<int>(unresolvable_nodes.size());
  reply.body = wire::EncodeFilterResult(args, kept, failed_nodes, unresolvable_nodes);
  return reply;
}

VerbReply Prioritize(absl::string_view body, const topology::ModelState* state) {
  absl::StatusOr<Parsed> req = ParseRequest(body);
  if (!req.ok()) return BadRequest(req.status());
  const wire::ExtenderArgs& args = req->args;
  std::vector<wire::HostScore> scores;
  scores.reserve(args.node_names.size());
  if (!state) {
    // Prioritize errors are ignored by kube-scheduler; neutral scores say the same politely.
    for (absl::string_view name : args.node_names) scores.push_back({name, 0});
    return VerbReply{200, wire::EncodeHostPriorityList(scores)};
  }
  RequestNodes nodes(args, *state);
  VerbReply reply;
  absl::StatusOr<PodDecision> decision = Decide(
      req->pod, *state->snapshot, *state->policy, args.node_names,
      [&](size_t i) { return nodes.Lookup(i); }, /*with_scores=*/true,
      [&](size_t i, const NodeOutcome& o) {
        scores.push_back({args.node_names[i], o.score});
        reply.kept += o.fits();
      });
  if (!decision.ok()) return BadRequest(decision.status());
  reply.gpu_pod = !decision->demand.empty();
  reply.body = wire::EncodeHostPriorityList(scores);
  return reply;
}

}  // namespace extender
