#include "extender/decide.h"

#include <algorithm>
#include <array>

#include "topology/status_macros.h"

namespace extender {

using topology::Verdict;

namespace {

// Candidates prefetched ahead of the one being decided. A decision reads a few dependent
// pointers that are cold in a cluster of thousands of nodes; asking for each level early lets
// the misses of several candidates overlap instead of queueing.
constexpr size_t kEntryAhead = 8;     // the summary (or, without one, the node state)
constexpr size_t kResourceAhead = 4;  // the resources the pod asks for (summary now cached)
constexpr size_t kNameAhead = 2;      // their names (resource entries now cached)

void PrefetchEntry(const topology::NodeRef& node) {
  if (node.fit) {
    __builtin_prefetch(node.fit);
    __builtin_prefetch(reinterpret_cast<const char*>(node.fit) + 64);
  } else if (node.state) {
    __builtin_prefetch(&node.state->supply.resources);
    __builtin_prefetch(&node.state->supply.pool_mode);
    __builtin_prefetch(&node.state->occupancy.used);
  }
}

// The summary's resources whose name hash is one the pod asks for.
template <typename F>
void ForAskedResources(const topology::NodeRef& node, const topology::DemandKeys& keys, F f) {
  if (!node.fit || !node.fit->usable) return;
  for (size_t j = 0; j < node.fit->count; ++j) {
    const topology::NodeFitSummary::Resource& r = node.fit->resources[j];
    for (size_t key : keys.name_hashes) {
      if (r.name_hash == key) f(*r.offered);
    }
  }
}

}  // namespace

absl::StatusOr<PodDecision> Decide(const topology::PodFacts& pod,
                                   const topology::ClusterSnapshot& snapshot,
                                   const topology::Policy& policy,
                                   const std::vector<absl::string_view>& candidates,
                                   NodeRefLookup lookup, bool with_scores, NodeVisitor visit) {
  PodDecision out;
  out.pod = pod.Key();
  ASSIGN_OR_RETURN(out.demand, topology::ComputeDemand(pod, policy));
  ASSIGN_OR_RETURN(topology::PodContext ctx,
                   topology::MakePodContext(pod, policy,
                                            snapshot.NamespaceLabels(pod.namespace_name)));
  out.tenant = ctx.tenant.name;
  if (ctx.tenant.tier) out.tier = ctx.tenant.tier->name;
  const size_t n = candidates.size();
  if (out.demand.empty()) {
    // No GPU demand: nothing of ours to check, every node passes.
    for (size_t i = 0; i < n; ++i) visit(i, NodeOutcome{});
    return out;
  }
  const topology::DemandKeys keys = topology::MakeDemandKeys(out.demand);
  // A ring of looked-up nodes: lookup(j) runs kEntryAhead candidates before j is decided.
  constexpr size_t kRing = 16;
  static_assert(kRing > kEntryAhead && kEntryAhead > kResourceAhead && kResourceAhead > kNameAhead);
  std::array<topology::NodeRef, kRing> ring{};
  size_t looked_up = 0;
  for (size_t i = 0; i < n; ++i) {
    for (; looked_up < std::min(i + kEntryAhead + 1, n); ++looked_up) {
      ring[looked_up % kRing] = lookup(looked_up);
      PrefetchEntry(ring[looked_up % kRing]);
    }
    if (i + kResourceAhead < n) {
      ForAskedResources(ring[(i + kResourceAhead) % kRing], keys,
                        [](const topology::OfferedResource& r) { __builtin_prefetch(&r); });
    }
    if (i + kNameAhead < n) {
      ForAskedResources(ring[(i + kNameAhead) % kRing], keys, [](const topology::OfferedResource& r) {
        __builtin_prefetch(r.name.data());
      });
    }
    const topology::NodeRef node = ring[i % kRing];
    NodeOutcome o;
    if (!node.state) {
      o.fit.verdict = Verdict::kUnschedulable;
      o.fit.rule = topology::Rule::kUnknownNode;
    } else {
      const topology::NodeState& state = *node.state;
      o.fit = node.fit ? topology::Fit(out.demand, keys, ctx, *node.fit, state.supply, state.occupancy)
                       : topology::Fit(out.demand, ctx, state.supply, state.occupancy);
      if (with_scores && o.fit.fits()) {
        o.score = node.fit ? topology::Score(out.demand, keys, ctx, *node.fit, state.supply,
                                             state.occupancy)
                           : topology::Score(out.demand, ctx, state.supply, state.occupancy);
      }
    }
    visit(i, o);
  }
  return out;
}

}  // namespace extender
