// The JSON handlers behind the pages (server/ui_routes.h), for `gpu-tenancy ui` (picker only)
// and for `serve`'s operator port (with the live map).
#ifndef GPU_TENANCY_CMD_UI_H_
#define GPU_TENANCY_CMD_UI_H_

#include <functional>
#include <memory>

#include "cmd/inputs.h"
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

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_UI_H_
