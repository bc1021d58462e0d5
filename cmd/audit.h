// What `gpu-tenancy audit` is told, as typed options (cmd/audit.cc): the cluster (a file, the
// demo's, or listed live), the policy, what the checklist compares them with, and the output
// format, each checked once when parsed.
#ifndef GPU_TENANCY_CMD_AUDIT_H_
#define GPU_TENANCY_CMD_AUDIT_H_

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"

namespace cmd {

struct AuditOptions {
  InputOptions inputs;     // the policy; the cluster when it has one, else it is listed live
  KubeOptions api_server;  // the live cluster
  AuditSourceFiles sources;
  OutputFormat output = OutputFormat::kText;  // text, json, html or markdown
};

const common::FlagTable& AuditFlags();

// InvalidArgument naming the flag: a live cluster and a fixed one at once, --context without
// --kubeconfig, an empty file name, a bad -o, a stray argument.
absl::StatusOr<AuditOptions> ParseAuditOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_AUDIT_H_
