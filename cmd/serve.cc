// gpu-tenancy serve: the scheduler extender and admission webhook over HTTPS, plus health and
// metrics over plain HTTP. `serve --demo` needs nothing: dev certificates, the embedded demo
// cluster and policy, loopback only.
//
// This file only assembles: typed options (cmd/serve_options.h), the cluster and what follows
// it (cmd/serve_cluster.h), the extender and webhook routes (cmd/serve_extender.h,
// cmd/serve_webhook.h), the operator port's routes and metrics (below), the listeners
// (server/server.h), and the policy reload. Each part is built and tested on its own.
#include <signal.h>

#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "cmd/audit_inputs.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "cmd/serve_cluster.h"
#include "cmd/serve_extender.h"
#include "cmd/serve_options.h"
#include "cmd/serve_webhook.h"
#include "cmd/ui.h"
#include "common/audit_log.h"
#include "common/config_loader.h"
#include "common/log.h"
#include "extender/allocations.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "server/file_watch.h"
#include "server/server.h"
#include "topology/fair_share.h"
#include "wire/extender_codec.h"

namespace cmd {
namespace {

// What the validating webhook answers the demo's admission.json: the denial kubectl would print.
std::string DemoDenial(ServeCluster& cluster) {
  std::shared_ptr<const topology::ModelState> state = cluster.state().Current();
  if (!state) return "";
  const webhook::ReviewOutcome out = webhook::Review(
      kDemoAdmissionReview, webhook::ReviewKind::kValidate, *state->policy, *state->snapshot);
  if (out.allowed) return "";
  return absl::StrCat(
      "Error from server (Forbidden): error when creating \"cheap-inference.yaml\": "
      "admission webhook \"",
      webhook::kValidatingWebhookName, "\" denied the request: ", out.message);
}

void PrintDemoHelp(const std::string& ca_for_curl, int tls_port, int metrics_port,
                   const std::string& denial) {
  std::string dir = ca_for_curl.substr(0, ca_for_curl.rfind('/'));
  std::string base = absl::StrCat("https://localhost:", tls_port);
  std::cout << "\nDemo cluster loaded (nodes mig-a mig-b mig-c mig-1g ts-a excl-a cpu-a).\n";
  if (!denial.empty()) {
    std::cout
        << "\nTenant acme is untrusted: its time-sliced pod (cmd/demo/pods/untrusted-shared.yaml)"
           " is refused.\nkubectl would print:\n\n  "
        << denial << "\n";
  }
  if (metrics_port > 0) {
    std::cout << "\nPages: http://localhost:" << metrics_port
              << "/ui/ (the sharing-mode picker, the live GPU map, the isolation audit)\n";
  }
  std::cout << "\nTry, from another terminal:\n\n"
            << "  # the admission review behind that denial, as kube-apiserver sends it\n"
            << "  curl -s --cacert " << ca_for_curl
            << " -H 'Content-Type: application/json' \\\n      -d @" << dir << "/admission.json "
            << base << "/webhook/validate\n\n"
            << "  # why can an untrusted tenant's MIG pod go to mig-a only?\n"
            << "  curl -s --cacert " << ca_for_curl
            << " -H 'Content-Type: application/json' \\\n      -d @" << dir << "/filter.json "
            << base << "/extender/filter\n\n"
            << "  curl -s --cacert " << ca_for_curl
            << " -H 'Content-Type: application/json' \\\n      -d @" << dir << "/filter.json "
            << base << "/extender/prioritize\n\n";
  if (metrics_port > 0) {
    std::cout << "  curl -s http://localhost:" << metrics_port << "/readyz\n"
              << "  curl -s http://localhost:" << metrics_port << "/metrics\n\n";
  }
  std::cout << "Press Ctrl-C to stop.\n";
}

// kube-apiserver, as --kubeconfig or the pod's service account reaches it.
absl::StatusOr<std::unique_ptr<ServeCluster>> FollowApiServer(
    const ServeOptions& options, std::shared_ptr<const topology::Policy> policy,
    common::AuditLog* audit, std::shared_ptr<const topology::MigPartedFile> mig_parted) {
  ASSIGN_OR_RETURN(kube::ApiConfig config, ApiConfigOf(options.api_server));
  ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> client, kube::ApiClient::Create(config));
  return ServeCluster::Live(std::move(client), config.namespace_name, options, std::move(policy),
                            audit, std::move(mig_parted));
}

// The operator port's own series: what the binary is, and the audit log's health.
void CollectProcessMetrics(const common::AuditLog* audit, common::MetricsText& out) {
  using common::MetricsText;
  out.Family("gpu_tenancy_build_info", MetricsText::kGauge, "Version of the running binary.");
  out.Sample("gpu_tenancy_build_info", {{"version", GPU_TENANCY_VERSION}}, 1);
  if (!audit) return;
  out.Family("gpu_tenancy_audit_records_total", MetricsText::kCounter,
             "Records appended to the audit log.");
  out.Sample("gpu_tenancy_audit_records_total", {}, audit->records());
  out.Family("gpu_tenancy_audit_write_errors_total", MetricsText::kCounter,
             "Audit records that could not be written.");
  out.Sample("gpu_tenancy_audit_write_errors_total", {}, audit->write_errors());
}

server::Reply AllocationsReply(const kube::ClusterState& state) {
  std::shared_ptr<const topology::ModelState> current = state.Current();
  if (!current) {
    return server::Reply{503, wire::EncodeHttpError("gpu-tenancy: cache not synced"), {}};
  }
  return server::Reply{
      200, extender::AllocationsJson(*current, extender::Allocations(*current)), {}};
}

// The policy checks fair-sharing guarantees at load only against a stated fairSharing.capacity;
// once the cluster is at hand (a fixed cluster at start, any synced one at a reload), a policy
// that promises more than it offers is named in the log (the audit's fair-share-guarantees-fit
// item follows it from then on).
void WarnIfGuaranteesOvercommit(const kube::ClusterState& state) {
  std::shared_ptr<const topology::ModelState> current = state.Current();
  if (!current) return;
  const topology::FairShareLedger ledger =
      topology::MakeLedger(*current->snapshot, *current->policy);
  if (ledger.tenants.empty()) return;
  if (absl::Status fits = topology::CheckGuarantees(*current->policy, ledger.capacity);
      !fits.ok()) {
    common::Log(common::LogLevel::kWarn, "fair-sharing guarantees overcommit the cluster",
                {{"reason", fits.message()}});
  }
}

// Reads the policy file again when it changes; a bad one is logged and the current one kept.
std::unique_ptr<server::FileWatcher> WatchPolicy(const std::string& path, ServeCluster& cluster) {
  return std::make_unique<server::FileWatcher>(
      std::vector<std::string>{path}, std::chrono::seconds(2), [&cluster, path] {
        absl::StatusOr<std::string> text = ReadFile(path);
        absl::StatusOr<topology::Policy> next =
            text.ok() ? LoadPolicy(*text) : absl::StatusOr<topology::Policy>(text.status());
        if (!next.ok()) {
          common::Log(common::LogLevel::kWarn, "policy reload rejected; keeping the current policy",
                      {{"file", path}, {"reason", next.status().message()}});
          return;
        }
        cluster.SetPolicy(std::make_shared<const topology::Policy>(*std::move(next)));
        common::Log(common::LogLevel::kInfo, "policy reloaded", {{"file", path}});
        WarnIfGuaranteesOvercommit(cluster.state());
      });
}

}  // namespace

int RunServe(const std::vector<std::string>& args) {
  const common::FlagTable& table = ServeFlags();
  ParsedFlags flags;
  if (std::optional<int> exit_code = table.ParseOrExit(args, flags)) return *exit_code;
  if (absl::Status s = MergeServeConfigFile(flags); !s.ok()) return table.Refuse(s);
  absl::StatusOr<ServeOptions> options = ParseServeOptions(flags);
  if (!options.ok()) return table.Refuse(options.status());
  if (options->log_level) common::SetLogLevel(*options->log_level);
  // Before any thread starts (a live cluster's event recorder starts one as it is made), so
  // only sigwait() below sees SIGTERM and SIGINT, and a stop is always a drain, never a kill.
  sigset_t signals = BlockShutdownSignals();
  std::string ca_for_curl;
  if (options->needs_demo_certificate) {
    absl::StatusOr<std::string> ca = PrepareDemoCertificate(*options);
    if (!ca.ok()) return Fail(ca.status());
    ca_for_curl = *ca;
  }
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());
  absl::StatusOr<AuditSources> audit_sources = LoadAuditSources(options->audit_sources);
  if (!audit_sources.ok()) return Fail(audit_sources.status());
  std::unique_ptr<common::AuditLog> audit;
  if (!options->audit_log.empty()) {
    absl::StatusOr<std::unique_ptr<common::AuditLog>> opened =
        common::AuditLog::Open(options->audit_log);
    if (!opened.ok()) return Fail(opened.status());
    audit = *std::move(opened);
  }

  auto shared_policy = std::make_shared<const topology::Policy>(*std::move(policy));
  std::unique_ptr<ServeCluster> opened_cluster;
  if (options->cluster == ClusterSource::kLive) {
    absl::StatusOr<std::unique_ptr<ServeCluster>> live =
        FollowApiServer(*options, shared_policy, audit.get(), audit_sources->mig_parted);
    if (!live.ok()) return Fail(live.status());
    opened_cluster = *std::move(live);
  } else {
    absl::StatusOr<topology::ClusterData> data = ReadCluster(options->inputs);
    if (!data.ok()) return table.Refuse(data.status());
    opened_cluster =
        ServeCluster::Fixed(*std::move(data), shared_policy, audit_sources->mig_parted);
  }
  ServeCluster& cluster = *opened_cluster;
  audit_sources->contract = [&cluster] {
    std::vector<guard::ContractViolation> now;
    for (const guard::Tracked& t : cluster.contract_guard().Current()) now.push_back(t.violation);
    return ContractFindings(now);
  };
  const kube::ClusterState& state = cluster.state();

  ExtenderService extender(state, cluster.binder(), audit.get());
  kube::ConfigMapRecords* records = cluster.usage_records();
  webhook::RecordUpdate record_update;
  if (records) {
    record_update = [records](const std::string& name, const auto& decide, bool dry_run) {
      return records->Update(name, decide, dry_run);
    };
  }
  WebhookService webhooks(state, std::move(record_update), audit.get(),
                          [] { return absl::ToUnixSeconds(absl::Now()); });
  std::vector<server::PostRoute> routes = extender.Routes();
  for (server::PostRoute& r : webhooks.Routes()) routes.push_back(std::move(r));
  if (options->bench_routes) {
    for (server::PostRoute& r : BenchBaselineRoutes()) routes.push_back(std::move(r));
  }

  std::vector<server::ReadyCheck> readiness = {
      // Every replica serves the stateless webhook once it knows the cluster.
      {"/readyz", [&cluster] { return cluster.Synced(); }},
      // Only the leader serves the extender: one assume cache, no double allocation.
      {"/readyz/extender", [&cluster] { return cluster.ExtenderReady(); }},
  };
  absl::StatusOr<std::unique_ptr<server::Server>> srv = server::Server::Create(
      options->server, std::move(routes), std::move(readiness),
      [&extender, &webhooks, &cluster, audit = audit.get()](common::MetricsText& out) {
        extender.Collect(out);
        webhooks.Collect(out);
        CollectProcessMetrics(audit, out);
        cluster.Collect(out);
      },
      {{"/debug/allocations", [&state] { return AllocationsReply(state); }},
       {"/debug/contract",
        [&cluster] {
          const guard::ContractGuard& g = cluster.contract_guard();
          return server::Reply{200, guard::ContractReportJson(g.Current(), g.Evictions()), {}};
        }}},
      server::UiRoutes(MakeUiHandlers(
          nullptr, [&state] { return state.Current(); }, *std::move(audit_sources))));
  if (!srv.ok()) return Fail(srv.status());

  std::unique_ptr<server::FileWatcher> policy_watch;
  if (!options->inputs.policy_file.empty()) {
    policy_watch = WatchPolicy(options->inputs.policy_file, cluster);
  }
  cluster.Start();
  WarnIfGuaranteesOvercommit(cluster.state());
  (*srv)->Start();
  std::cout << "ready tls_port=" << (*srv)->tls_port() << " metrics_port=" << (*srv)->metrics_port()
            << std::endl;
  common::Log(
      common::LogLevel::kInfo, "serving",
      {{"tls", absl::StrCat(options->server.listen_host, ":", (*srv)->tls_port())},
       {"metrics", absl::StrCat(options->server.metrics_host, ":", (*srv)->metrics_port())}});
  if (!ca_for_curl.empty()) {
    PrintDemoHelp(ca_for_curl, (*srv)->tls_port(), (*srv)->metrics_port(), DemoDenial(cluster));
    std::cout.flush();
  }

  int received = 0;
  sigwait(&signals, &received);
  common::Log(common::LogLevel::kInfo, "shutting down", {{"signal", absl::StrCat(received)}});
  policy_watch.reset();
  (*srv)->Stop();  // readiness fails first, in-flight requests finish
  cluster.Stop();  // the leader releases its lease so a peer takes over at once
  return 0;
}

}  // namespace cmd
