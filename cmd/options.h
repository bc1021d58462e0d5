// The typed options several subcommands share, each parsed once from the flags that give it:
// which policy and cluster a command works on, the kube-apiserver it talks to, the files the
// isolation audit compares with, -o, --log-level and the absence of stray arguments. Each
// command's own options struct (ServeOptions, ExplainOptions, ...) holds these pieces and is
// parsed beside the command; its body reads the struct, never argv. A bad value is an
// InvalidArgument naming the flag and what it takes.
//
//   ASSIGN_OR_RETURN(options.inputs, ParseInputOptions(flags));
//   ASSIGN_OR_RETURN(options.output, ParseOutputFormat(flags, {OutputFormat::kText,
//                                                              OutputFormat::kJson}));
#ifndef GPU_TENANCY_CMD_OPTIONS_H_
#define GPU_TENANCY_CMD_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cmd/flags.h"
#include "common/log.h"

namespace cmd {

// --policy FILE, --cluster-file FILE and --demo: the policy and the fixed cluster a command
// works on. A file wins over --demo; without either the policy allows everything and there is
// no fixed cluster. A command whose table lacks one of these flags leaves its field empty.
struct InputOptions {
  std::string policy_file;   // empty: the demo's policy with `demo`, else allow-all
  std::string cluster_file;  // empty: the demo's cluster with `demo`, else none
  bool demo = false;

  bool has_cluster() const { return demo || !cluster_file.empty(); }
};

// --kubeconfig FILE [--context NAME]: the kube-apiserver to talk to; with neither flag, the
// pod's service account (in-cluster).
struct KubeOptions {
  std::string kubeconfig;  // empty: in-cluster
  std::string context;     // empty: the kubeconfig's current-context
};

// --mig-parted-config FILE and --scheduler-config FILE: what the isolation audit compares the
// cluster with (cmd/inputs.h's LoadAuditSources reads them); empty when not given.
struct AuditSourceFiles {
  std::string mig_parted_config;
  std::string scheduler_config;
};

// -o / --output.
enum class OutputFormat { kText, kYaml, kJson, kHtml, kMarkdown };
absl::string_view OutputFormatName(OutputFormat format);

// An empty --policy or --cluster-file is refused: it names no file.
absl::StatusOr<InputOptions> ParseInputOptions(const ParsedFlags& flags);

// --context without --kubeconfig is refused: the in-cluster account has no contexts.
absl::StatusOr<KubeOptions> ParseKubeOptions(const ParsedFlags& flags);

// For commands that read either a live cluster or a fixed one: --kubeconfig or --context
// together with --cluster-file or --demo is refused, since one of them would be ignored.
absl::Status CheckOneClusterSource(const ParsedFlags& flags);

absl::StatusOr<AuditSourceFiles> ParseAuditSourceFiles(const ParsedFlags& flags);

// -o, `allowed.front()` when not given; "-o must be text or json, not \"xml\"" otherwise.
absl::StatusOr<OutputFormat> ParseOutputFormat(const ParsedFlags& flags,
                                               const std::vector<OutputFormat>& allowed);

// --log-level debug|info|warn|error; nullopt when not given.
absl::StatusOr<std::optional<common::LogLevel>> ParseLogLevelFlag(const ParsedFlags& flags);

// For commands that take no positional arguments: "unexpected argument \"X\"".
absl::Status CheckNoArguments(const ParsedFlags& flags);

// The value of `flag` (a file, a name), refused when given empty; "" when not given.
absl::StatusOr<std::string> NonEmptyFlag(const ParsedFlags& flags, const std::string& flag,
                                         absl::string_view what);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_OPTIONS_H_
