// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the holder renews
// renewTime every retry period; a candidate takes over once it has seen the record unchanged
// for a full lease duration (measured on its own clock, so clock skew between replicas does not
// matter); updates carry resourceVersion, so two candidates can never both win.
#ifndef GPU_TENANCY_KUBE_LEADER_H_
#define GPU_TENANCY_KUBE_LEADER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kube/api_client.h"

namespace kube {

struct LeaderOptions {
  std::string namespace_name = "default";
  std::string lease_name = "gpu-tenancy-extender";
  std::string identity;  // unique per replica (the pod name)
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // Called (on the elector's thread) when leadership is gained (true) or lost (false).
  std::function<void(bool)> on_change;
};

class LeaderElector {
 public:
  LeaderElector(ApiClient& client, LeaderOptions options);
  ~LeaderElector();  // stops; a leader releases the lease so a peer takes over at once

  void Start();
  void Stop();
  bool is_leader() const { return leader_.load(); }
  uint64_t transitions() const { return transitions_.load(); }

 private:
  void Run();
  bool TryAcquireOrRenew();  // true while we hold the lease
  void SetLeader(bool leader);
  void Release();

  ApiClient& client_;
  LeaderOptions options_;
  std::string path_;
  std::atomic<bool> leader_{false};
  std::atomic<uint64_t> transitions_{0};
  std::string observed_record_;  // holder + renewTime + transitions as last seen
  std::chrono::steady_clock::time_point observed_at_;
  std::chrono::steady_clock::time_point last_renew_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_LEADER_H_
