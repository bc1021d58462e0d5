// gpu-tenancy serve: the scheduler extender and admission webhook over HTTPS, plus health and
// metrics over plain HTTP. `serve --demo` needs nothing: dev certificates, the embedded demo
// cluster and policy, loopback only.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "cmd/ui.h"
#include "cmd/webhook_guard.h"
#include "common/audit_log.h"
#include "common/config_loader.h"
#include "common/extender_codec.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "common/log.h"
#include "common/yaml_json.h"
#include "extender/allocations.h"
#include "extender/bind.h"
#include "extender/inventory.h"
#include "extender/preempt.h"
#include "extender/verbs.h"
#include "kube/api_client.h"
#include "kube/binder.h"
#include "kube/cluster_state.h"
#include "kube/config.h"
#include "kube/leader.h"
#include "kube/live_source.h"
#include "kube/objects.h"
#include "kube/usage_record.h"
#include "server/dev_certs.h"
#include "server/file_watch.h"
#include "server/server.h"
#include "topology/status_macros.h"
#include "webhook/review.h"

namespace cmd {
namespace {

const common::FlagTable kFlags{
    {"gpu-tenancy serve --policy FILE --tls-cert FILE --tls-key FILE\n"
     "                         [--kubeconfig FILE [--context NAME] | --cluster-file FILE] [flags]",
     "gpu-tenancy serve --demo [--listen HOST:PORT] [--metrics-listen HOST:PORT]"},
    "Runs the scheduler extender and the admission webhooks over HTTPS, and the operator port\n"
    "(probes, metrics, /debug/allocations and the pages at /ui/). Without --cluster-file or\n"
    "--kubeconfig the cluster is read from kube-apiserver with the pod's service account.",
    {{"policy", "FILE", "the tenancy policy; reloaded when the file changes"},
     {"tls-cert", "FILE", "the serving certificate (PEM); reloaded when it changes"},
     {"tls-key", "FILE", "its private key (PEM)"},
     {"client-ca", "FILE", "require client certificates signed by this CA"},
     {"kubeconfig", "FILE", "the API server to follow (default: in-cluster service account)"},
     {"context", "NAME", "the kubeconfig context (default: its current-context)"},
     {"cluster-file", "FILE", "a fixed cluster instead of a live one (kubectl get -o json)"},
     {"demo", "", "the embedded demo cluster and policy, a throwaway certificate"},
     {"listen", "HOST:PORT", "the HTTPS port (default 0.0.0.0:8443; --demo 127.0.0.1:8443)"},
     {"metrics-listen", "HOST:PORT|off",
      "the operator port (default 0.0.0.0:8080; --demo 127.0.0.1:8080)"},
     {"assume-ttl", "DURATION", "how long a bind's assumption waits for the watch (default 30s)"},
     {"resync", "DURATION", "relist every object this often (default 5m)"},
     {"leader-elect", "true|false",
      "bind only while holding the Lease (default true; live clusters)"},
     {"lease-namespace", "NS", "the Lease's namespace (default: the kubeconfig's namespace)"},
     {"identity", "NAME", "this replica's name in the Lease (default $POD_NAME or hostname)"},
     {"threads", "N", "workers running complete requests, 2..4096 (default 64)"},
     {"max-body-bytes", "N", "the largest request body, at least 1024 (default 64 MiB)"},
     {"max-connections", "N", "open TLS connections, 16..1000000 (default 20000)"},
     {"max-connections-per-ip", "N", "open TLS connections per client address (default 1024)"},
     {"max-queued-requests", "N", "requests waiting for a worker before 503 (default 1024)"},
     {"request-deadline", "DURATION", "a request's whole budget, 100ms..5m (default 10s)"},
     {"keep-alive-timeout", "DURATION", "how long an idle connection is kept (default 120s)"},
     {"shutdown-delay", "DURATION",
      "after SIGTERM, keep serving this long while /readyz fails (0s..10m)"},
     {"audit-log", "FILE|-",
      "append one JSON line per bind, per admission denial and per DRA claim\n"
      "allocated or released (\"-\": stdout)"},
     {"mig-parted-config", "FILE", "the mig-parted config the audit page compares MIG with"},
     {"scheduler-config", "FILE",
      "the KubeSchedulerConfiguration the audit page compares managed\n"
      "resources with"},
     {"validating-webhook-config", "NAME",
      "the ValidatingWebhookConfiguration whose matchConditions are\n"
      "compared with the policy's (default gpu-tenancy)"},
     {"mutating-webhook-config", "NAME", "the same for the MutatingWebhookConfiguration"},
     {"log-level", "LEVEL", "debug, info, warn or error (default info)"},
     {"config", "FILE", "YAML whose keys are these flags' names; the command line wins"},
     {"bench-routes", "", "also serve /bench/echo and /bench/parse, the benchmarks' baselines"}}};

// The demo's ready-to-paste filter request: an untrusted tenant's MIG pod, names-only.
constexpr char kDemoFilterRequest[] =
    R"({"Pod":{"metadata":{"name":"llm-b","namespace":"acme","uid":"demo-1"},)"
    R"("spec":{"containers":[{"name":"server","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
    R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
    R"("Nodes":null,"NodeNames":["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"]})";

// Folds --config FILE into the flags: every key of the YAML mapping is a flag name.
absl::Status MergeConfigFile(ParsedFlags& flags) {
  if (!flags.Has("config")) return absl::OkStatus();
  std::string path = flags.Get("config");
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::StatusOr<rapidjson::Document> doc = common::YamlToJson(text);
  if (!doc.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", doc.status().message()));
  if (!doc->IsObject())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a mapping"));
  for (auto it = doc->MemberBegin(); it != doc->MemberEnd(); ++it) {
    std::string key(common::AsStringView(it->name));
    const common::Flag* flag = kFlags.Find(key);
    if (!flag || flag->value.empty() || key == "config") {
      return absl::InvalidArgumentError(absl::StrCat(path, ": unknown key \"", key, "\""));
    }
    if (flags.values.count(key)) continue;  // the command line wins
    std::string value = it->value.IsString() ? std::string(common::AsStringView(it->value))
                                             : common::ToJson(it->value);
    flags.values[key].push_back(value);
  }
  return absl::OkStatus();
}

struct ServeSetup {
  server::Options options;
  std::string ca_for_curl;  // demo only
};

absl::StatusOr<ServeSetup> BuildOptions(const ParsedFlags& flags) {
  ServeSetup setup;
  server::Options& o = setup.options;
  bool demo = flags.Has("demo");
  std::string listen = flags.Get("listen", demo ? "127.0.0.1:8443" : "0.0.0.0:8443");
  RETURN_IF_ERROR(SplitHostPort("--listen", listen, o.listen_host, o.listen_port));
  std::string metrics = flags.Get("metrics-listen", demo ? "127.0.0.1:8080" : "0.0.0.0:8080");
  if (metrics == "off") {
    o.metrics_port = -1;
  } else {
    RETURN_IF_ERROR(SplitHostPort("--metrics-listen", metrics, o.metrics_host, o.metrics_port));
  }
  if (flags.Has("threads") && (!absl::SimpleAtoi(flags.Get("threads"), &o.worker_threads) ||
                               o.worker_threads < 2 || o.worker_threads > 4096)) {
    return absl::InvalidArgumentError("--threads must be 2..4096");
  }
  if (flags.Has("max-body-bytes") &&
      (!absl::SimpleAtoi(flags.Get("max-body-bytes"), &o.max_body_bytes) ||
       o.max_body_bytes < 1024)) {
    return absl::InvalidArgumentError("--max-body-bytes must be at least 1024");
  }
  // Connection limits of the TLS listener (README "Limits and hostile clients").
  for (auto [flag, field, low] :
       {std::tuple{"max-connections", &o.max_connections, size_t{16}},
        std::tuple{"max-connections-per-ip", &o.max_connections_per_ip, size_t{1}},
        std::tuple{"max-queued-requests", &o.max_queued_requests, size_t{0}}}) {
    if (!flags.Has(flag)) continue;
    if (!absl::SimpleAtoi(flags.Get(flag), field) || *field < low || *field > 1000000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " takes a whole number from ", low, " to 1000000"));
    }
  }
  if (o.max_connections_per_ip > o.max_connections) o.max_connections_per_ip = o.max_connections;
  if (flags.Has("shutdown-delay")) {
    // After SIGTERM, /readyz fails at once but requests are still served this long, so the
    // endpoints controller can drop the pod before its listeners close.
    absl::Duration delay;
    if (!absl::ParseDuration(flags.Get("shutdown-delay"), &delay) || delay < absl::ZeroDuration() ||
        delay > absl::Minutes(10)) {
      return absl::InvalidArgumentError("--shutdown-delay takes a duration such as 5s (0s..10m)");
    }
    o.shutdown_delay_millis = static_cast<int>(absl::ToInt64Milliseconds(delay));
  }
  if (flags.Has("request-deadline")) {
    absl::Duration deadline;
    if (!absl::ParseDuration(flags.Get("request-deadline"), &deadline) ||
        deadline < absl::Milliseconds(100) || deadline > absl::Minutes(5)) {
      return absl::InvalidArgumentError(
          "--request-deadline takes a duration such as 10s (100ms..5m)");
    }
    o.request_deadline_millis = static_cast<int>(absl::ToInt64Milliseconds(deadline));
  }
  if (flags.Has("keep-alive-timeout")) {
    // Keep it above the callers' idle pool timeout (Go's 90 s), so they close first.
    absl::Duration idle;
    if (!absl::ParseDuration(flags.Get("keep-alive-timeout"), &idle) || idle < absl::Seconds(1) ||
        idle > absl::Hours(1)) {
      return absl::InvalidArgumentError(
          "--keep-alive-timeout takes a duration such as 120s (1s..1h)");
    }
    o.keep_alive_timeout_millis = static_cast<int>(absl::ToInt64Milliseconds(idle));
  }
  o.client_ca_file = flags.Get("client-ca");
  if (demo && !flags.Has("tls-cert")) {
    char dir_template[] = "/tmp/gpu-tenancy-demo-XXXXXX";
    if (!mkdtemp(dir_template)) return absl::InternalError("cannot create a temporary directory");
    ASSIGN_OR_RETURN(server::DevCertFiles files, server::WriteDevCerts(dir_template));
    o.tls_cert_file = files.cert;
    o.tls_key_file = files.key;
    setup.ca_for_curl = files.ca_cert;
    std::ofstream(std::string(dir_template) + "/filter.json") << kDemoFilterRequest;
  } else {
    const bool cert = flags.Has("tls-cert"), key = flags.Has("tls-key");
    if (!cert && !key) {
      return absl::InvalidArgumentError("--tls-cert and --tls-key are required (or use --demo)");
    }
    if (!key) return absl::InvalidArgumentError("--tls-key is required with --tls-cert");
    if (!cert) return absl::InvalidArgumentError("--tls-cert is required with --tls-key");
    o.tls_cert_file = flags.Get("tls-cert");
    o.tls_key_file = flags.Get("tls-key");
  }
  return setup;
}

void PrintDemoHelp(const ServeSetup& setup, int tls_port, int metrics_port) {
  std::string dir = setup.ca_for_curl.substr(0, setup.ca_for_curl.rfind('/'));
  std::string base = absl::StrCat("https://localhost:", tls_port);
  std::cout << "\nDemo cluster loaded (nodes mig-a mig-b mig-c mig-1g ts-a excl-a cpu-a).\n"
            << "Try, from another terminal:\n\n"
            << "  # why can an untrusted tenant's MIG pod go to mig-a only?\n"
            << "  curl -s --cacert " << setup.ca_for_curl
            << " -H 'Content-Type: application/json' \\\n      -d @" << dir << "/filter.json "
            << base << "/extender/filter\n\n"
            << "  curl -s --cacert " << setup.ca_for_curl
            << " -H 'Content-Type: application/json' \\\n      -d @" << dir << "/filter.json "
            << base << "/extender/prioritize\n\n";
  if (metrics_port > 0) {
    std::cout << "  curl -s http://localhost:" << metrics_port << "/readyz\n"
              << "  curl -s http://localhost:" << metrics_port << "/metrics\n\n";
  }
  std::cout << "Press Ctrl-C to stop.\n";
}

// The audit event for one node of a preempt answer that changed or dropped its victims.
common::PreemptAudit PreemptEvent(const extender::PreemptReply& reply,
                                  const extender::PreemptNode& node) {
  common::PreemptAudit a;
  a.outcome = node.outcome == extender::PreemptNode::Outcome::kDropped
                  ? common::PreemptAudit::Outcome::kDropped
                  : common::PreemptAudit::Outcome::kChanged;
  std::pair<std::string, std::string> ns_name = absl::StrSplit(reply.pod, absl::MaxSplits('/', 1));
  a.namespace_name = ns_name.first;
  a.pod = ns_name.second;
  a.uid = reply.uid;
  a.tenant = {reply.tenant, reply.tier};
  a.node = node.node;
  a.proposed_victims = node.proposed;
  a.victims = node.victims;
  a.reason = node.reason;
  return a;
}

}  // namespace

int RunServe(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  if (std::optional<int> exit_code = kFlags.ParseOrExit(args, parsed)) return *exit_code;
  ParsedFlags* flags = &parsed;  // --config folds into it
  if (absl::Status s = MergeConfigFile(*flags); !s.ok()) return kFlags.Refuse(s);
  if (flags->Has("log-level")) {
    absl::StatusOr<common::LogLevel> level = common::ParseLogLevel(flags->Get("log-level"));
    if (!level.ok()) return kFlags.Refuse(level.status());
    common::SetLogLevel(*level);
  }
  absl::StatusOr<ServeSetup> setup = BuildOptions(*flags);
  if (!setup.ok()) return kFlags.Refuse(setup.status());
  absl::StatusOr<topology::Policy> policy = LoadPolicyFlag(*flags);
  if (!policy.ok()) return Fail(policy.status());
  absl::StatusOr<AuditSources> audit_sources = LoadAuditSources(*flags);
  if (!audit_sources.ok()) return Fail(audit_sources.status());
  std::shared_ptr<common::AuditLog> audit;
  if (flags->Has("audit-log")) {
    absl::StatusOr<std::unique_ptr<common::AuditLog>> opened =
        common::AuditLog::Open(flags->Get("audit-log"));
    if (!opened.ok()) return Fail(opened.status());
    audit = *std::move(opened);
  }
  auto state = std::make_shared<kube::ClusterState>(common::BuiltinCatalog());
  auto initial_policy = std::make_shared<const topology::Policy>(*std::move(policy));
  state->SetPolicy(initial_policy);

  // The cluster comes from a file (or the demo), or live from kube-apiserver.
  const bool live = !flags->Has("cluster-file") && !flags->Has("demo");
  absl::Duration assume_ttl = absl::Seconds(30), resync = absl::Minutes(5);
  if ((flags->Has("assume-ttl") && !absl::ParseDuration(flags->Get("assume-ttl"), &assume_ttl)) ||
      (flags->Has("resync") && !absl::ParseDuration(flags->Get("resync"), &resync)) ||
      assume_ttl <= absl::ZeroDuration() || resync <= absl::ZeroDuration()) {
    return kFlags.Refuse(
        absl::InvalidArgumentError("--assume-ttl and --resync take durations such as 30s or 5m"));
  }
  // Any other value used to mean "off": a typo must not silently turn leader election off and
  // let two replicas bind at once.
  const std::string leader_elect = flags->Get("leader-elect", "true");
  if (leader_elect != "true" && leader_elect != "false") {
    return kFlags.Refuse(absl::InvalidArgumentError(
        absl::StrCat("--leader-elect takes true or false, got \"", leader_elect, "\"")));
  }
  std::unique_ptr<kube::ApiClient> api;
  std::unique_ptr<kube::LiveSource> source;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<kube::ApiBinder> binder;
  std::unique_ptr<kube::LeaderFence> fence;  // outlives the elector, whose Stop() calls it
  std::unique_ptr<kube::LeaderElector> elector;
  std::optional<topology::ClusterData> file_cluster;
  // Claim quotas reserve in per-tenant records (webhook/claim_quota.h); without an API server
  // they count against the snapshot alone.
  std::unique_ptr<kube::ConfigMapRecords> usage_records;
  std::unique_ptr<WebhookGuard> webhook_guard;  // stale matchConditions (cmd/webhook_guard.h)
  if (live) {
    absl::StatusOr<kube::ApiConfig> config =
        flags->Has("kubeconfig")
            ? kube::LoadKubeconfig(flags->Get("kubeconfig"), flags->Get("context"))
            : kube::InClusterConfig();
    if (!config.ok()) return Fail(config.status());
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> client = kube::ApiClient::Create(*config);
    if (!client.ok()) return Fail(client.status());
    api = *std::move(client);
    kube::LiveSourceOptions live_options;
    live_options.reflector.resync = absl::ToChronoMilliseconds(resync);
    source = std::make_unique<kube::LiveSource>(*api, *state, live_options);
    events = std::make_unique<kube::EventRecorder>(*api);
    usage_records = std::make_unique<kube::ConfigMapRecords>(
        *api, flags->Get("lease-namespace", api->config().namespace_name));
    binder = std::make_unique<kube::ApiBinder>(*api, *state, absl::ToChronoMilliseconds(assume_ttl),
                                               events.get());
    binder->SetAuditLog(audit.get());
    webhook_guard = std::make_unique<WebhookGuard>(
        *api, WebhookGuardOptions{flags->Get("validating-webhook-config", "gpu-tenancy"),
                                  flags->Get("mutating-webhook-config", "gpu-tenancy"),
                                  absl::ToChronoMilliseconds(resync)});
    source->SetClaimAudit(audit.get());
    if (leader_elect == "true") {
      kube::LeaderOptions lo;
      lo.namespace_name = flags->Get("lease-namespace", api->config().namespace_name);
      const char* pod_name = std::getenv("POD_NAME");
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      lo.identity = flags->Get("identity", pod_name ? pod_name : host);
      const char* pod_namespace = std::getenv("POD_NAMESPACE");
      if (pod_name && pod_namespace) {
        // The leader labels its own pod; the extender Service selects that label, so
        // kube-scheduler always reaches the one replica whose assume cache is authoritative.
        std::string pod_path =
            absl::StrCat("/api/v1/namespaces/", pod_namespace, "/pods/", pod_name);
        kube::Api* client = api.get();
        lo.on_change = [client, pod_path](bool leader) {
          absl::StatusOr<kube::ApiResponse> r =
              client->Patch(pod_path,
                            kube::LabelsPatchJson(
                                {{std::string(topology::kLeaderLabel), leader ? "true" : "false"}}),
                            "application/merge-patch+json");
          if (!r.ok() || r->status != 200) {
            common::Log(
                common::LogLevel::kWarn, "cannot label own pod as extender leader",
                {{"error", r.ok() ? kube::DescribeError(*r) : std::string(r.status().message())}});
          }
        };
      }
      // A new leader lists pods again before it binds: its watch may lag the old leader's
      // last binds. Only the caught-up leader binds, whatever the Service routes to it.
      fence = std::make_unique<kube::LeaderFence>(*source);
      lo.on_change = [f = fence.get(), then = std::move(lo.on_change)](bool leading) {
        f->OnLeadership(leading);
        if (then) then(leading);
      };
      elector = std::make_unique<kube::LeaderElector>(*api, lo);
      binder->SetGate(
          [e = elector.get(), f = fence.get()] { return e->is_leader() && f->Ready(); });
      // Every replica watches claims; only the leader records their allocations.
      source->SetClaimAudit(audit.get(), [e = elector.get()] { return e->is_leader(); });
    }
  } else {
    absl::StatusOr<topology::ClusterData> cluster = LoadClusterFlag(*flags);
    if (!cluster.ok()) return kFlags.Refuse(cluster.status());
    file_cluster = *cluster;
    state->ReplaceAll(*std::move(cluster));
  }

  std::vector<server::PostRoute> routes;
  // Decision counters, labelled by rule codes only: bounded however large the cluster.
  auto filter_rejections = std::make_shared<server::LabeledCounter>(
      "gpu_tenancy_filter_rejections_total", "Nodes the filter rejected, by verdict and rule.",
      std::vector<std::string>{"verdict", "rule"});
  auto admissions = std::make_shared<server::LabeledCounter>(
      "gpu_tenancy_admission_reviews_total",
      "Admission reviews answered, by webhook, outcome and rule.",
      std::vector<std::string>{"webhook", "allowed", "rule"});
  auto binds = std::make_shared<server::LabeledCounter>(
      "gpu_tenancy_binds_total", "Bind calls, by result.", std::vector<std::string>{"result"});
  // Tenants are the policy's, so the label set stays bounded.
  auto preempt_nodes = std::make_shared<server::LabeledCounter>(
      "gpu_tenancy_preempt_nodes_total",
      "Candidate nodes of preempt calls, by the preemptor's tenant and whether kube-scheduler's "
      "victims were kept, changed or the node dropped.",
      std::vector<std::string>{"tenant", "outcome"});
  routes.push_back({"/extender/filter",
                    [state, filter_rejections](absl::string_view body) {
                      std::shared_ptr<const topology::ModelState> s = state->Current();
                      extender::VerbReply r = extender::Filter(body, s.get());
                      for (const auto& [key, n] : r.rejections) {
                        filter_rejections->Add({key.first, key.second}, static_cast<uint64_t>(n));
                      }
                      return server::Reply{r.http_status, std::move(r.body), {}};
                    },
                    /*waits_on_io=*/false});
  routes.push_back({"/extender/prioritize",
                    [state](absl::string_view body) {
                      std::shared_ptr<const topology::ModelState> s = state->Current();
                      extender::VerbReply r = extender::Prioritize(body, s.get());
                      return server::Reply{r.http_status, std::move(r.body), {}};
                    },
                    /*waits_on_io=*/false});
  routes.push_back({"/extender/preempt",
                    [state, preempt_nodes, audit](absl::string_view body) {
                      std::shared_ptr<const topology::ModelState> s = state->Current();
                      extender::PreemptReply r = extender::Preempt(body, s.get());
                      for (const extender::PreemptNode& n : r.nodes) {
                        preempt_nodes->Add({r.tenant, extender::OutcomeName(n.outcome)});
                        if (audit && n.outcome != extender::PreemptNode::Outcome::kKept) {
                          audit->Write(PreemptEvent(r, n));
                        }
                      }
                      return server::Reply{r.http_status, std::move(r.body), {}};
                    },
                    /*waits_on_io=*/audit != nullptr});
  for (auto [path, kind] : {std::pair{"/webhook/validate", webhook::ReviewKind::kValidate},
                            std::pair{"/webhook/mutate", webhook::ReviewKind::kMutate}}) {
    routes.push_back({path,
                      [state, admissions, audit, records = usage_records.get(),
                       kind = kind](absl::string_view body) {
                        std::shared_ptr<const topology::ModelState> s = state->Current();
                        if (!s) {
                          // Tenants resolve through namespace labels: without them we cannot
                          // judge, and failing closed is the policy's promise.
                          return server::Reply{
                              503, common::EncodeHttpError("gpu-tenancy: cache not synced"), {}};
                        }
                        webhook::ClaimQuotaContext claim_quota;
                        claim_quota.now_unix = absl::ToUnixSeconds(absl::Now());
                        if (records) {
                          claim_quota.update = [records](const std::string& name,
                                                         const auto& decide, bool dry_run) {
                            return records->Update(name, decide, dry_run);
                          };
                        }
                        webhook::ReviewOutcome r =
                            webhook::Review(body, kind, *s->policy, *s->snapshot, claim_quota);
                        absl::string_view webhook_name =
                            kind == webhook::ReviewKind::kValidate ? "validate" : "mutate";
                        if (r.http_status == 200) {
                          admissions->Add({webhook_name, r.allowed ? "true" : "false", r.rule});
                        }
                        if (audit && r.http_status == 200 && !r.allowed) {
                          common::AdmissionDenialAudit a;
                          a.webhook = kind == webhook::ReviewKind::kValidate
                                          ? common::AdmissionDenialAudit::Webhook::kValidate
                                          : common::AdmissionDenialAudit::Webhook::kMutate;
                          a.kind = r.kind;
                          a.namespace_name = r.namespace_name;
                          a.name = r.name;
                          a.tenant = {r.tenant, r.tier};
                          a.rule = r.rule;
                          a.message = r.message;
                          audit->Write(a);
                        }
                        return server::Reply{r.http_status, std::move(r.body), {}};
                      },
                      // A denial's audit line is a write(2) that a full disk or pipe can stall;
                      // a claim's quota reservation is a round trip to the API server.
                      /*waits_on_io=*/audit != nullptr || usage_records != nullptr});
  }
  kube::ApiBinder* bind_backend = binder.get();
  routes.push_back(
      {"/extender/bind", [bind_backend, binds](absl::string_view body) {
         if (!bind_backend) {
           return server::Reply{
               200,
               common::EncodeBindingResult(
                   "gpu-tenancy: bind needs a live cluster (--kubeconfig or in-cluster), "
                   "not a cluster file"),
               {}};
         }
         extender::VerbReply r = extender::Bind(body, *bind_backend);
         if (r.http_status == 200) binds->Add({r.kept ? "bound" : "failed"});
         return server::Reply{r.http_status, std::move(r.body), {}};
       }});

  if (flags->Has("bench-routes")) {
    // Baselines measured on the same server by bench/: transport only, and JSON only.
    routes.push_back({"/bench/echo",
                      [](absl::string_view) {
                        return server::Reply{200, R"({"ok":true})", {}};
                      },
                      /*waits_on_io=*/false});
    routes.push_back(
        {"/bench/parse",
         [](absl::string_view body) {
           absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
           if (!doc.ok())
             return server::Reply{400, common::EncodeHttpError(doc.status().message()), {}};
           return server::Reply{200, R"({"ok":true})", {}};
         },
         /*waits_on_io=*/false});
    routes.push_back(
        {"/bench/parse-echo",
         [](absl::string_view body) {
           // What a full-Node filter that keeps every node must do at the least.
           absl::StatusOr<common::ExtenderArgs> args = common::ParseExtenderArgs(body);
           if (!args.ok())
             return server::Reply{400, common::EncodeHttpError(args.status().message()), {}};
           common::FilterReply keep_all;
           for (size_t i = 0; i < args->node_names.size(); ++i) keep_all.kept.push_back(i);
           return server::Reply{200, common::EncodeFilterResult(*args, keep_all), {}};
         },
         /*waits_on_io=*/false});
  }

  // Before any thread starts, so only sigwait() below sees SIGTERM and SIGINT.
  sigset_t signals = BlockShutdownSignals();

  kube::LeaderElector* leader = elector.get();
  kube::LeaderFence* leader_fence = fence.get();
  std::vector<server::ReadyCheck> readiness = {
      // Every replica serves the stateless webhook once it knows the cluster.
      {"/readyz", [state] { return state->Current() != nullptr; }},
      // Only the leader serves the extender: one assume cache, no double allocation.
      {"/readyz/extender",
       [state, leader, leader_fence] {
         return state->Current() != nullptr &&
                (!leader || (leader->is_leader() && leader_fence->Ready()));
       }},
  };
  kube::LiveSource* live_source = source.get();
  absl::StatusOr<std::unique_ptr<server::Server>> srv = server::Server::Create(
      setup->options, std::move(routes), std::move(readiness),
      [state, live_source, leader, filter_rejections, admissions, binds, preempt_nodes, audit,
       guard = webhook_guard.get()](common::MetricsText& out) {
        using common::MetricsText;
        filter_rejections->Collect(out);
        admissions->Collect(out);
        binds->Collect(out);
        preempt_nodes->Collect(out);
        if (guard) guard->Collect(out);
        out.Family("gpu_tenancy_build_info", MetricsText::kGauge, "Version of the running binary.");
        out.Sample("gpu_tenancy_build_info", {{"version", GPU_TENANCY_VERSION}}, 1);
        if (std::shared_ptr<const topology::ModelState> current = state->Current()) {
          extender::AppendInventoryMetrics(*current, out);
          extender::AppendTenantMetrics(extender::Allocations(*current), out);
        }
        if (audit) {
          out.Family("gpu_tenancy_audit_records_total", MetricsText::kCounter,
                     "Records appended to the audit log.");
          out.Sample("gpu_tenancy_audit_records_total", {}, audit->records());
          out.Family("gpu_tenancy_audit_write_errors_total", MetricsText::kCounter,
                     "Audit records that could not be written.");
          out.Sample("gpu_tenancy_audit_write_errors_total", {}, audit->write_errors());
        }
        kube::StateCounters c = state->counters();
        out.Family("gpu_tenancy_cache_synced", MetricsText::kGauge,
                   "1 once the cluster has been listed completely.");
        out.Sample("gpu_tenancy_cache_synced", {}, state->Current() ? 1 : 0);
        out.Family("gpu_tenancy_watch_restarts_total", MetricsText::kCounter,
                   "Watches that ended in an error or 410.");
        out.Sample("gpu_tenancy_watch_restarts_total", {},
                   live_source ? live_source->watch_restarts() : 0);
        out.Family("gpu_tenancy_resync_corrections_total", MetricsText::kCounter,
                   "Nodes, bound GPU pods and namespace sets a full relist found added, changed "
                   "or removed since the watch.");
        out.Sample("gpu_tenancy_resync_corrections_total", {}, c.resync_corrections);
        out.Family("gpu_tenancy_bind_assumptions", MetricsText::kGauge,
                   "Bind placements not yet confirmed by the watch.");
        out.Sample("gpu_tenancy_bind_assumptions", {}, state->assumption_count());
        out.Family("gpu_tenancy_leader", MetricsText::kGauge,
                   "1 while this replica holds the extender lease.");
        out.Sample("gpu_tenancy_leader", {}, (!leader || leader->is_leader()) ? 1 : 0);
      },
      {{"/debug/allocations",
        [state] {
          std::shared_ptr<const topology::ModelState> current = state->Current();
          if (!current) {
            return server::Reply{503, common::EncodeHttpError("gpu-tenancy: cache not synced"), {}};
          }
          return server::Reply{
              200, extender::AllocationsJson(*current, extender::Allocations(*current)), {}};
        }}},
      server::UiRoutes(MakeUiHandlers(
          nullptr, [state] { return state->Current(); }, *std::move(audit_sources))));
  if (!srv.ok()) return Fail(srv.status());

  std::unique_ptr<server::FileWatcher> policy_watch;
  if (flags->Has("policy")) {
    std::string path = flags->Get("policy");
    policy_watch = std::make_unique<server::FileWatcher>(
        std::vector<std::string>{path}, std::chrono::seconds(2),
        [state, path, &file_cluster, guard = webhook_guard.get()] {
          absl::StatusOr<std::string> text = ReadFile(path);
          absl::StatusOr<topology::Policy> next =
              text.ok() ? common::LoadPolicy(*text)
                        : absl::StatusOr<topology::Policy>(text.status());
          if (!next.ok()) {
            common::Log(common::LogLevel::kWarn,
                        "policy reload rejected; keeping the current policy",
                        {{"file", path}, {"reason", next.status().message()}});
            return;
          }
          auto policy = std::make_shared<const topology::Policy>(*std::move(next));
          state->SetPolicy(policy);
          if (guard) guard->Recheck(policy);
          if (file_cluster) state->ReplaceAll(*file_cluster);  // recompute demands too
          common::Log(common::LogLevel::kInfo, "policy reloaded", {{"file", path}});
        });
  }
  if (source) source->Start();
  if (elector) elector->Start();
  if (webhook_guard) webhook_guard->Start(initial_policy);
  (*srv)->Start();
  std::cout << "ready tls_port=" << (*srv)->tls_port() << " metrics_port=" << (*srv)->metrics_port()
            << std::endl;
  common::Log(
      common::LogLevel::kInfo, "serving",
      {{"tls", absl::StrCat(setup->options.listen_host, ":", (*srv)->tls_port())},
       {"metrics", absl::StrCat(setup->options.metrics_host, ":", (*srv)->metrics_port())}});
  if (flags->Has("demo") && !setup->ca_for_curl.empty()) {
    PrintDemoHelp(*setup, (*srv)->tls_port(), (*srv)->metrics_port());
    std::cout.flush();
  }

  int received = 0;
  sigwait(&signals, &received);
  common::Log(common::LogLevel::kInfo, "shutting down", {{"signal", absl::StrCat(received)}});
  policy_watch.reset();
  if (webhook_guard) webhook_guard->Stop();
  (*srv)->Stop();                // readiness fails first, in-flight requests finish
  if (elector) elector->Stop();  // releases the lease so a peer takes over at once
  if (source) source->Stop();
  return 0;
}

}  // namespace cmd
