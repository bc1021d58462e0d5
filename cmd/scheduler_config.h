// What `gpu-tenancy scheduler-config` is told, as typed options (cmd/scheduler_config.cc): the
// layout to write, and the policy and cluster that add or narrow the managed resource names.
#ifndef GPU_TENANCY_CMD_SCHEDULER_CONFIG_H_
#define GPU_TENANCY_CMD_SCHEDULER_CONFIG_H_

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"

namespace cmd {

enum class SchedulerConfigLayout {
  kStanza,            // the `extenders:` entry only
  kScheduler,         // manifests/scheduler/config.yaml
  kDefaultScheduler,  // manifests/default-scheduler/kube-scheduler-config.yaml
};

struct SchedulerConfigOptions {
  SchedulerConfigLayout layout = SchedulerConfigLayout::kStanza;
  InputOptions inputs;  // the policy; the cluster file, when given, narrows the names
};

const common::FlagTable& SchedulerConfigFlags();

// InvalidArgument naming the flag: an unknown --layout, an empty file name, a stray argument.
absl::StatusOr<SchedulerConfigOptions> ParseSchedulerConfigOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_SCHEDULER_CONFIG_H_
