#include "kube/smoke_pod.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kube/node_ops.h"
#include "kube/reconfigure_gate.h"

namespace kube {

absl::StatusOr<std::string> RunSmokePod(Api& api, Clock& clock, const SmokeRequest& request,
                                        const std::function<absl::Status(absl::Duration)>& sleep) {
  const std::string& ns = request.namespace_name;
  ASSIGN_OR_RETURN(std::string pod,
                   CreateSmokePod(api, ns, request.node, request.image, request.resource));
  std::string what = absl::StrCat("smoke pod ", ns, "/", pod, " with one ", request.resource);
  Clock::TimePoint deadline = clock.Now() + std::chrono::duration_cast<Clock::Duration>(
                                                absl::ToChronoNanoseconds(request.timeout));
  absl::Duration backoff = absl::Milliseconds(100);
  absl::StatusOr<std::string> verdict;
  while (true) {
    absl::StatusOr<PodFacts> p = GetPod(api, ns, pod);
    if (!p.ok()) {
      verdict = p.status();
      break;
    }
    if (p->phase == "Succeeded" || p->phase == "Running") {
      verdict = absl::StrCat(what, " is ", p->phase);
      break;
    }
    if (p->phase == "Failed") {
      verdict = absl::FailedPreconditionError(absl::StrCat(what, " failed"));
      break;
    }
    if (clock.Now() >= deadline) {
      verdict = absl::DeadlineExceededError(
          absl::StrCat(what, " still ", p->phase.empty() ? "Pending" : p->phase, " after ",
                       ShortDuration(request.timeout)));
      break;
    }
    absl::Status slept = sleep(backoff);
    if (!slept.ok()) {
      verdict = slept;
      break;
    }
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  absl::Status deleted = DeletePod(api, ns, pod);
  if (!deleted.ok() && verdict.ok()) {
    verdict = absl::UnavailableError(absl::StrCat(what, " passed but ", deleted.message()));
  }
  return verdict;
}

}  // namespace kube
