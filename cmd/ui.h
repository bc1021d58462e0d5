// The JSON handlers behind the pages (server/ui_routes.h), for `gpu-tenancy ui` (picker only)
// and for `serve`'s operator port (with the live map); and what `gpu-tenancy ui` is told, as
// typed options.
#ifndef GPU_TENANCY_CMD_UI_H_
#define GPU_TENANCY_CMD_UI_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "cmd/options.h"
#include "server/ui_routes.h"
#include "topology/policy.h"
#include "topology/snapshot.h"

namespace cmd {

// With `state` (serve): the map and the isolation audit (with `audit`'s mig-parted config and
// scheduler configuration where given), and plans with the live policy's memory annotation.
// Without (ui): no map, no audit, and `policy`'s annotation.
server::UiHandlers MakeUiHandlers(
    std::shared_ptr<const topology::Policy> policy,
    std::function<std::shared_ptr<const topology::ModelState>()> state = nullptr,
    AuditSources audit = {});

struct UiOptions {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8090;  // 0: a free one
  InputOptions inputs;     // the policy only
};

const common::FlagTable& UiFlags();

// InvalidArgument naming the flag: a --listen that is not HOST:PORT, an empty --policy, a stray
// argument.
absl::StatusOr<UiOptions> ParseUiOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_UI_H_
