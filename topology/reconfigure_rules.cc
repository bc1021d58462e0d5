#include "topology/reconfigure_rules.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/wellknown.h"

namespace topology {

absl::string_view StepName(GateStep step) {
  switch (step) {
    case GateStep::kPrecheck:
      return "precheck";
    case GateStep::kCordon:
      return "cordon";
    case GateStep::kTrafficCheck:
      return "traffic-check";
    case GateStep::kDrain:
      return "drain";
    case GateStep::kApply:
      return "apply";
    case GateStep::kWaitForMigManager:
      return "wait-mig-manager";
    case GateStep::kValidate:
      return "validate";
    case GateStep::kSmoke:
      return "smoke";
    case GateStep::kUncordon:
      return "uncordon";
    case GateStep::kRollbackApply:
      return "rollback-apply";
    case GateStep::kRollbackWait:
      return "rollback-wait";
    case GateStep::kRollbackValidate:
      return "rollback-validate";
    case GateStep::kRollbackUncordon:
      return "rollback-uncordon";
  }
  return "unknown";
}

bool IsGpuResource(absl::string_view resource) {
  if (absl::EndsWith(resource, kSharedSuffix)) {
    resource.remove_suffix(kSharedSuffix.size());
  }
  return resource == kGpuResource || (absl::StartsWith(resource, kMigResourcePrefix) &&
                                      resource.size() > kMigResourcePrefix.size());
}

std::optional<std::string> TrafficBlocker(const ReplicaOwner& owner) {
  int needed = std::max(1, owner.desired - owner.on_node);
  if (owner.ready_elsewhere >= needed) return std::nullopt;
  return absl::StrCat(owner.kind, " ", owner.namespace_name, "/", owner.name, ": ",
                      owner.ready_elsewhere, " of ", needed, " replicas ready on other nodes (",
                      owner.on_node, " of its pods are on this node)");
}

MigStateVerdict JudgeMigState(absl::string_view state, bool present) {
  if (!present || state == "pending" || state == "rebooting") return MigStateVerdict::kKeepWaiting;
  if (state == "success") return MigStateVerdict::kSucceeded;
  return MigStateVerdict::kFailed;
}

}  // namespace topology
