#include "topology/dra/claim_fit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/dra/capacity.h"
#include "topology/dra/counters.h"
#include "topology/dra/selector.h"

namespace topology {
namespace dra_claim_fit_internal {

// The tenant limits one request selector holds, and how to tell which of them excluded a device.
struct LimitSelector {
  std::vector<std::string> limits;  // empty: the class's or the request's own selector
  // With several limits, each one's own expression, in `limits`' order.
  std::vector<CompiledSelector> parts;
};

// A request's selectors in the allocator's order (class first), each with who wrote it.
struct Evaluation {
  RequestOnNode prototype;  // everything but the per-node counts
  DraCapacity capacity_requests;
  std::vector<CompiledSelector> selectors;
  std::vector<LimitSelector> limit;  // per selector
};

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// What the request selector `expression` holds of the tenant's limits.
LimitSelector LimitsOf(const std::string& expression, const RequestLimits& limits) {
  LimitSelector out;
  for (const NamedSelector& s : limits.own) {
    if (s.expression == expression) return {{s.limit}, {}};
  }
  for (const RequestLimits::Joined& j : limits.joined) {
    if (j.expression != expression) continue;
    out.limits = j.limits;
    for (const std::string& limit : j.limits) {
      for (const NamedSelector& s : limits.own) {
        if (s.limit == limit) out.parts.push_back(CompiledSelector::Compile(s.expression));
      }
    }
    if (out.parts.size() != out.limits.size()) out.parts.clear();  // not told apart
    return out;
  }
  return out;
}

Evaluation Prepare(const DraRequest& request, const DraState& dra,
                   const RequestLimitsFor& tenant_limits) {
  Evaluation e;
  e.prototype.request = request.name;
  e.prototype.device_class = request.device_class;
  e.prototype.all = request.all;
  e.prototype.wanted = request.all ? 0 : request.count;
  e.capacity_requests = request.capacity_requests;
  const DraDeviceClass* device_class = nullptr;
  for (const DraDeviceClass& c : dra.classes()) {
    if (c.name == request.device_class) device_class = &c;
  }
  e.prototype.class_found = device_class != nullptr;
  if (!device_class) return e;
  const RequestLimits limits =
      tenant_limits ? tenant_limits(request.device_class) : RequestLimits{};
  for (const std::string& expression : device_class->selectors) {
    e.selectors.push_back(CompiledSelector::Compile(expression));
    e.limit.emplace_back();
  }
  std::vector<std::string> carried;
  for (const std::string& expression : request.selectors) {
    e.selectors.push_back(CompiledSelector::Compile(expression));
    e.limit.push_back(LimitsOf(expression, limits));
    carried.insert(carried.end(), e.limit.back().limits.begin(), e.limit.back().limits.end());
  }
  for (const std::string& limit : limits.required) {
    if (Contains(carried, limit)) continue;
    (Contains(limits.implied, limit) ? e.prototype.limits_implied : e.prototype.limits_not_in_claim)
        .push_back(limit);
  }
  return e;
}

// The limit a device that `selector` excluded is counted under: the first of its limits whose
// own expression is false for the device, else all of them.
std::string ExcludedBy(const LimitSelector& selector, const DraDevice& device) {
  for (size_t i = 0; i < selector.parts.size(); ++i) {
    if (selector.parts[i].Evaluate(device).outcome == SelectorOutcome::kNoMatch) {
      return selector.limits[i];
    }
  }
  return absl::StrJoin(selector.limits, " and ");
}

// Counts one device into `on`: the first selector that is not true decides, as in the
// allocator; then whether the device can be given to the request now. `blocked`: what it
// consumes of shared counters is used up by held devices.
void Count(const Evaluation& e, const DraState& dra, size_t k, bool blocked, RequestOnNode& on) {
  const DraDevice& device = dra.devices()[k];
  for (size_t i = 0; i < e.selectors.size(); ++i) {
    SelectorResult r = e.selectors[i].Evaluate(device);
    if (r.outcome == SelectorOutcome::kMatch) continue;
    if (r.outcome == SelectorOutcome::kNoMatch) {
      if (!e.limit[i].limits.empty()) ++on.excluded_by_limit[ExcludedBy(e.limit[i], device)];
      return;
    }
    if (on.not_evaluated++ == 0) {
      on.not_evaluated_reason = absl::StrCat(
          r.outcome == SelectorOutcome::kError ? "selector failed: " : "selector not evaluated: ",
          r.detail);
    }
    return;
  }
  switch (RoomFor(dra, k, e.capacity_requests)) {
    case DraRoom::kFree:
      ++(blocked ? on.blocked_matching : on.free_matching);
      break;
    case DraRoom::kShared:
      ++on.free_matching;
      ++on.shared_matching;
      break;
    case DraRoom::kFull:
      ++on.full_matching;
      break;
    case DraRoom::kHeld:
      ++on.held_matching;
      break;
    case DraRoom::kTooSmall:
      ++on.capacity_short;
      break;
  }
}

// The request name an alternative belongs to: "gpu" for "gpu/small".
std::string MainRequest(const DraRequest& r) {
  if (!r.alternative) return r.name;
  return r.name.substr(0, r.name.find('/'));
}

RequestOnNode::Answer Combine(const std::vector<RequestOnNode::Answer>& answers, bool any) {
  using A = RequestOnNode::Answer;
  const A decisive = any ? A::kYes : A::kNo;
  bool unknown = false;
  for (A a : answers) {
    if (a == decisive) return decisive;
    unknown |= a == A::kUnknown;
  }
  return unknown ? A::kUnknown : (any ? A::kNo : A::kYes);
}

}  // namespace dra_claim_fit_internal

RequestOnNode::Answer RequestOnNode::answer() const {
  if (!class_found) return Answer::kNo;
  if (all) {
    if (held_matching > 0 || blocked_matching > 0) return Answer::kNo;
    if (not_evaluated > 0) return Answer::kUnknown;
    return free_matching > 0 ? Answer::kYes : Answer::kNo;
  }
  if (free_matching >= wanted) return Answer::kYes;
  return free_matching + not_evaluated >= wanted ? Answer::kUnknown : Answer::kNo;
}

std::vector<ClaimOnNode> ClaimCandidates(const DraClaim& claim, const DraState& dra,
                                         const RequestLimitsFor& tenant_limits) {
  using namespace dra_claim_fit_internal;
  std::vector<ClaimOnNode> out;
  if (claim.requests.empty()) return out;
  std::vector<Evaluation> evaluations;
  for (const DraRequest& r : claim.requests) evaluations.push_back(Prepare(r, dra, tenant_limits));

  const std::vector<DraDevice>& current = dra.devices();
  std::map<std::string, std::vector<size_t>> devices_by_node;
  for (size_t k = 0; k < current.size(); ++k) {
    if (!current[k].node.empty()) devices_by_node[current[k].node].push_back(k);
  }

  for (const auto& [node, devices] : devices_by_node) {
    ClaimOnNode row{node, RequestOnNode::Answer::kNo, {}};
    const std::vector<uint32_t> blocked = DraBlockedDevices(dra, node);
    auto is_blocked = [&](size_t k) {
      return std::binary_search(blocked.begin(), blocked.end(), static_cast<uint32_t>(k));
    };
    for (const Evaluation& e : evaluations) {
      RequestOnNode on = e.prototype;
      if (on.class_found) {
        for (size_t k : devices) Count(e, dra, k, is_blocked(k), on);
      }
      row.requests.push_back(std::move(on));
    }
    // Alternatives of one request: any will do; requests: all must.
    std::vector<RequestOnNode::Answer> per_request;
    for (size_t i = 0; i < claim.requests.size();) {
      const std::string main = MainRequest(claim.requests[i]);
      std::vector<RequestOnNode::Answer> alternatives;
      for (; i < claim.requests.size() && MainRequest(claim.requests[i]) == main; ++i) {
        alternatives.push_back(row.requests[i].answer());
      }
      per_request.push_back(Combine(alternatives, /*any=*/true));
    }
    row.answer = Combine(per_request, /*any=*/false);
    out.push_back(std::move(row));
  }
  return out;
}

const char* AnswerName(RequestOnNode::Answer answer) {
  switch (answer) {
    case RequestOnNode::Answer::kYes:
      return "yes";
    case RequestOnNode::Answer::kNo:
      return "no";
    case RequestOnNode::Answer::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string RequestOnNodeText(const RequestOnNode& r) {
  std::string text = absl::StrCat(r.request, " (", r.device_class, "): ");
  if (!r.class_found) return absl::StrCat(text, "device class ", r.device_class, " not found");
  absl::StrAppend(&text, r.all ? "all matching wanted" : absl::StrCat(r.wanted, " wanted"), ", ",
                  r.free_matching, " free match");
  if (r.shared_matching > 0) {
    absl::StrAppend(&text, " (", r.shared_matching, " shared with other claims)");
  }
  if (r.held_matching > 0) absl::StrAppend(&text, "; ", r.held_matching, " held by claims");
  if (r.full_matching > 0) {
    absl::StrAppend(&text, "; ", r.full_matching, " shared by claims that leave too little");
  }
  if (r.capacity_short > 0) {
    absl::StrAppend(&text, "; ", r.capacity_short, " short of the capacity asked");
  }
  if (r.blocked_matching > 0) {
    absl::StrAppend(&text, "; ", r.blocked_matching, " blocked by the counters held devices use");
  }
  for (const auto& [limit, count] : r.excluded_by_limit) {
    absl::StrAppend(&text, "; ", count, " excluded by ", limit);
  }
  if (r.not_evaluated > 0) {
    absl::StrAppend(&text, "; ", r.not_evaluated, " not decided (", r.not_evaluated_reason, ")");
  }
  if (!r.limits_not_in_claim.empty()) {
    absl::StrAppend(
        &text, "; not in the claim, so not enforced: ", absl::StrJoin(r.limits_not_in_claim, ", "));
  }
  if (!r.limits_implied.empty()) {
    absl::StrAppend(&text,
                    "; implied by the devices published: ", absl::StrJoin(r.limits_implied, ", "));
  }
  return text;
}

}  // namespace topology
