// The MIG reconfiguration gate behind `gpu-tenancy reconfigure`: changes one node's
// nvidia.com/mig.config the safe way and puts the node back as it was when that fails.
//
// Steps (topology::GateStep): precheck (node, layout, placements, rollback target, the pods to
// drain), cordon, traffic check, drain through the Eviction API, apply the label, wait for
// mig-manager's nvidia.com/mig.config.state (a watch), validate the allocatable against the
// prediction, an optional smoke pod, uncordon. A failure after apply rolls back: the previous
// config, its wait, a validation against the allocatable recorded before the change, and an
// uncordon only when that passes. Cancel() (Ctrl-C) stops the wait in progress and leaves the
// node cordoned, without a rollback, and the report says in which condition.
//
// Every step is reported to the OnStep callback with its duration, posted as an Event on the
// Node and written to the audit log (a dry run posts nothing and changes nothing).
//
//   kube::ReconfigureGate gate(*api, common::BuiltinCatalog(), kube::Clock::Real());
//   kube::GateReport report = gate.Run(options);   // report.ok, report.failed_step, ...
#ifndef GPU_TENANCY_KUBE_RECONFIGURE_GATE_H_
#define GPU_TENANCY_KUBE_RECONFIGURE_GATE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/audit_log.h"
#include "common/mutex.h"
#include "kube/api.h"
#include "kube/clock.h"
#include "kube/node_ops.h"
#include "topology/catalog.h"
#include "topology/mig_parted.h"
#include "topology/reconfigure_rules.h"

namespace kube {

struct GateOptions {
  std::string node;
  std::string target;  // the layout to apply, a name in `configs`
  topology::MigPartedFile configs;
  absl::Duration timeout = absl::Minutes(30);  // each wait: traffic, drain, mig-manager, smoke
  absl::Duration settle = absl::Minutes(2);    // for the allocatable to match after success
  std::string smoke_image;                     // empty: no smoke pod
  std::string smoke_namespace = "default";
  bool skip_traffic_check = false;
  bool dry_run = false;
};

struct StepRecord {
  topology::GateStep step = topology::GateStep::kPrecheck;
  bool ok = true;
  absl::Duration took;
  std::string message;
};

struct GateReport {
  std::string node;
  std::string previous_config;
  std::string target_config;
  bool dry_run = false;
  bool ok = false;
  bool nothing_to_do = false;  // the node already has the target config
  std::optional<topology::GateStep> failed_step;
  std::string error;
  bool interrupted = false;
  bool rolled_back = false;  // a rollback ran
  bool rollback_ok = false;
  bool cordoned_before = false;
  bool left_cordoned = false;
  std::string outcome;  // the node's condition at the end, one sentence
  std::vector<std::string> geometry_before;
  std::vector<std::string> geometry_after;
  std::vector<std::string> skipped_entries;  // device-filter entries for other GPUs
  topology::ExpectedOffer expected;
  std::vector<std::string> evictions;  // "ns/name" of the GPU pods drained (or, dry run, to drain)
  std::vector<StepRecord> steps;
};

class ReconfigureGate {
 public:
  ReconfigureGate(Api& api, const topology::Catalog& catalog, Clock& clock);

  void SetAuditLog(common::AuditLog* audit) { audit_ = audit; }
  // Called after each step, on the thread running Run().
  void OnStep(std::function<void(const StepRecord&)> on_step) { on_step_ = std::move(on_step); }

  // Runs the gate once. Not reentrant.
  GateReport Run(const GateOptions& options);

  // Stops Run() at its next wait (or the one in progress). Thread-safe; async-signal-unsafe, so
  // call it from a thread that received the signal with sigwait.
  void Cancel();

 private:
  struct Context;
  absl::Status RunStep(Context& ctx, topology::GateStep step,
                       const std::function<absl::StatusOr<std::string>()>& body);
  absl::StatusOr<std::string> Precheck(Context& ctx);
  absl::StatusOr<std::string> TrafficCheck(Context& ctx);
  absl::StatusOr<std::string> Drain(Context& ctx);
  absl::StatusOr<std::string> WaitForMigManager(Context& ctx, const std::string& config);
  absl::StatusOr<std::string> Validate(Context& ctx, const topology::ExpectedOffer& expected,
                                       const std::string& config);
  absl::StatusOr<std::string> Smoke(Context& ctx);
  void Rollback(Context& ctx);
  void Finish(Context& ctx);

  // Sleeps for `d`, or less when cancelled (Cancelled).
  absl::Status Sleep(absl::Duration d);
  // Watches the node until `done` holds: that state, DeadlineExceeded at `deadline`, or
  // Cancelled. `last_seen` holds the last state read either way.
  absl::StatusOr<NodeFacts> WaitForNode(const std::string& node, Clock::TimePoint deadline,
                                        const std::function<bool(const NodeFacts&)>& done,
                                        NodeFacts* last_seen);
  Clock::TimePoint Deadline(absl::Duration d) const;
  bool cancelled();

  Api& api_;
  const topology::Catalog& catalog_;
  Clock& clock_;
  common::AuditLog* audit_ = nullptr;
  std::function<void(const StepRecord&)> on_step_;
  common::Mutex mu_;
  common::CondVar cv_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Api::Stream stream_;
};

// "1.2s", "250ms", "3m4s": how step durations are printed.
std::string ShortDuration(absl::Duration d);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_RECONFIGURE_GATE_H_
