// gpu-tenancy node-agent: the DaemonSet that tells kube-apiserver which devices the kubelet gave
// each GPU pod on its node (agent/node_agent.h), on start and then every --interval.
#include "cmd/node_agent.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/node_agent.h"
#include "agent/pod_resources_client.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/log.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "server/listener.h"

namespace cmd {
namespace {

const common::FlagTable kNodeAgentFlags{
    {"gpu-tenancy node-agent --node NAME [--pod-resources-socket PATH] [--interval DURATION]\n"
     "                              [--kubeconfig FILE [--context NAME]] [--once]\n"
     "                              [--metrics-listen HOST:PORT|off]"},
    "Reads the kubelet's PodResources API and writes which device IDs (GPU and MIG UUIDs,\n"
    "time-slicing replicas) each GPU pod on this node got, as the pod's gpu-tenancy.io/devices\n"
    "annotation, and the node's GPUs as its gpu-tenancy.io/gpu-devices annotation. Writes only\n"
    "what changed. Without --kubeconfig, kube-apiserver is reached with the pod's service\n"
    "account.",
    {{"node", "NAME", "this node's name (default $NODE_NAME)"},
     {"pod-resources-socket", "PATH",
      "the kubelet's PodResources socket\n(default /var/lib/kubelet/pod-resources/kubelet.sock)"},
     {"interval", "DURATION", "time between rounds, 1s..1h (default 10s)"},
     {"kubelet-timeout", "DURATION", "the deadline of each PodResources call (default 5s)"},
     {"kubeconfig", "FILE", "the API server to write to (default: in-cluster service account)"},
     {"context", "NAME", "the kubeconfig context (default: its current-context)"},
     {"once", "", "one round, then exit: 0 when it wrote all it had to, 1 otherwise"},
     {"metrics-listen", "HOST:PORT|off",
      "plain HTTP for Prometheus and probes: /metrics, /healthz (default\n0.0.0.0:8080; off: "
      "none)"},
     {"log-level", "LEVEL", "debug, info, warn or error (default info)"}}};

}  // namespace

const common::FlagTable& NodeAgentFlags() { return kNodeAgentFlags; }

absl::StatusOr<NodeAgentCommandOptions> ParseNodeAgentOptions(const ParsedFlags& flags) {
  NodeAgentCommandOptions o;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  ASSIGN_OR_RETURN(o.log_level, ParseLogLevelFlag(flags));
  const char* node_env = std::getenv("NODE_NAME");
  o.round.node = flags.Get("node", node_env ? node_env : "");
  if (o.round.node.empty()) {
    return absl::InvalidArgumentError("--node is required (or set NODE_NAME from spec.nodeName)");
  }
  if (flags.Has("pod-resources-socket")) {
    ASSIGN_OR_RETURN(o.socket, NonEmptyFlag(flags, "pod-resources-socket", "a path"));
  }
  ASSIGN_OR_RETURN(o.interval, common::DurationFlag(flags, "interval", o.interval, absl::Seconds(1),
                                                    absl::Hours(1), "10s"));
  ASSIGN_OR_RETURN(o.round.kubelet_timeout,
                   common::DurationFlag(flags, "kubelet-timeout", o.round.kubelet_timeout,
                                        absl::Milliseconds(100), absl::Minutes(1), "5s"));
  o.once = flags.Has("once");
  ASSIGN_OR_RETURN(o.api_server, ParseKubeOptions(flags));
  const std::string metrics = flags.Get("metrics-listen", "0.0.0.0:8080");
  if (metrics == "off") {
    o.metrics_port = -1;
  } else {
    RETURN_IF_ERROR(SplitHostPort("--metrics-listen", metrics, o.metrics_host, o.metrics_port));
  }
  return o;
}

int RunNodeAgent(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kNodeAgentFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<NodeAgentCommandOptions> options = ParseNodeAgentOptions(flags);
  if (!options.ok()) return kNodeAgentFlags.Refuse(options.status());
  if (options->log_level) common::SetLogLevel(*options->log_level);
  // Blocked before any thread starts (gRPC and the API client start their own), so SIGTERM
  // reaches the sigtimedwait below instead of killing the process from one of theirs.
  sigset_t signals{};
  if (!options->once) signals = BlockShutdownSignals();
  absl::StatusOr<kube::ApiConfig> config = ApiConfigOf(options->api_server);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> api = kube::ApiClient::Create(*config);
  if (!api.ok()) return Fail(api.status());
  agent::PodResourcesClient kubelet(options->socket);
  agent::NodeAgent node_agent(**api, kubelet, options->round);
  if (options->once) return node_agent.RunOnce().ok() ? 0 : 1;

  // The round's counters (rounds, errors by source, writes) for Prometheus, and a liveness
  // probe that answers while a round waits on the kubelet.
  std::unique_ptr<server::Listener> metrics;
  if (options->metrics_port >= 0) {
    std::vector<server::OperatorRoute> routes = {
        {"/healthz",
         [] {
           return server::OperatorReply{200, "text/plain", "ok\n"};
         },
         true},
        {"/metrics", [&node_agent] {
           std::string text;
           common::MetricsText out(text);
           node_agent.Collect(out);
           return server::OperatorReply{200, "text/plain; version=0.0.4; charset=utf-8",
                                        std::move(text)};
         }}};
    server::OperatorPortOptions port;
    port.host = options->metrics_host;
    port.port = options->metrics_port;
    absl::StatusOr<std::unique_ptr<server::Listener>> bound =
        server::Listener::BindOperatorPort(std::move(port), std::move(routes));
    if (!bound.ok()) return Fail(bound.status());
    metrics = *std::move(bound);
    metrics->Start();
  }
  common::Log(common::LogLevel::kInfo, "node agent started",
              {{"node", options->round.node},
               {"socket", options->socket},
               {"metrics_port", absl::StrCat(metrics ? metrics->operator_port() : -1)}});
  const timespec wait = absl::ToTimespec(options->interval);
  for (;;) {
    // A failed round has been logged and counted; the next one tries again.
    node_agent.RunOnce().IgnoreError();
    if (sigtimedwait(&signals, nullptr, &wait) > 0) break;
  }
  if (metrics) metrics->Stop();
  common::Log(common::LogLevel::kInfo, "node agent stopped", {{"node", options->round.node}});
  return 0;
}

}  // namespace cmd
