#include "cmd/serve_options.h"

#include <stdlib.h>

#include <fstream>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "server/dev_certs.h"

namespace cmd {
namespace {

const common::FlagTable kServeFlags{
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
     {"mig-parted-config", "FILE",
      "the site's mig-parted config: what nvidia.com/mig.config names mean\n"
      "(mig-drift in the filter, the contract guard and the audit page)"},
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

}  // namespace

const char kDemoAdmissionReview[] =
    R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)"
    R"("uid":"7c9d0f4e-demo-4000-8000-000000000001",)"
    R"("kind":{"group":"","version":"v1","kind":"Pod"},)"
    R"("resource":{"group":"","version":"v1","resource":"pods"},)"
    R"("namespace":"acme","operation":"CREATE",)"
    R"("userInfo":{"username":"alice@acme.example","groups":["system:authenticated"]},)"
    R"("object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"cheap-inference",)"
    R"("namespace":"acme"},"spec":{"containers":[{"name":"server",)"
    R"("image":"registry.example/llm-server:1","resources":{)"
    R"("limits":{"nvidia.com/gpu.shared":"1"},"requests":{"nvidia.com/gpu.shared":"1"}}}]}},)"
    R"("oldObject":null,"dryRun":false}})";

namespace {

// The listeners, their limits and the certificate files.
absl::Status ParseServerOptions(const ParsedFlags& flags, bool demo, ServeOptions& out) {
  server::Options& o = out.server;
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
  // Connection limits of the TLS listener (docs/operations.md, "Limits and hostile clients").
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
  // After SIGTERM, /readyz fails at once but requests are still served this long, so the
  // endpoints controller can drop the pod before its listeners close.
  ASSIGN_OR_RETURN(absl::Duration delay,
                   common::DurationFlag(flags, "shutdown-delay", absl::ZeroDuration(),
                                        absl::ZeroDuration(), absl::Minutes(10), "5s"));
  o.shutdown_delay = delay;
  ASSIGN_OR_RETURN(absl::Duration deadline,
                   common::DurationFlag(flags, "request-deadline", o.request_deadline,
                                        absl::Milliseconds(100), absl::Minutes(5), "10s"));
  o.request_deadline = deadline;
  // Keep it above the callers' idle pool timeout (Go's 90 s), so they close first.
  ASSIGN_OR_RETURN(absl::Duration idle,
                   common::DurationFlag(flags, "keep-alive-timeout", o.keep_alive_timeout,
                                        absl::Seconds(1), absl::Hours(1), "120s"));
  o.keep_alive_timeout = idle;
  o.client_ca_file = flags.Get("client-ca");
  const bool cert = flags.Has("tls-cert"), key = flags.Has("tls-key");
  if (demo && !cert) {
    out.needs_demo_certificate = true;
    return absl::OkStatus();
  }
  if (!cert && !key) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key are required (or use --demo)");
  }
  if (!key) return absl::InvalidArgumentError("--tls-key is required with --tls-cert");
  if (!cert) return absl::InvalidArgumentError("--tls-cert is required with --tls-key");
  o.tls_cert_file = flags.Get("tls-cert");
  o.tls_key_file = flags.Get("tls-key");
  return absl::OkStatus();
}

}  // namespace

const common::FlagTable& ServeFlags() { return kServeFlags; }

absl::Status MergeServeConfigFile(ParsedFlags& flags) {
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
    const common::Flag* flag = kServeFlags.Find(key);
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

absl::StatusOr<ServeOptions> ParseServeOptions(const ParsedFlags& flags) {
  ServeOptions out;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  ASSIGN_OR_RETURN(out.log_level, ParseLogLevelFlag(flags));
  const bool demo = flags.Has("demo");
  RETURN_IF_ERROR(ParseServerOptions(flags, demo, out));
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  RETURN_IF_ERROR(CheckOneClusterSource(flags));
  ASSIGN_OR_RETURN(out.api_server, ParseKubeOptions(flags));
  ASSIGN_OR_RETURN(out.audit_sources, ParseAuditSourceFiles(flags));
  out.cluster = !out.inputs.cluster_file.empty() ? ClusterSource::kFile
                : out.inputs.demo                ? ClusterSource::kDemo
                                                 : ClusterSource::kLive;
  ASSIGN_OR_RETURN(out.assume_ttl,
                   common::DurationFlag(flags, "assume-ttl", out.assume_ttl, absl::Milliseconds(1),
                                        absl::InfiniteDuration(), "30s"));
  ASSIGN_OR_RETURN(out.resync,
                   common::DurationFlag(flags, "resync", out.resync, absl::Milliseconds(1),
                                        absl::InfiniteDuration(), "5m"));
  // Any other value used to mean "off": a typo must not silently turn leader election off and
  // let two replicas bind at once.
  const std::string leader_elect = flags.Get("leader-elect", "true");
  if (leader_elect != "true" && leader_elect != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat("--leader-elect takes true or false, got \"", leader_elect, "\""));
  }
  out.leader_elect = leader_elect == "true";
  out.lease_namespace = flags.Get("lease-namespace");
  out.identity = flags.Get("identity");
  out.audit_log = flags.Get("audit-log");
  out.validating_webhook_config = flags.Get("validating-webhook-config", "gpu-tenancy");
  out.mutating_webhook_config = flags.Get("mutating-webhook-config", "gpu-tenancy");
  out.bench_routes = flags.Has("bench-routes");
  return out;
}

absl::StatusOr<std::string> PrepareDemoCertificate(ServeOptions& options) {
  char dir_template[] = "/tmp/gpu-tenancy-demo-XXXXXX";
  if (!mkdtemp(dir_template)) return absl::InternalError("cannot create a temporary directory");
  ASSIGN_OR_RETURN(server::DevCertFiles files, server::WriteDevCerts(dir_template));
  options.server.tls_cert_file = files.cert;
  options.server.tls_key_file = files.key;
  options.needs_demo_certificate = false;
  std::ofstream(std::string(dir_template) + "/filter.json") << kDemoFilterRequest;
  std::ofstream(std::string(dir_template) + "/admission.json") << kDemoAdmissionReview;
  return files.ca_cert;
}

}  // namespace cmd
