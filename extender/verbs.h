// The extender's HTTP verbs as pure functions: request body in, HTTP status and body out.
// server/ only moves bytes; everything kube-scheduler sees is decided here.
//
//   Filter      -> ExtenderFilterResult: kept nodes, FailedNodes (preemption or time may help),
//                  FailedAndUnresolvableNodes (nothing will), Error only for our own failures.
//   Prioritize  -> HostPriorityList with a 0..10 score for every candidate.
// Malformed bodies give HTTP 400 with {"error": "..."}.
#ifndef GPU_TENANCY_EXTENDER_VERBS_H_
#define GPU_TENANCY_EXTENDER_VERBS_H_

#include <map>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "topology/snapshot.h"

namespace extender {

struct VerbReply {
  int http_status = 200;
  std::string body;
  // For metrics and logs: nodes kept / failed / unresolvable, and whether the pod had GPU
  // demand at all.
  int kept = 0;
  int failed = 0;
  int unresolvable = 0;
  bool gpu_pod = false;
  // Filter: rejected nodes per (verdict, rule code), e.g. {"unschedulable", "exhausted"} -> 3.
  std::map<std::pair<absl::string_view, absl::string_view>, int> rejections = {};
};

// `state` is null before the first cluster sync: filter then answers with Error so
// kube-scheduler retries the pod instead of scheduling it blind.
VerbReply Filter(absl::string_view body, const topology::ModelState* state);
VerbReply Prioritize(absl::string_view body, const topology::ModelState* state);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_VERBS_H_
