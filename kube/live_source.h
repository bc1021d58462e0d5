// Keeps a ClusterState in step with kube-apiserver: one reflector each for nodes, pods,
// namespaces (tenant labels) and PodDisruptionBudgets (preemption), the resource.k8s.io kinds when
// the server offers them (kube/dra_source.h), plus the expiry of bind assumptions the watch never
// confirmed.
#ifndef GPU_TENANCY_KUBE_LIVE_SOURCE_H_
#define GPU_TENANCY_KUBE_LIVE_SOURCE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "kube/api.h"
#include "kube/cluster_state.h"
#include "kube/dra_source.h"
#include "kube/reflector.h"

namespace kube {

struct LiveSourceOptions {
  ReflectorOptions reflector;
  // How often assumptions past their expiry are dropped, on reflector.clock (the binder that
  // sets the expiries must read the same clock).
  std::chrono::milliseconds expiry_poll{std::chrono::seconds(1)};
  // Read ResourceSlices, ResourceClaims, DeviceClasses and ResourceClaimTemplates (discovery
  // says whether and in which version); nothing is published before they are known.
  bool dra = true;
};

class LiveSource {
 public:
  LiveSource(Api& client, ClusterState& state, LiveSourceOptions options = {});
  ~LiveSource();

  void Start();
  void Stop();
  // True once nodes, pods and namespaces have each been listed completely, and the DRA kinds
  // too (or discovery said the server has none). PodDisruptionBudgets are not waited for: they
  // only rank preemption victims.
  bool synced() const;
  // Where DRA claims' allocations and releases are recorded (DraSource::SetAuditLog). Call
  // before Start().
  void SetClaimAudit(common::AuditLog* audit, std::function<bool()> gate = {}) {
    if (dra_) dra_->SetAuditLog(audit, std::move(gate));
  }
  const DraSource* dra() const { return dra_.get(); }  // null without options.dra
  uint64_t watch_restarts() const;
  // Lists pods again now; PodsListedSince(ticket) is true once a pod list that began after
  // this call has been applied.
  uint64_t RequestPodRelist() { return pods_->RequestRelist(); }
  bool PodsListedSince(uint64_t ticket) const { return pods_->ListedSince(ticket); }

 private:
  ClusterState& state_;
  std::unique_ptr<Reflector> nodes_, pods_, namespaces_, budgets_;
  // ClusterState::CommitMark() as the current pod list began (the pods reflector's thread only).
  uint64_t pod_list_began_ = 0;
  std::unique_ptr<DraSource> dra_;
  LiveSourceOptions options_;
  std::atomic<bool> stop_{false};
  // Guards no data (stop_ is atomic): Stop() takes it between setting stop_ and notifying cv_,
  // so the expiry thread, which checks stop_ under it, cannot miss the wakeup.
  common::Mutex mu_;
  common::CondVar cv_;
  std::thread expiry_thread_;
};

// Guards the bind path of a replica that has just become leader. The previous leader's last
// binds may not have reached this replica's watch yet; assuming against that stale cache would
// hand out the same slice twice. So on gaining leadership the pods are listed again, and the
// replica serves the extender only once that list (which sees every bind committed before the
// lease changed hands) has been applied.
//   LeaderFence fence(source);
//   leader_options.on_change = [&fence](bool leading) { fence.OnLeadership(leading); };
//   ready_for_extender = elector.is_leader() && fence.Ready();
// LeaderElector calls on_change(true) before is_leader() turns true, so no window is open.
class LeaderFence {
 public:
  explicit LeaderFence(LiveSource& source) : source_(source) {}
  void OnLeadership(bool leading) {
    if (leading) ticket_.store(source_.RequestPodRelist());
  }
  bool Ready() const { return source_.PodsListedSince(ticket_.load()); }

 private:
  LiveSource& source_;
  std::atomic<uint64_t> ticket_{0};
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_LIVE_SOURCE_H_
