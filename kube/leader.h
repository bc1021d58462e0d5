// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the holder renews
// renewTime every retry period; a candidate takes over once it has seen the record unchanged
// for a full lease duration (measured on its own clock, so clock skew between replicas does not
// matter); updates carry resourceVersion, so two candidates can never both win.
#ifndef GPU_TENANCY_KUBE_LEADER_H_
#define GPU_TENANCY_KUBE_LEADER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "kube/api.h"
#include "kube/clock.h"

namespace kube {

struct LeaderOptions {
  std::string namespace_name = "default";
  std::string lease_name = "gpu-tenancy-extender";
  std::string identity;  // unique per replica (the pod name)
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // Called when leadership is gained (true, on the elector's thread, before is_leader() turns
  // true) or lost (false, after it turned false; on the thread of Stop() when releasing).
  std::function<void(bool)> on_change;
  // Lease expiry, renewal deadlines and the wait between attempts (not owned; outlives the
  // elector). Only the lease's renewTime and acquireTime, written for other readers, come from
  // the wall clock.
  Clock* clock = &Clock::Real();
};

class LeaderElector {
 public:
  LeaderElector(Api& client, LeaderOptions options);
  ~LeaderElector();  // stops; a leader releases the lease so a peer takes over at once

  void Start();
  void Stop();
  // True while the lease is held and was renewed recently enough: a leader that cannot renew
  // (API server unreachable, or a renew call that hangs) stops claiming leadership a margin
  // before any peer may take the lease over, even while its own thread is still blocked.
  bool is_leader() const;
  uint64_t transitions() const { return transitions_.load(); }

 private:
  void Run();
  bool TryAcquireOrRenew();  // true while we hold the lease
  void SetLeader(bool leader);
  void Release();

  Api& client_;
  LeaderOptions options_;
  std::string path_;
  std::atomic<bool> leader_{false};
  // Clock ticks after which a leader no longer claims leadership without a renewal:
  // the start of the last successful renew attempt + lease duration - a safety margin.
  std::atomic<int64_t> leader_until_{0};
  std::atomic<uint64_t> transitions_{0};
  std::string observed_record_;  // holder + renewTime + transitions as last seen
  Clock::TimePoint observed_at_;
  Clock::TimePoint last_renew_;
  std::atomic<bool> stop_{false};
  // Guards no data: Stop() takes it between setting stop_ and notifying cv_, so Run() about to
  // wait cannot miss the wakeup.
  common::Mutex mu_;
  common::CondVar cv_;
  std::thread thread_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_LEADER_H_
