// serve's cluster: the live state (kube/cluster_state.h) and, against kube-apiserver, what
// keeps it in step and acts on it: the watches (kube/live_source.h), the binder and its
// events, the leader election that gates binds (only the caught-up leader binds), the
// per-tenant claim quota records, the guard on the webhook configurations and the contract
// guard (what got past admission). From a cluster
// file (or the demo) the state is fixed and nothing runs.
//
//   auto cluster = ServeCluster::Fixed(data, policy);            // or
//   auto cluster = ServeCluster::Live(std::move(api), "gpu-system", options, policy, audit);
//   cluster->Start();  ...  cluster->SetPolicy(reloaded);  ...  cluster->Stop();
//
// Readers (Synced, ExtenderReady, Collect) are thread-safe; Start, SetPolicy and Stop are
// called from serve's main thread and its policy watcher.
#ifndef GPU_TENANCY_CMD_SERVE_CLUSTER_H_
#define GPU_TENANCY_CMD_SERVE_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>

#include "cmd/serve_options.h"
#include "cmd/webhook_guard.h"
#include "common/audit_log.h"
#include "common/prometheus_text.h"
#include "extender/bind.h"
#include "guard/contract_guard.h"
#include "kube/api.h"
#include "kube/binder.h"
#include "kube/cluster_state.h"
#include "kube/event_recorder.h"
#include "kube/leader.h"
#include "kube/live_source.h"
#include "kube/usage_record.h"
#include "topology/catalog.h"
#include "topology/mig_parted.h"
#include "topology/policy.h"
#include "topology/snapshot.h"

namespace cmd {

class ServeCluster {
 public:
  // A fixed cluster: published at once, no binds, claim quotas counted on the state alone.
  // `mig_parted` (may be null): the cluster's mig-parted config, what its nodes'
  // nvidia.com/mig.config names stand for (topology::Catalog::WithMigParted).
  static std::unique_ptr<ServeCluster> Fixed(
      topology::ClusterData cluster, std::shared_ptr<const topology::Policy> policy,
      std::shared_ptr<const topology::MigPartedFile> mig_parted = nullptr);
  // Follows `api`. `api_namespace` is where the Lease and the quota records live unless
  // options.lease_namespace says otherwise. `audit` (may be null) outlives the cluster.
  static std::unique_ptr<ServeCluster> Live(
      std::unique_ptr<kube::Api> api, const std::string& api_namespace, const ServeOptions& options,
      std::shared_ptr<const topology::Policy> policy, common::AuditLog* audit,
      std::shared_ptr<const topology::MigPartedFile> mig_parted = nullptr);
  ~ServeCluster();  // Stop()
  ServeCluster(const ServeCluster&) = delete;
  ServeCluster& operator=(const ServeCluster&) = delete;

  void Start();
  // The leader releases its lease so a peer takes over at once; the watches end.
  void Stop();
  // A reloaded policy: republished, demands recomputed, the webhook configurations checked.
  void SetPolicy(std::shared_ptr<const topology::Policy> policy);

  kube::ClusterState& state() { return state_; }
  extender::BindBackend* binder() { return binder_.get(); }           // null when fixed
  kube::ConfigMapRecords* usage_records() { return records_.get(); }  // null when fixed
  // The contract guard (guard/contract_guard.h): judges always, acts only when live and leading.
  const guard::ContractGuard& contract_guard() const { return *contract_; }
  // The cluster has been listed completely: the webhooks can judge.
  bool Synced() const { return state_.Current() != nullptr; }
  // Synced and, where elected, leading and caught up with the last leader's binds: only then
  // may this replica answer kube-scheduler (one assume cache, no double allocation).
  bool ExtenderReady() const;
  // Cache, watch, leader and webhook-configuration series.
  void Collect(common::MetricsText& out) const;

 private:
  ServeCluster(std::shared_ptr<const topology::Policy> policy,
               std::shared_ptr<const topology::MigPartedFile> mig_parted);
  void StartLeaderElection(const ServeOptions& options, const std::string& lease_namespace,
                           common::AuditLog* audit);

  const topology::Catalog catalog_;  // the built-in one, with the cluster's mig-parted config
  kube::ClusterState state_;
  std::shared_ptr<const topology::Policy> initial_policy_;
  std::optional<topology::ClusterData> fixed_;  // republished with each policy
  std::unique_ptr<kube::Api> api_;
  std::unique_ptr<kube::LiveSource> source_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<kube::ConfigMapRecords> records_;
  std::unique_ptr<kube::ApiBinder> binder_;
  std::unique_ptr<WebhookGuard> guard_;
  std::unique_ptr<guard::ContractGuard> contract_;
  std::unique_ptr<kube::LeaderFence> fence_;  // outlives the elector, whose Stop() calls it
  std::unique_ptr<kube::LeaderElector> elector_;
  bool started_ = false;
};

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_SERVE_CLUSTER_H_
