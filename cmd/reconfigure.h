// What `gpu-tenancy reconfigure` is told, as typed options (cmd/reconfigure.cc): the node and
// the gate's settings, where the mig-parted config comes from, the API server, and how the
// run is reported, each checked once when parsed.
#ifndef GPU_TENANCY_CMD_RECONFIGURE_H_
#define GPU_TENANCY_CMD_RECONFIGURE_H_

#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"
#include "common/log.h"
#include "kube/reconfigure_gate.h"

namespace cmd {

struct ReconfigureOptions {
  // NODE, --to, the waits, the smoke pod, --skip-traffic-check and --dry-run; `configs` is
  // filled once the mig-parted config is read.
  kube::GateOptions gate;
  // --mig-parted-config FILE; when empty, the ConfigMap below.
  std::string mig_parted_file;
  std::string configmap_namespace = "gpu-operator";
  std::string configmap_name = "default-mig-parted-config";
  KubeOptions api_server;
  std::string audit_log;  // empty: none; "-": stdout
  common::LogLevel log_level = common::LogLevel::kWarn;
  OutputFormat output = OutputFormat::kText;  // text or json
};

const common::FlagTable& ReconfigureFlags();

// InvalidArgument naming the flag: no NODE or more than one, no --to, both config sources, a
// ConfigMap that is not NAMESPACE/NAME, a bad duration, --smoke-namespace without
// --smoke-image, --context without --kubeconfig, a bad --log-level or -o.
absl::StatusOr<ReconfigureOptions> ParseReconfigureOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_RECONFIGURE_H_
