// The bind verb: re-check, assume, annotate-and-bind in one API call. Side effects go through
// BindBackend (kube/ implements it against kube-apiserver; tests inject their own), so this
// file holds only the protocol and the order of steps:
//   1. find the pod (watch cache first, API second);
//   2. Assume(): place the pod (topology::Place) against the latest snapshot plus pending
//      assumptions and record the assumption, so the next filter already sees the capacity as
//      taken; a pod that no longer fits is a verdict, an error is something else (cache not
//      synced, unknown node, already bound), and each is reported as what it is;
//   3. POST the Binding with our decision as annotations (kube-apiserver copies them onto the
//      pod), with no lock held;
//   4. on failure, Forget() the assumption and answer Error so kube-scheduler retries.
#ifndef GPU_TENANCY_EXTENDER_BIND_H_
#define GPU_TENANCY_EXTENDER_BIND_H_

#include <string>

#include "absl/status/statusor.h"
#include "extender/verbs.h"
#include "topology/facts.h"
#include "topology/place.h"
#include "wire/extender_codec.h"

namespace extender {

class BindBackend {
 public:
  virtual ~BindBackend() = default;
  [[nodiscard]] virtual absl::StatusOr<topology::PodFacts> LookupPod(
      const wire::BindingArgs& args) = 0;
  [[nodiscard]] virtual absl::StatusOr<topology::PlaceOutcome> Assume(const topology::PodFacts& pod,
                                                                      const std::string& node) = 0;
  virtual void Forget(const std::string& uid) = 0;
  [[nodiscard]] virtual absl::Status PostBinding(const wire::BindingArgs& args,
                                                 const topology::Labels& annotations) = 0;
  // Told the outcome of every bind (events, audit); `placement` is null on failure.
  virtual void Report(const wire::BindingArgs& args, const topology::Placement* placement,
                      absl::string_view error) {
    (void)args, (void)placement, (void)error;
  }
};

// The annotations that record a placement on the pod.
topology::Labels PlacementAnnotations(const topology::Placement& placement);

// ExtenderBindingArgs in, ExtenderBindingResult out. Malformed bodies: HTTP 400.
VerbReply Bind(absl::string_view body, BindBackend& backend);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_BIND_H_
