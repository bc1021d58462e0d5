// What `gpu-tenancy webhook-config` is told, as typed options (cmd/webhook_config.cc): the
// policy whose inputs shape the matchConditions.
#ifndef GPU_TENANCY_CMD_WEBHOOK_CONFIG_H_
#define GPU_TENANCY_CMD_WEBHOOK_CONFIG_H_

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"

namespace cmd {

struct WebhookConfigOptions {
  InputOptions inputs;  // the policy only
};

const common::FlagTable& WebhookConfigFlags();

// InvalidArgument naming the flag: an empty --policy, a stray argument.
absl::StatusOr<WebhookConfigOptions> ParseWebhookConfigOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_WEBHOOK_CONFIG_H_
