// Keeps a ClusterState's DRA state in step with kube-apiserver's resource.k8s.io group:
// discovery first (GET /apis/resource.k8s.io picks the newest of v1, v1beta2 and v1beta1 the
// server offers), then one reflector each for ResourceSlices, ResourceClaims, DeviceClasses and
// ResourceClaimTemplates in that version. Once all four have been listed, every change rebuilds
// the DraState from the store (topology/dra/store.h) and publishes it with
// ClusterState::ReplaceDra.
//
// An API server without the group (404 on discovery, or none of those versions) is a cluster
// without DRA: an empty state is published at once, so nothing waits for it, and discovery is
// asked again every resync in case the group appears. Other discovery failures are retried
// with backoff, and the state is not synced meanwhile.
//
// Claims that become allocated or released after the first list are written to the audit log
// (SetAuditLog). The first list is the baseline: allocations made before this process watched
// are not reported, only changes it sees (a relist reports what the watch missed). As all of
// kube/ (docs/architecture.md), this is state only: it records what the API says, decides nothing.
//
//   DraSource dra(client, state, reflector_options);
//   dra.SetAuditLog(audit, [&] { return elector.is_leader(); });
//   dra.Start();  ...  dra.synced();  ...  dra.Stop();
#ifndef GPU_TENANCY_KUBE_DRA_SOURCE_H_
#define GPU_TENANCY_KUBE_DRA_SOURCE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/audit_log.h"
#include "common/json.h"
#include "common/mutex.h"
#include "kube/api.h"
#include "kube/cluster_state.h"
#include "kube/reflector.h"
#include "topology/dra/model.h"
#include "topology/dra/store.h"

namespace kube {

// The newest of "v1", "v1beta2", "v1beta1" an APIGroup document (GET /apis/resource.k8s.io)
// lists in `versions`; "" when it lists none of them (older alpha versions mean other objects).
std::string ChooseDraVersion(const common::JsonValue& api_group);

// The audit event of one transition: the claim, its node, its devices (resolved in `devices`,
// the DraState current when it happened: the new one for an allocation, the one before it for a
// release), the pods it is reserved for, and the tenant and tier of its namespace when
// `current` (the published model) is known.
common::ClaimAudit ClaimAuditEvent(const topology::ClaimTransition& transition,
                                   const topology::DraState& devices,
                                   const topology::ModelState* current);

class DraSource {
 public:
  DraSource(Api& client, ClusterState& state, ReflectorOptions options = {});
  ~DraSource();  // Stop()

  void Start();
  void Stop();
  // Claim allocations and releases are written to `audit` (not owned; null: none) while
  // `gate` returns true (no gate: always), e.g. only on the replica that leads, so a record
  // is written once however many replicas watch. Call before Start().
  void SetAuditLog(common::AuditLog* audit, std::function<bool()> gate = {});

  // True once discovery has answered and either the group is absent or all four kinds have
  // been listed and published.
  bool synced() const { return synced_.load(); }
  // The version in use ("v1", "v1beta2", "v1beta1"); "" before discovery and without DRA.
  std::string version() const;
  uint64_t watch_restarts() const;

 private:
  enum Kind { kSlices, kClaims, kClasses, kTemplates, kKinds };

  void Run();  // discovery, until the reflectors run or Stop()
  // Sleeps `d` on the clock; false when stopped meanwhile.
  bool Sleep(std::chrono::milliseconds d);
  void StartReflectors(const std::string& version);
  ReflectorHandler HandlerFor(Kind kind);
  // Under mu_: marks `kind` listed and, once all are, publishes the store and audits
  // `transitions` (resolved against the state before and after).
  void PublishLocked(Kind kind, std::vector<topology::ClaimTransition> transitions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Audit(const std::vector<topology::ClaimTransition>& transitions,
             const topology::DraState& before, const topology::DraState& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Api& client_;
  ClusterState& state_;
  ReflectorOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  std::thread thread_;
  // Guards no data: Stop() takes it between setting stop_ and notifying sleep_cv_, so a Sleep()
  // about to wait cannot miss the wakeup.
  common::Mutex sleep_mu_;
  common::CondVar sleep_cv_;

  // Guards the audit sink, the reflectors and everything they feed: the store, which kinds have
  // been listed, and what has been published. Handlers run on the reflectors' threads under it;
  // ClusterState's lock is taken inside it (ReplaceDra), never the other way round.
  mutable common::Mutex mu_;
  common::AuditLog* audit_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::function<bool()> gate_ ABSL_GUARDED_BY(mu_);
  std::string version_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Reflector>> reflectors_ ABSL_GUARDED_BY(mu_);
  topology::DraStore store_ ABSL_GUARDED_BY(mu_);
  bool listed_[kKinds] ABSL_GUARDED_BY(mu_) = {};
  // the first claim list was taken as the baseline
  bool claims_baseline_ ABSL_GUARDED_BY(mu_) = false;
  // seen before every kind was listed
  std::vector<topology::ClaimTransition> unpublished_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const topology::DraState> published_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const topology::DraState>();
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_DRA_SOURCE_H_
