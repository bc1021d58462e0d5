// Where an unallocated DRA claim could be allocated: per node, per request, how many free
// devices pass what kube-scheduler's allocator evaluates (the class's selectors, then the
// request's, which carry the tenant limits the webhook injected), and for the devices that
// fail, which selector failed: the class, the request's own, or a named tenant limit. This is
// explain's view of a pending claim; the allocator decides. Pure: no I/O.
//
//   std::vector<ClaimOnNode> nodes = ClaimCandidates(claim, snapshot.dra(), limits);
//   for (const ClaimOnNode& n : nodes) ... n.node, n.answer, ClaimOnNodeText(n) ...
//
// Requests are counted independently (two requests that both match the one free device each
// see it), firstAvailable subrequests are alternatives of their request, a request's capacity
// asks are checked against what the shares on multi-allocatable devices leave
// (topology/dra/capacity.h), and constraints (matchAttribute) are not evaluated: a "yes" means
// every request has enough free matching devices on the node, not that the allocator will find one
// assignment for all of them.
#ifndef GPU_TENANCY_TOPOLOGY_DRA_CLAIM_FIT_H_
#define GPU_TENANCY_TOPOLOGY_DRA_CLAIM_FIT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "topology/dra/model.h"

namespace topology {

// A tenant limit as the webhook writes it into claims: its name ("mig-profiles") and its own CEL
// expression.
struct NamedSelector {
  std::string limit;
  std::string expression;
};

// What the tenant's webhook writes into a request of one device class.
struct RequestLimits {
  // The limits such a request carries, by name; the class implies the tenant's others.
  std::vector<std::string> required;
  // Every limit's own expression: a request selector equal to one holds that limit (claims
  // admitted when each limit was a selector of its own).
  std::vector<NamedSelector> own;
  // The expressions the webhook writes now, several limits joined with && (with and without
  // gpu-memory), and the limits each holds, in `own`'s names: a device one of them excludes
  // is counted under the first of its limits whose own expression is false for it.
  struct Joined {
    std::string expression;
    std::vector<std::string> limits;
  };
  std::vector<Joined> joined;
  // Of `required`, the limits every device the request could get satisfies as published now
  // (gpu-memory when no device of the class's type has more memory than the cap): a request
  // without them is not reported as unenforced.
  std::vector<std::string> implied;
};

// The tenant's limits for a request of `device_class`; unset: the tenant has none.
using RequestLimitsFor = std::function<RequestLimits(const std::string& device_class)>;

// One request (or firstAvailable subrequest) on one node.
struct RequestOnNode {
  std::string request;  // "gpu", or "gpu/small" for a subrequest
  std::string device_class;
  bool all = false;    // allocationMode All: every matching device, and at least one
  int64_t wanted = 1;  // ExactCount's count
  bool class_found = true;
  // Devices every selector is true for that can be given to the request now: no claim holds
  // them, or (multi-allocatable devices) the shares claims hold leave the capacity it asks.
  int64_t free_matching = 0;
  int64_t shared_matching = 0;  // of free_matching, devices other claims hold shares of
  int64_t held_matching = 0;    // matching devices a claim holds whole
  // Matching multi-allocatable devices whose shares leave too little for the request.
  int64_t full_matching = 0;
  // Matching devices that cannot provide the capacity the request asks even when free: a
  // capacity they do not publish, too little of it, or an amount a requestPolicy refuses.
  int64_t capacity_short = 0;
  // Matching devices no claim holds that cannot be allocated now: what they consume of shared
  // counters (partitionable devices, such as a GPU's MIG placements) is used up by held ones.
  int64_t blocked_matching = 0;
  // Devices a tenant limit excluded (they passed the class's selectors and the request's
  // selectors before it), by limit name ("mig-profiles and gpu-memory" when a joined selector
  // excluded a device that each limit alone allows).
  std::map<std::string, int64_t> excluded_by_limit;
  // Devices whose answer is unknown (a selector outside the evaluated CEL subset, or a runtime
  // error, which makes the allocator give up on the node), with the first reason.
  int64_t not_evaluated = 0;
  std::string not_evaluated_reason;
  // The tenant limits the request does not carry (the claim was made before the webhook, or
  // by a path it does not see) and the published devices do not imply: the allocator does not
  // enforce these for this claim.
  std::vector<std::string> limits_not_in_claim;
  // Those it does not carry that the published devices imply (RequestLimits::implied).
  std::vector<std::string> limits_implied;

  enum class Answer { kYes, kNo, kUnknown };
  Answer answer() const;
};

struct ClaimOnNode {
  std::string node;
  RequestOnNode::Answer answer = RequestOnNode::Answer::kNo;
  // Every request on the node; alternatives of one firstAvailable request are adjacent.
  std::vector<RequestOnNode> requests;
};

// Every node that publishes a device (in node-name order), for a claim that is not allocated
// (an allocated claim's answer is its allocation: call AllocatedDevices instead). A claim
// without requests gets no rows. Devices of slices without a node are not considered.
std::vector<ClaimOnNode> ClaimCandidates(const DraClaim& claim, const DraState& dra,
                                         const RequestLimitsFor& tenant_limits);

// "yes", "no", "unknown".
const char* AnswerName(RequestOnNode::Answer answer);
// "mig (mig.nvidia.com): 1 wanted, 0 free match; 1 held by claims; 1 excluded by mig-profiles"
// (and "; 1 blocked by the counters held devices use" for partitionable devices; for
// consumable capacity "1 free match (1 shared with other claims)", "1 shared by claims that
// leave too little", "1 short of the capacity asked")
std::string RequestOnNodeText(const RequestOnNode& request);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_CLAIM_FIT_H_
