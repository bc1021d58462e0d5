// ClusterState: turns cluster contents and the policy into immutable ModelState snapshots and
// publishes them atomically. Readers take one atomic load and never block writers; writers
// serialise among themselves only.
#ifndef GPU_TENANCY_KUBE_CLUSTER_STATE_H_
#define GPU_TENANCY_KUBE_CLUSTER_STATE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "topology/catalog.h"
#include "topology/snapshot.h"

namespace kube {

class ClusterState {
 public:
  explicit ClusterState(const topology::Catalog& catalog) : catalog_(catalog) {}

  // Replaces the whole cluster (a cluster file, or a full relist) and publishes.
  void ReplaceAll(topology::ClusterData data);
  // Swaps the policy (start-up or reload) and republishes with it.
  void SetPolicy(std::shared_ptr<const topology::Policy> policy);

  // The latest published state; null until both the cluster and the policy are known.
  std::shared_ptr<const topology::ModelState> Current() const { return current_.load(); }
  std::shared_ptr<const topology::Policy> policy() const;

 private:
  void PublishLocked();

  const topology::Catalog& catalog_;
  mutable std::mutex write_mu_;
  bool have_data_ = false;
  topology::ClusterData data_;
  std::shared_ptr<const topology::Policy> policy_;
  std::atomic<std::shared_ptr<const topology::ModelState>> current_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_CLUSTER_STATE_H_
