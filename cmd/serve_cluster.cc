#include "cmd/serve_cluster.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/log.h"
#include "kube/objects.h"
#include "topology/wellknown.h"

namespace cmd {

ServeCluster::ServeCluster(std::shared_ptr<const topology::Policy> policy,
                           std::shared_ptr<const topology::MigPartedFile> mig_parted)
    : catalog_(common::BuiltinCatalog().WithMigParted(std::move(mig_parted))),
      state_(catalog_),
      initial_policy_(std::move(policy)) {
  state_.SetPolicy(initial_policy_);
}

ServeCluster::~ServeCluster() { Stop(); }

std::unique_ptr<ServeCluster> ServeCluster::Fixed(
    topology::ClusterData cluster, std::shared_ptr<const topology::Policy> policy,
    std::shared_ptr<const topology::MigPartedFile> mig_parted) {
  std::unique_ptr<ServeCluster> c(new ServeCluster(std::move(policy), std::move(mig_parted)));
  c->fixed_ = cluster;
  c->state_.ReplaceAll(std::move(cluster));
  // Judged, never acted on: there is no API server to post to.
  c->contract_ = std::make_unique<guard::ContractGuard>(
      nullptr, nullptr, c->state_, kube::Clock::Real(), nullptr, guard::ContractGuardOptions{});
  return c;
}

std::unique_ptr<ServeCluster> ServeCluster::Live(
    std::unique_ptr<kube::Api> api, const std::string& api_namespace, const ServeOptions& options,
    std::shared_ptr<const topology::Policy> policy, common::AuditLog* audit,
    std::shared_ptr<const topology::MigPartedFile> mig_parted) {
  std::unique_ptr<ServeCluster> c(new ServeCluster(std::move(policy), std::move(mig_parted)));
  c->api_ = std::move(api);
  kube::Api& api_ref = *c->api_;
  const std::string lease_namespace =
      options.lease_namespace.empty() ? api_namespace : options.lease_namespace;
  kube::LiveSourceOptions live;
  live.reflector.resync = absl::ToChronoMilliseconds(options.resync);
  c->source_ = std::make_unique<kube::LiveSource>(api_ref, c->state_, live);
  c->events_ = std::make_unique<kube::EventRecorder>(api_ref);
  // Claim quotas reserve in per-tenant records (webhook/claim_quota.h).
  c->records_ = std::make_unique<kube::ConfigMapRecords>(api_ref, lease_namespace);
  c->binder_ = std::make_unique<kube::ApiBinder>(
      api_ref, c->state_, absl::ToChronoMilliseconds(options.assume_ttl), c->events_.get());
  c->binder_->SetAuditLog(audit);
  c->guard_ = std::make_unique<WebhookGuard>(
      api_ref,
      WebhookGuardOptions{options.validating_webhook_config, options.mutating_webhook_config,
                          absl::ToChronoMilliseconds(options.resync)});
  c->source_->SetClaimAudit(audit);
  if (options.leader_elect) c->StartLeaderElection(options, lease_namespace, audit);
  guard::ContractGuardOptions contract;
  contract.service_namespace = lease_namespace;
  // Only the caught-up leader posts Events and evicts; every replica judges.
  c->contract_ = std::make_unique<guard::ContractGuard>(
      &api_ref, c->events_.get(), c->state_, kube::Clock::Real(),
      [cluster = c.get()] {
        return !cluster->elector_ || (cluster->elector_->is_leader() && cluster->fence_->Ready());
      },
      contract);
  return c;
}

void ServeCluster::StartLeaderElection(const ServeOptions& options,
                                       const std::string& lease_namespace,
                                       common::AuditLog* audit) {
  kube::LeaderOptions lo;
  lo.namespace_name = lease_namespace;
  const char* pod_name = std::getenv("POD_NAME");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  lo.identity = !options.identity.empty() ? options.identity : pod_name ? pod_name : host;
  const char* pod_namespace = std::getenv("POD_NAMESPACE");
  std::function<void(bool)> label_own_pod;
  if (pod_name && pod_namespace) {
    // The leader labels its own pod; the extender Service selects that label, so
    // kube-scheduler always reaches the one replica whose assume cache is authoritative.
    std::string pod_path = absl::StrCat("/api/v1/namespaces/", pod_namespace, "/pods/", pod_name);
    label_own_pod = [api = api_.get(), pod_path](bool leader) {
      absl::StatusOr<kube::ApiResponse> r = api->Patch(
          pod_path,
          kube::LabelsPatchJson({{std::string(topology::kLeaderLabel), leader ? "true" : "false"}}),
          "application/merge-patch+json");
      if (!r.ok() || r->status != 200) {
        common::Log(
            common::LogLevel::kWarn, "cannot label own pod as extender leader",
            {{"error", r.ok() ? kube::DescribeError(*r) : std::string(r.status().message())}});
      }
    };
  }
  // A new leader lists pods again before it binds: its watch may lag the old leader's last
  // binds. Only the caught-up leader binds, whatever the Service routes to it.
  fence_ = std::make_unique<kube::LeaderFence>(*source_);
  lo.on_change = [f = fence_.get(), then = std::move(label_own_pod)](bool leading) {
    f->OnLeadership(leading);
    if (then) then(leading);
  };
  elector_ = std::make_unique<kube::LeaderElector>(*api_, lo);
  binder_->SetGate([e = elector_.get(), f = fence_.get()] { return e->is_leader() && f->Ready(); });
  // Every replica watches claims; only the leader records their allocations.
  source_->SetClaimAudit(audit, [e = elector_.get()] { return e->is_leader(); });
}

void ServeCluster::Start() {
  if (started_) return;
  started_ = true;
  if (source_) source_->Start();
  if (elector_) elector_->Start();
  if (guard_) guard_->Start(initial_policy_);
  if (fixed_) contract_->RunOnce(/*full=*/true);
  contract_->Start();
}

void ServeCluster::Stop() {
  if (!started_) return;
  started_ = false;
  contract_->Stop();
  if (guard_) guard_->Stop();
  if (elector_) elector_->Stop();  // releases the lease so a peer takes over at once
  if (source_) source_->Stop();
}

void ServeCluster::SetPolicy(std::shared_ptr<const topology::Policy> policy) {
  state_.SetPolicy(policy);
  if (guard_) guard_->Recheck(policy);
  if (fixed_) {
    state_.ReplaceAll(*fixed_);  // recompute demands too
    contract_->RunOnce(/*full=*/true);
  }
}

bool ServeCluster::ExtenderReady() const {
  return Synced() && (!elector_ || (elector_->is_leader() && fence_->Ready()));
}

void ServeCluster::Collect(common::MetricsText& out) const {
  using common::MetricsText;
  if (guard_) guard_->Collect(out);
  contract_->Collect(out);
  kube::StateCounters c = state_.counters();
  out.Family("gpu_tenancy_cache_synced", MetricsText::kGauge,
             "1 once the cluster has been listed completely.");
  out.Sample("gpu_tenancy_cache_synced", {}, Synced() ? 1 : 0);
  out.Family("gpu_tenancy_watch_restarts_total", MetricsText::kCounter,
             "Watches that ended in an error or 410.");
  out.Sample("gpu_tenancy_watch_restarts_total", {}, source_ ? source_->watch_restarts() : 0);
  out.Family("gpu_tenancy_resync_corrections_total", MetricsText::kCounter,
             "Nodes, bound GPU pods and namespace sets a full relist found added, changed "
             "or removed since the watch.");
  out.Sample("gpu_tenancy_resync_corrections_total", {}, c.resync_corrections);
  out.Family("gpu_tenancy_bind_assumptions", MetricsText::kGauge,
             "Bind placements not yet confirmed by the watch.");
  out.Sample("gpu_tenancy_bind_assumptions", {}, state_.assumption_count());
  out.Family("gpu_tenancy_leader", MetricsText::kGauge,
             "1 while this replica holds the extender lease.");
  out.Sample("gpu_tenancy_leader", {}, (!elector_ || elector_->is_leader()) ? 1 : 0);
}

}  // namespace cmd
