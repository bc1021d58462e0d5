// What `gpu-tenancy serve` is told, as typed options: its flag table (which also writes
// --help), --config FILE folded under the command line, and every value checked and converted
// once, here. A bad value is an error naming its flag, never a silent default. The rest of
// serve (cmd/serve.cc and the services it assembles) reads ServeOptions, never argv.
//
//   ParsedFlags flags = ...;  // ServeFlags().ParseOrExit(args, flags)
//   RETURN_IF_ERROR(MergeServeConfigFile(flags));
//   ASSIGN_OR_RETURN(ServeOptions options, ParseServeOptions(flags));
#ifndef GPU_TENANCY_CMD_SERVE_OPTIONS_H_
#define GPU_TENANCY_CMD_SERVE_OPTIONS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cmd/flags.h"
#include "cmd/options.h"
#include "common/log.h"
#include "server/server.h"

namespace cmd {

// Where serve's cluster comes from.
enum class ClusterSource {
  kLive,  // kube-apiserver: --kubeconfig, or the pod's service account
  kFile,  // --cluster-file, fixed
  kDemo,  // the embedded demo cluster, fixed
};

struct ServeOptions {
  server::Options server;  // listeners, limits, certificate files
  ClusterSource cluster = ClusterSource::kLive;
  InputOptions inputs;             // the policy; the cluster file or the demo's (kFile, kDemo)
  KubeOptions api_server;          // kLive
  AuditSourceFiles audit_sources;  // what the audit page compares with
  // How long a bind's assumption waits for the watch to confirm it.
  absl::Duration assume_ttl = absl::Seconds(30);
  absl::Duration resync = absl::Minutes(5);  // every object listed again this often
  bool leader_elect = true;                  // live clusters only
  std::string lease_namespace;               // empty: the kubeconfig's namespace
  std::string identity;                      // empty: $POD_NAME, else the hostname
  std::string audit_log;                     // empty: none; "-": stdout
  std::string validating_webhook_config = "gpu-tenancy";
  std::string mutating_webhook_config = "gpu-tenancy";
  std::optional<common::LogLevel> log_level;
  bool bench_routes = false;  // /bench/echo and friends, the benchmarks' baselines
  // --tls-cert not given with --demo: serve writes a throwaway pair (PrepareDemoCertificate).
  bool needs_demo_certificate = false;
};

const common::FlagTable& ServeFlags();

// Folds --config FILE into `flags`: every key of its YAML mapping is a flag's long name, and
// the command line wins. InvalidArgument naming the file and the key otherwise.
absl::Status MergeServeConfigFile(ParsedFlags& flags);

// Checks and converts every flag. InvalidArgument naming the flag and what it takes.
absl::StatusOr<ServeOptions> ParseServeOptions(const ParsedFlags& flags);

// Writes a throwaway CA and serving pair, and a ready-to-paste filter request, into a new
// directory under /tmp; points `options` at the pair. Returns the CA's path for curl.
absl::StatusOr<std::string> PrepareDemoCertificate(ServeOptions& options);

// The AdmissionReview kube-apiserver would send for cmd/demo/pods/untrusted-shared.yaml (an
// untrusted tenant's time-sliced pod), written beside the certificate as admission.json: the
// demo's first screen shows what the validating webhook answers.
extern const char kDemoAdmissionReview[];

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_SERVE_OPTIONS_H_
