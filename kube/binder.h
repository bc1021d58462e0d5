// The live BindBackend: pods from the watch cache (or one GET when the watch lags), fit and
// assume through ClusterState, Binding POSTs to kube-apiserver. The POST's outcome says how
// long the assumption lives (ClusterState::Posted): not past its TTL while the POST is under
// way, and a TTL from the failure when no answer came (the Binding may land yet).
#ifndef GPU_TENANCY_KUBE_BINDER_H_
#define GPU_TENANCY_KUBE_BINDER_H_

#include <chrono>
#include <functional>

#include "common/audit_log.h"
#include "extender/bind.h"
#include "kube/api.h"
#include "kube/clock.h"
#include "kube/cluster_state.h"
#include "kube/event_recorder.h"

namespace kube {

class ApiBinder : public extender::BindBackend {
 public:
  // `events` may be null (no Events posted). Assumptions expire `assume_ttl` after bind on
  // `clock`, the one the LiveSource expiring them reads (its reflector.clock).
  ApiBinder(Api& client, ClusterState& state, std::chrono::milliseconds assume_ttl,
            EventRecorder* events = nullptr, Clock* clock = &Clock::Real())
      : client_(client), state_(state), assume_ttl_(assume_ttl), events_(events), clock_(clock) {}

  // With a gate, every bind is refused while it says no (Error in the reply, so kube-scheduler
  // retries): with several replicas only the leader, its cache caught up since it took the
  // lease, may assume and bind. Routing alone cannot promise that, since endpoints lag a
  // change of leader. Set before serving; not thread-safe against binds.
  void SetGate(std::function<bool()> may_bind) { gate_ = std::move(may_bind); }
  // Every bind, placed or failed, is appended to `audit` (may be null). Set before serving.
  void SetAuditLog(common::AuditLog* audit) { audit_ = audit; }

  absl::StatusOr<topology::PodFacts> LookupPod(const wire::BindingArgs& args) override;
  absl::StatusOr<topology::PlaceOutcome> Assume(const topology::PodFacts& pod,
                                                const std::string& node) override;
  void Forget(const std::string& uid) override { state_.Forget(uid); }
  absl::Status PostBinding(const wire::BindingArgs& args,
                           const topology::Labels& annotations) override;
  void Report(const wire::BindingArgs& args, const topology::Placement* placement,
              absl::string_view error) override;

 private:
  Api& client_;
  ClusterState& state_;
  std::chrono::milliseconds assume_ttl_;
  EventRecorder* events_;
  Clock* clock_;
  std::function<bool()> gate_;
  common::AuditLog* audit_ = nullptr;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_BINDER_H_
