// The rules of the MIG reconfiguration gate (`gpu-tenancy reconfigure`) that need no cluster:
// its steps and their names, which pods it drains, when a workload's traffic has moved off the
// node, and what each nvidia.com/mig.config.state value means for the wait. kube/reconfigure_gate
// drives the steps against kube-apiserver.
#ifndef GPU_TENANCY_TOPOLOGY_RECONFIGURE_RULES_H_
#define GPU_TENANCY_TOPOLOGY_RECONFIGURE_RULES_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace topology {

// In the order they run; the rollback steps run only after a failure once kApply has changed the
// node.
enum class GateStep {
  kPrecheck,
  kCordon,
  kTrafficCheck,
  kDrain,
  kApply,
  kWaitForMigManager,
  kValidate,
  kSmoke,
  kUncordon,
  kRollbackApply,
  kRollbackWait,
  kRollbackValidate,
  kRollbackUncordon,
};

absl::string_view StepName(GateStep step);  // "precheck", "traffic-check", "rollback-wait", ...

// Resources that hold a GPU or part of one: nvidia.com/gpu, nvidia.com/gpu.shared and every
// nvidia.com/mig-<profile>[.shared]. A pod requesting any of them loses its device when the
// geometry changes, so the gate drains it; other pods stay.
bool IsGpuResource(absl::string_view resource);

// A controller (ReplicaSet, StatefulSet) with pods on the node being drained.
struct ReplicaOwner {
  std::string kind;
  std::string namespace_name;
  std::string name;
  int desired = 0;          // spec.replicas
  int on_node = 0;          // its GPU pods on the node
  int ready_elsewhere = 0;  // its Ready pods on other nodes
};

// nullopt when the owner can lose its pods on the node: the replicas it wants beyond those are
// Ready elsewhere, and at least one is (a workload living only on this node has nowhere to send
// its traffic). Otherwise why it blocks: "ReplicaSet acme/llm-7d9: 0 of 1 replicas ready on
// other nodes".
std::optional<std::string> TrafficBlocker(const ReplicaOwner& owner);

enum class MigStateVerdict { kKeepWaiting, kSucceeded, kFailed };

// pending, rebooting (and absent: mig-manager has not picked the change up yet) keep waiting;
// success goes on; failed, or any value mig-manager never writes, fails.
MigStateVerdict JudgeMigState(absl::string_view state, bool present);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_RECONFIGURE_RULES_H_
