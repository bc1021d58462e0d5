// What `gpu-tenancy node-agent` is told, as typed options (cmd/node_agent.cc): the node, the
// kubelet socket, the rounds' pace, the API server and the metrics port, each checked once when
// parsed.
#ifndef GPU_TENANCY_CMD_NODE_AGENT_H_
#define GPU_TENANCY_CMD_NODE_AGENT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/node_agent.h"
#include "cmd/flags.h"
#include "cmd/options.h"
#include "common/log.h"

namespace cmd {

struct NodeAgentCommandOptions {
  agent::NodeAgentOptions round;  // the node (--node, else $NODE_NAME) and the kubelet's deadline
  std::string socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  absl::Duration interval = absl::Seconds(10);
  bool once = false;
  KubeOptions api_server;
  std::string metrics_host = "0.0.0.0";
  int metrics_port = 8080;  // -1: no metrics port (--metrics-listen off)
  std::optional<common::LogLevel> log_level;
};

const common::FlagTable& NodeAgentFlags();

// InvalidArgument naming the flag: no node name, a bad duration or address, --context without
// --kubeconfig, a bad --log-level, a stray argument.
absl::StatusOr<NodeAgentCommandOptions> ParseNodeAgentOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_NODE_AGENT_H_
