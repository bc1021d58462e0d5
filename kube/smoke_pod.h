// The smoke test of the MIG reconfiguration gate: one pod pinned to the node, asking for one
// instance of a profile the new geometry offers, must get that far (Succeeded, or Running for
// an image that keeps running) before the node goes back into service. The pod is deleted
// whatever the verdict.
#ifndef GPU_TENANCY_KUBE_SMOKE_POD_H_
#define GPU_TENANCY_KUBE_SMOKE_POD_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/api.h"
#include "kube/clock.h"

namespace kube {

struct SmokeRequest {
  std::string namespace_name;
  std::string node;
  std::string image;
  std::string resource;  // "nvidia.com/mig-1g.10gb", or "nvidia.com/gpu"
  absl::Duration timeout;
};

// What happened, in one line, or: FailedPrecondition when the pod failed, DeadlineExceeded when
// it is still pending after `timeout`, the API's error, or `sleep`'s (Cancelled: Ctrl-C).
// `sleep` waits between reads of the pod (100 ms doubling to 2 s).
[[nodiscard]] absl::StatusOr<std::string> RunSmokePod(
    Api& api, Clock& clock, const SmokeRequest& request,
    const std::function<absl::Status(absl::Duration)>& sleep);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_SMOKE_POD_H_
