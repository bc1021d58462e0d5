#include "kube/reconfigure_gate.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "common/log.h"
#include "kube/smoke_pod.h"
#include "topology/wellknown.h"

namespace kube {
namespace {

using topology::GateStep;

common::ReconfigureAudit::Outcome ReconfigureOutcome(bool dry_run, bool ok) {
  if (dry_run) return common::ReconfigureAudit::Outcome::kPlanned;
  return ok ? common::ReconfigureAudit::Outcome::kOk : common::ReconfigureAudit::Outcome::kFailed;
}

bool Terminated(const PodFacts& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

std::vector<PodFacts> GpuPods(const std::vector<PodFacts>& pods) {
  std::vector<PodFacts> out;
  for (const PodFacts& p : pods) {
    if (!p.gpu_resources.empty() && !Terminated(p)) out.push_back(p);
  }
  return out;
}

std::vector<std::string> DescribeOffer(const topology::ExpectedOffer& offer) {
  std::vector<std::string> out;
  for (const auto& [name, count] : offer.allocatable) {
    if (count != 0) out.push_back(absl::StrCat(name, ": ", count));
  }
  if (offer.product) out.push_back(absl::StrCat(topology::kProductLabel, "=", *offer.product));
  if (out.empty()) out.push_back("no GPU resources");
  return out;
}

std::string StateOf(const NodeFacts& n) {
  std::optional<std::string> s = n.Label(topology::kMigConfigStateLabel);
  return s ? *s : "(absent)";
}

}  // namespace

std::string ShortDuration(absl::Duration d) {
  if (d < absl::Seconds(1)) return absl::StrCat(absl::ToInt64Milliseconds(d), "ms");
  if (d < absl::Minutes(1)) {
    return absl::StrFormat("%.1fs", absl::ToDoubleSeconds(d));
  }
  return absl::FormatDuration(absl::Trunc(d, absl::Seconds(1)));
}

struct ReconfigureGate::Context {
  Context(const GateOptions& o, GateReport& r) : options(o), report(r) {}
  const GateOptions& options;
  GateReport& report;
  NodeFacts before;
  topology::MigStrategy strategy = topology::MigStrategy::kMixed;
  topology::NodeGeometry geometry;
  std::vector<PodFacts> gpu_pods;  // at precheck
  bool applied = false;            // nvidia.com/mig.config has been changed
};

ReconfigureGate::ReconfigureGate(Api& api, const topology::Catalog& catalog, Clock& clock)
    : api_(api), catalog_(catalog), clock_(clock) {}

void ReconfigureGate::Cancel() {
  {
    common::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  cv_.NotifyAll();
  stream_.Interrupt();
}

bool ReconfigureGate::cancelled() {
  common::MutexLock lock(&mu_);
  return cancelled_;
}

Clock::TimePoint ReconfigureGate::Deadline(absl::Duration d) const {
  return clock_.Now() + std::chrono::duration_cast<Clock::Duration>(absl::ToChronoNanoseconds(d));
}

absl::Status ReconfigureGate::Sleep(absl::Duration d) {
  common::MutexLock lock(&mu_);
  clock_.WaitUntil(&mu_, &cv_, Deadline(d),
                   [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancelled_; });
  return cancelled_ ? absl::CancelledError("interrupted") : absl::OkStatus();
}

absl::StatusOr<NodeFacts> ReconfigureGate::WaitForNode(
    const std::string& node, Clock::TimePoint deadline,
    const std::function<bool(const NodeFacts&)>& done, NodeFacts* last_seen) {
  NodeFacts& last = *last_seen;
  while (true) {
    if (cancelled()) return absl::CancelledError("interrupted");
    absl::StatusOr<NodeFacts> read = GetNode(api_, node);
    if (absl::IsUnavailable(read.status()) && clock_.Now() < deadline) {
      // A waiting gate outlives an API server hiccup: only the deadline ends the wait.
      common::Log(common::LogLevel::kWarn, "reading the node failed, retrying",
                  {{"error", read.status().ToString()}});
      RETURN_IF_ERROR(Sleep(absl::Seconds(1)));
      continue;
    }
    RETURN_IF_ERROR(read.status());
    last = *std::move(read);
    if (done(last)) return last;
    if (clock_.Now() >= deadline) return absl::DeadlineExceededError("timed out");
    // The watch has no deadline of its own short enough: a watchdog interrupts it.
    bool finished = false;
    std::thread watchdog([&] {
      bool interrupt;
      {
        common::MutexLock lock(&mu_);
        clock_.WaitUntil(&mu_, &cv_, deadline, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return finished || cancelled_;
        });
        interrupt = !finished;
      }
      if (interrupt) stream_.Interrupt();
    });
    bool matched = false;
    absl::Status watched = WatchNode(
        api_, node, last.resource_version,
        [&](const NodeFacts& n) {
          last = n;
          matched = done(n);
          return matched;
        },
        &stream_);
    {
      common::MutexLock lock(&mu_);
      finished = true;
    }
    cv_.NotifyAll();
    watchdog.join();
    if (matched) return last;
    if (absl::IsNotFound(watched) || absl::IsPermissionDenied(watched)) return watched;
    if (!watched.ok() && !absl::IsAborted(watched)) {
      // The API server went away for a moment: read again after a pause, within the deadline.
      RETURN_IF_ERROR(Sleep(absl::Milliseconds(200)));
    }
  }
}

absl::Status ReconfigureGate::RunStep(Context& ctx, GateStep step,
                                      const std::function<absl::StatusOr<std::string>()>& body) {
  Clock::TimePoint start = clock_.Now();
  absl::StatusOr<std::string> result = body();
  StepRecord rec;
  rec.step = step;
  rec.took = absl::FromChrono(clock_.Now() - start);
  rec.ok = result.ok();
  rec.message = result.ok() ? *result : std::string(result.status().message());
  if (absl::IsCancelled(result.status())) rec.message = "interrupted (Ctrl-C) while waiting";
  ctx.report.steps.push_back(rec);
  if (on_step_) on_step_(rec);
  common::Log(rec.ok ? common::LogLevel::kInfo : common::LogLevel::kWarn, "reconfigure step",
              {{"node", ctx.options.node},
               {"step", std::string(topology::StepName(step))},
               {"ok", rec.ok ? "true" : "false"},
               {"duration", ShortDuration(rec.took)},
               {"message", rec.message}});
  std::string config = ctx.options.target;
  if (step >= GateStep::kRollbackApply) config = ctx.report.previous_config;
  if (!ctx.options.dry_run && !ctx.before.name.empty()) {
    std::string text =
        absl::StrCat(topology::StepName(step), " (", config, ") ", rec.ok ? "done" : "failed",
                     " in ", ShortDuration(rec.took), ": ", rec.message);
    absl::Status posted = PostNodeEvent(
        api_, ctx.before, !rec.ok, rec.ok ? "MigReconfigureStep" : "MigReconfigureFailed", text);
    if (!posted.ok()) {
      common::Log(common::LogLevel::kWarn, "event not posted", {{"error", posted.ToString()}});
    }
  }
  if (audit_) {
    common::ReconfigureAudit a;
    a.outcome = ReconfigureOutcome(ctx.options.dry_run, rec.ok);
    a.node = ctx.options.node;
    a.step = std::string(topology::StepName(step));
    a.mig_config = config;
    a.duration_ms = absl::ToInt64Milliseconds(rec.took);
    a.reason = rec.message;
    audit_->Write(a);
  }
  if (!result.ok()) {
    if (!ctx.report.failed_step) {
      ctx.report.failed_step = step;
      ctx.report.error = rec.message;
    }
    if (absl::IsCancelled(result.status())) ctx.report.interrupted = true;
    return result.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReconfigureGate::Precheck(Context& ctx) {
  const GateOptions& o = ctx.options;
  GateReport& r = ctx.report;
  absl::StatusOr<NodeFacts> node = GetNode(api_, o.node);
  if (absl::IsNotFound(node.status())) {
    return absl::NotFoundError(absl::StrCat("node ", o.node, " not found"));
  }
  RETURN_IF_ERROR(node.status());
  ctx.before = *node;
  r.cordoned_before = node->unschedulable;
  std::optional<std::string> strategy = node->Label(topology::kMigStrategyLabel);
  if (!strategy || (*strategy != "mixed" && *strategy != "single")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", o.node, " is not a MIG node: ", topology::kMigStrategyLabel, " is ",
        strategy ? absl::StrCat("\"", *strategy, "\"") : "absent", " (want mixed or single)"));
  }
  ctx.strategy =
      *strategy == "single" ? topology::MigStrategy::kSingle : topology::MigStrategy::kMixed;
  std::optional<std::string> product = node->Label(topology::kProductLabel);
  const topology::GpuModel* model = product ? catalog_.MatchProduct(*product) : nullptr;
  if (model == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("node ", o.node, ": GPU model ",
                                                      product ? *product : "(no product label)",
                                                      " is not in the MIG catalog"));
  }
  std::optional<std::string> count_label = node->Label(topology::kGpuCountLabel);
  int gpu_count = 0;
  if (!count_label || !absl::SimpleAtoi(*count_label, &gpu_count) || gpu_count <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", o.node, ": ", topology::kGpuCountLabel, " is missing or not a GPU count"));
  }
  const topology::MigPartedLayout* layout = o.configs.Find(o.target);
  if (layout == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--to ", o.target,
                                                   ": no such config in the mig-parted config (",
                                                   absl::StrJoin(o.configs.Names(), ", "), ")"));
  }
  ASSIGN_OR_RETURN(ctx.geometry, topology::ResolveGeometry(*layout, *model, gpu_count));
  std::string parent = topology::SplitProduct(*product).parent;
  ASSIGN_OR_RETURN(r.expected, topology::PredictOffer(ctx.geometry, ctx.strategy, parent));
  r.geometry_after = topology::DescribeGeometry(ctx.geometry);
  r.skipped_entries = ctx.geometry.skipped;

  std::optional<std::string> previous = node->Label(topology::kMigConfigLabel);
  if (!previous || previous->empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", o.node, " has no ", topology::kMigConfigLabel,
        " label, so there is no known config to roll back to; label it with its current config "
        "first"));
  }
  r.previous_config = *previous;
  std::string state = StateOf(*node);
  if (state != "success") {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", o.node, " is mid-reconfiguration: ", topology::kMigConfigStateLabel,
                     " is ", state, " (wait for success first)"));
  }
  const topology::MigPartedLayout* old_layout = o.configs.Find(*previous);
  absl::StatusOr<topology::NodeGeometry> old_geometry =
      old_layout ? topology::ResolveGeometry(*old_layout, *model, gpu_count)
                 : absl::StatusOr<topology::NodeGeometry>(absl::NotFoundError(""));
  r.geometry_before = old_geometry.ok()
                          ? topology::DescribeGeometry(*old_geometry)
                          : DescribeOffer(topology::OfferOf(node->offer, ctx.strategy));
  if (*previous == o.target) {
    r.nothing_to_do = true;
    return absl::StrCat(o.node, " already has ", topology::kMigConfigLabel, "=", o.target);
  }
  ASSIGN_OR_RETURN(std::vector<PodFacts> pods, ListPodsOnNode(api_, o.node));
  ctx.gpu_pods = GpuPods(pods);
  for (const PodFacts& p : ctx.gpu_pods) r.evictions.push_back(p.Key());
  return absl::StrCat(model->model, " x", gpu_count, ", ", *strategy, " strategy; ", *previous,
                      " -> ", o.target, "; ", ctx.gpu_pods.size(), " GPU pod(s) to drain");
}

absl::StatusOr<std::string> ReconfigureGate::TrafficCheck(Context& ctx) {
  const GateOptions& o = ctx.options;
  if (o.skip_traffic_check) return std::string("skipped (--skip-traffic-check)");
  Clock::TimePoint deadline = Deadline(o.timeout);
  while (true) {
    ASSIGN_OR_RETURN(std::vector<PodFacts> on_node, ListPodsOnNode(api_, o.node));
    // Owners of GPU pods here, with how many of their pods are here.
    std::map<std::string, std::pair<topology::ReplicaOwner, PodOwner>> owners;
    for (const PodFacts& p : GpuPods(on_node)) {
      if (!p.owner || (p.owner->kind != "ReplicaSet" && p.owner->kind != "StatefulSet")) continue;
      auto& [owner, ref] = owners[p.owner->uid];
      owner.kind = p.owner->kind;
      owner.namespace_name = p.namespace_name;
      owner.name = p.owner->name;
      ref = *p.owner;
      ++owner.on_node;
    }
    std::vector<std::string> blockers;
    std::map<std::string, std::vector<PodFacts>> by_namespace;
    for (auto& [uid, entry] : owners) {
      auto& [owner, ref] = entry;
      absl::StatusOr<int> desired = OwnerReplicas(api_, owner.namespace_name, ref);
      if (absl::IsNotFound(desired.status())) continue;  // an orphan: nothing to wait for
      RETURN_IF_ERROR(desired.status());
      owner.desired = *desired;
      if (!by_namespace.count(owner.namespace_name)) {
        ASSIGN_OR_RETURN(by_namespace[owner.namespace_name],
                         ListPodsInNamespace(api_, owner.namespace_name));
      }
      for (const PodFacts& p : by_namespace[owner.namespace_name]) {
        if (p.owner && p.owner->uid == uid && p.node != o.node && p.ready && !p.terminating) {
          ++owner.ready_elsewhere;
        }
      }
      if (std::optional<std::string> why = topology::TrafficBlocker(owner)) {
        blockers.push_back(*why);
      }
    }
    if (blockers.empty()) {
      return absl::StrCat(owners.size(), " owner(s) have their replicas ready elsewhere");
    }
    if (clock_.Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("traffic has not moved: ", absl::StrJoin(blockers, "; ")));
    }
    common::Log(common::LogLevel::kInfo, "waiting for traffic to move",
                {{"blocking", absl::StrJoin(blockers, "; ")}});
    RETURN_IF_ERROR(Sleep(absl::Seconds(1)));
  }
}

absl::StatusOr<std::string> ReconfigureGate::Drain(Context& ctx) {
  const GateOptions& o = ctx.options;
  Clock::TimePoint deadline = Deadline(o.timeout);
  absl::Duration backoff = absl::Milliseconds(250);
  std::vector<std::string> evicted;
  int refusals = 0;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<PodFacts> pods, ListPodsOnNode(api_, o.node));
    std::vector<PodFacts> left = GpuPods(pods);
    if (left.empty()) {
      return absl::StrCat("evicted ", evicted.size(), " GPU pod(s)",
                          evicted.empty() ? "" : absl::StrCat(": ", absl::StrJoin(evicted, ", ")),
                          refusals ? absl::StrCat(" (", refusals, " refusal(s) retried)") : "");
    }
    std::vector<std::string> blocked;
    for (const PodFacts& p : left) {
      if (p.terminating) continue;  // evicted, still shutting down
      ASSIGN_OR_RETURN(Eviction e, EvictPod(api_, p));
      if (e.result == EvictionResult::kBlocked) {
        ++refusals;
        blocked.push_back(absl::StrCat(p.Key(), " (", e.message, ")"));
      } else if (std::find(evicted.begin(), evicted.end(), p.Key()) == evicted.end()) {
        evicted.push_back(p.Key());
        ctx.report.evictions.erase(
            std::remove(ctx.report.evictions.begin(), ctx.report.evictions.end(), p.Key()),
            ctx.report.evictions.end());
        ctx.report.evictions.push_back(p.Key());
      }
    }
    if (clock_.Now() >= deadline) {
      std::vector<std::string> names;
      for (const PodFacts& p : left) names.push_back(p.Key());
      return absl::DeadlineExceededError(absl::StrCat(
          "GPU pods still on the node: ", absl::StrJoin(names, ", "),
          blocked.empty() ? "" : absl::StrCat("; refused: ", absl::StrJoin(blocked, "; "))));
    }
    if (!blocked.empty()) {
      common::Log(common::LogLevel::kInfo, "eviction refused, retrying",
                  {{"pods", absl::StrJoin(blocked, "; ")}, {"backoff", ShortDuration(backoff)}});
    }
    RETURN_IF_ERROR(Sleep(backoff));
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

absl::StatusOr<std::string> ReconfigureGate::WaitForMigManager(Context& ctx,
                                                               const std::string& config) {
  NodeFacts last;
  absl::StatusOr<NodeFacts> n = WaitForNode(
      ctx.options.node, Deadline(ctx.options.timeout),
      [](const NodeFacts& n) {
        std::optional<std::string> s = n.Label(topology::kMigConfigStateLabel);
        return topology::JudgeMigState(s.value_or(""), s.has_value()) !=
               topology::MigStateVerdict::kKeepWaiting;
      },
      &last);
  if (absl::IsDeadlineExceeded(n.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("timed out after ", ShortDuration(ctx.options.timeout), " waiting for ",
                     topology::kMigConfigStateLabel, "=success for ", config,
                     " (last seen: ", StateOf(last), ")"));
  }
  RETURN_IF_ERROR(n.status());
  std::string state = StateOf(*n);
  if (state != "success") {
    return absl::AbortedError(absl::StrCat("mig-manager reported ", topology::kMigConfigStateLabel,
                                           "=", state, " for ", config));
  }
  return absl::StrCat(topology::kMigConfigStateLabel, "=success");
}

absl::StatusOr<std::string> ReconfigureGate::Validate(Context& ctx,
                                                      const topology::ExpectedOffer& expected,
                                                      const std::string& config) {
  // The device plugin and GFD restart after mig-manager reports success, so the allocatable can
  // lag behind the state label: give it the settle time to match.
  NodeFacts last;
  absl::StatusOr<NodeFacts> n = WaitForNode(
      ctx.options.node, Deadline(ctx.options.settle),
      [&](const NodeFacts& n) {
        return StateOf(n) == "success" && topology::CompareOffer(expected, n.offer).empty();
      },
      &last);
  if (absl::IsDeadlineExceeded(n.status())) {
    std::vector<std::string> diffs = topology::CompareOffer(expected, last.offer);
    if (StateOf(last) != "success") {
      diffs.push_back(
          absl::StrCat(topology::kMigConfigStateLabel, " is ", StateOf(last), ", not success"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("node does not offer what ", config, " predicts after ",
                     ShortDuration(ctx.options.settle), ": ", absl::StrJoin(diffs, "; ")));
  }
  RETURN_IF_ERROR(n.status());
  return absl::StrCat("allocatable matches ", config, ": ",
                      absl::StrJoin(DescribeOffer(expected), ", "));
}

absl::StatusOr<std::string> ReconfigureGate::Smoke(Context& ctx) {
  const GateOptions& o = ctx.options;
  if (o.smoke_image.empty()) return std::string("skipped (no --smoke-image)");
  const topology::MigProfile* smallest = topology::SmallestProfile(ctx.geometry);
  std::string resource =
      smallest != nullptr && ctx.strategy == topology::MigStrategy::kMixed
          ? absl::StrCat(topology::kMigResourcePrefix, smallest->ResourceSuffix())
          : std::string(topology::kGpuResource);
  return RunSmokePod(api_, clock_, {o.smoke_namespace, o.node, o.smoke_image, resource, o.timeout},
                     [this](absl::Duration d) { return Sleep(d); });
}

void ReconfigureGate::Rollback(Context& ctx) {
  GateReport& r = ctx.report;
  r.rolled_back = true;
  const std::string& previous = r.previous_config;
  absl::Status s = RunStep(ctx, GateStep::kRollbackApply, [&]() -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(SetNodeLabels(api_, ctx.options.node,
                                  {{std::string(topology::kMigConfigLabel), previous},
                                   {std::string(topology::kMigConfigStateLabel), std::nullopt}}));
    return absl::StrCat(topology::kMigConfigLabel, "=", previous);
  });
  if (s.ok()) {
    s = RunStep(ctx, GateStep::kRollbackWait, [&] { return WaitForMigManager(ctx, previous); });
  }
  if (s.ok()) {
    // The whole node's previous geometry: what it offered before the change.
    topology::ExpectedOffer before = topology::OfferOf(ctx.before.offer, ctx.strategy);
    s = RunStep(ctx, GateStep::kRollbackValidate, [&] { return Validate(ctx, before, previous); });
  }
  if (!s.ok()) return;
  r.rollback_ok = true;
  if (r.cordoned_before) return;
  (void)RunStep(ctx, GateStep::kRollbackUncordon, [&]() -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(SetUnschedulable(api_, ctx.options.node, false));
    return std::string("node schedulable again");
  });
}

void ReconfigureGate::Finish(Context& ctx) {
  GateReport& r = ctx.report;
  const GateOptions& o = ctx.options;
  absl::StatusOr<NodeFacts> now = GetNode(api_, o.node);
  r.left_cordoned = now.ok() ? now->unschedulable : !ctx.before.name.empty();
  std::string config = now.ok() ? now->Label(topology::kMigConfigLabel).value_or("(none)")
                                : std::string("(unknown)");
  std::string state = now.ok() ? StateOf(*now) : std::string("(unknown)");
  std::string where = absl::StrCat(topology::kMigConfigLabel, "=", config, " (state ", state, "), ",
                                   r.left_cordoned ? "cordoned" : "schedulable");
  std::string why_cordoned =
      r.cordoned_before && r.left_cordoned ? " (it was cordoned before the change)" : "";
  if (r.dry_run) {
    r.outcome = "dry run: nothing was changed";
  } else if (r.ok) {
    r.outcome = r.nothing_to_do ? absl::StrCat("nothing to do: ", where)
                                : absl::StrCat("reconfigured: ", where, why_cordoned);
  } else if (r.interrupted) {
    r.outcome = absl::StrCat(
        "interrupted during ", topology::StepName(*r.failed_step), ": ", where,
        ctx.applied
            ? absl::StrCat("; to go back, run reconfigure ", o.node, " --to ", r.previous_config)
            : "; nothing was applied, uncordon the node when you are ready");
  } else if (!ctx.applied) {
    r.outcome = absl::StrCat(
        "failed before anything was applied: ", where,
        r.left_cordoned && !r.cordoned_before ? "; uncordon it once the cause is fixed" : "");
  } else if (r.rollback_ok) {
    r.outcome = absl::StrCat("rolled back to ", r.previous_config, ": ", where, why_cordoned);
  } else {
    r.outcome = absl::StrCat("rollback to ", r.previous_config,
                             " did not validate; the node is left cordoned for a person to look "
                             "at: ",
                             where);
  }
  if (audit_) {
    common::ReconfigureAudit a;
    a.outcome = ReconfigureOutcome(r.dry_run, r.ok);
    a.node = o.node;
    a.step = "result";
    a.mig_config = o.target;
    a.reason = r.outcome;
    audit_->Write(a);
  }
}

GateReport ReconfigureGate::Run(const GateOptions& options) {
  GateReport report;
  report.node = options.node;
  report.target_config = options.target;
  report.dry_run = options.dry_run;
  Context ctx(options, report);
  auto finish = [&](bool ok) {
    report.ok = ok;
    Finish(ctx);
    return report;
  };
  if (!RunStep(ctx, GateStep::kPrecheck, [&] { return Precheck(ctx); }).ok()) return finish(false);
  if (options.dry_run || report.nothing_to_do) return finish(true);

  bool ok = RunStep(ctx, GateStep::kCordon,
                    [&]() -> absl::StatusOr<std::string> {
                      if (report.cordoned_before)
                        return std::string("already cordoned; left cordoned");
                      RETURN_IF_ERROR(SetUnschedulable(api_, options.node, true));
                      return std::string("spec.unschedulable=true");
                    })
                .ok() &&
            RunStep(ctx, GateStep::kTrafficCheck, [&] { return TrafficCheck(ctx); }).ok() &&
            RunStep(ctx, GateStep::kDrain, [&] { return Drain(ctx); }).ok();
  if (!ok) return finish(false);

  ok = RunStep(ctx, GateStep::kApply, [&]() -> absl::StatusOr<std::string> {
         // The state label goes with the old config: whatever state appears next is
         // mig-manager's answer to this change, never the success of the previous one.
         RETURN_IF_ERROR(
             SetNodeLabels(api_, options.node,
                           {{std::string(topology::kMigConfigLabel), options.target},
                            {std::string(topology::kMigConfigStateLabel), std::nullopt}}));
         ctx.applied = true;
         return absl::StrCat(topology::kMigConfigLabel, "=", options.target);
       }).ok();
  if (!ok) return finish(false);
  ok = RunStep(ctx, GateStep::kWaitForMigManager,
               [&] { return WaitForMigManager(ctx, options.target); })
           .ok() &&
       RunStep(ctx, GateStep::kValidate,
               [&] { return Validate(ctx, report.expected, options.target); })
           .ok() &&
       RunStep(ctx, GateStep::kSmoke, [&] { return Smoke(ctx); }).ok();
  if (!ok) {
    if (!report.interrupted) Rollback(ctx);
    return finish(false);
  }
  ok = RunStep(ctx, GateStep::kUncordon, [&]() -> absl::StatusOr<std::string> {
         if (report.cordoned_before) {
           return std::string("left cordoned: it was cordoned before the change");
         }
         RETURN_IF_ERROR(SetUnschedulable(api_, options.node, false));
         return std::string("node schedulable again");
       }).ok();
  return finish(ok);
}

}  // namespace kube
