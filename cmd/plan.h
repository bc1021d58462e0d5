// What `gpu-tenancy plan` is told, as typed options (cmd/plan.cc): which of its two plans to
// make (the workloads of an input file, or the re-cuts of a cluster's pending MIG pods), from
// what, and the output format, each checked once when parsed.
#ifndef GPU_TENANCY_CMD_PLAN_H_
#define GPU_TENANCY_CMD_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"

namespace cmd {

struct PlanOptions {
  // --input FILE: the workloads and the fleet; empty with --from-cluster.
  std::string input;
  // --from-cluster: the re-cuts, from `inputs`' cluster (a file or the demo's), else listed
  // live from `api_server`.
  bool from_cluster = false;
  InputOptions inputs;  // the policy; with --from-cluster, the cluster
  KubeOptions api_server;
  OutputFormat output = OutputFormat::kText;  // text, yaml or json
};

const common::FlagTable& PlanFlags();

// InvalidArgument naming the flag: neither --input nor --from-cluster or both, a cluster flag
// without --from-cluster, a live cluster and a fixed one at once, a bad -o, a stray argument.
absl::StatusOr<PlanOptions> ParsePlanOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_PLAN_H_
