// Keeps a ClusterState in step with kube-apiserver: one reflector each for nodes, pods and
// namespaces (tenant labels), plus the expiry of bind assumptions the watch never confirmed.
#ifndef GPU_TENANCY_KUBE_LIVE_SOURCE_H_
#define GPU_TENANCY_KUBE_LIVE_SOURCE_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kube/api_client.h"
#include "kube/cluster_state.h"
#include "kube/reflector.h"

namespace kube {

struct LiveSourceOptions {
  ReflectorOptions reflector;
  std::chrono::milliseconds expiry_poll{std::chrono::seconds(1)};
};

class LiveSource {
 public:
  LiveSource(ApiClient& client, ClusterState& state, LiveSourceOptions options = {});
  ~LiveSource();

  void Start();
  void Stop();
  // True once nodes, pods and namespaces have each been listed completely.
  bool synced() const;
  uint64_t watch_restarts() const;

 private:
  ClusterState& state_;
  std::unique_ptr<Reflector> nodes_, pods_, namespaces_;
  LiveSourceOptions options_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread expiry_thread_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_LIVE_SOURCE_H_
