// What `gpu-tenancy explain` is told, as typed options (cmd/explain.cc): the cluster and policy,
// the pod, and the output format, each checked once when parsed.
#ifndef GPU_TENANCY_CMD_EXPLAIN_H_
#define GPU_TENANCY_CMD_EXPLAIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"

namespace cmd {

struct ExplainOptions {
  InputOptions inputs;  // a cluster file or the demo's, always
  std::string pod;      // a manifest file, or NAMESPACE/NAME of a pod of the cluster
  OutputFormat output = OutputFormat::kText;  // text or json
};

const common::FlagTable& ExplainFlags();

// InvalidArgument naming the flag: no --pod, no cluster, a bad -o, a stray argument.
absl::StatusOr<ExplainOptions> ParseExplainOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_EXPLAIN_H_
