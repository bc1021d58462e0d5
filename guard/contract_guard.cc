#include "guard/contract_guard.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "kube/node_ops.h"
#include "rapidjson/stringbuffer.h"

namespace guard {
namespace {

constexpr size_t kEvictionsKept = 100;
constexpr absl::string_view kReason = "ContractViolation";

kube::PodEvent EventFor(const ContractViolation& v, topology::GuardAction action) {
  kube::PodEvent e;
  e.pod_namespace = v.namespace_name;
  e.pod_name = v.name;
  e.pod_uid = v.uid;
  if (v.kind == ObjectKind::kResourceClaim) {
    e.kind = "ResourceClaim";
    e.api_version = "resource.k8s.io/v1";
  } else if (v.kind == ObjectKind::kNode) {
    e.kind = "Node";  // cluster-scoped: its events live in namespace default
  }
  e.action = "";
  e.warning = true;
  e.reason = std::string(kReason);
  e.message = v.message;
  if (action == topology::GuardAction::kEvict && v.kind == ObjectKind::kPod) {
    absl::StrAppend(&e.message, " (policy guard.actions: evict)");
  }
  return e;
}

}  // namespace

ContractGuard::ContractGuard(kube::Api* api, kube::EventRecorder* events,
                             const kube::ClusterState& state, kube::Clock& clock,
                             std::function<bool()> acts, ContractGuardOptions options)
    : api_(api),
      events_(events),
      state_(state),
      clock_(clock),
      acts_(std::move(acts)),
      options_(std::move(options)) {}

ContractGuard::~ContractGuard() { Stop(); }

void ContractGuard::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    common::NameThisThread("guard");
    Run();
  });
}

void ContractGuard::Stop() {
  {
    common::MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void ContractGuard::Run() {
  while (true) {
    {
      common::MutexLock lock(&mu_);
      clock_.WaitFor(&mu_, &wake_, options_.interval,
                     [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; });
      if (stop_) return;
    }
    RunOnce(/*full=*/false);
  }
}

bool ContractGuard::Exempt(absl::string_view ns) const {
  return ns == "kube-system" || ns == "kube-public" || ns == "kube-node-lease" ||
         ns == options_.service_namespace;
}

void ContractGuard::RunOnce(bool full) {
  std::shared_ptr<const topology::ModelState> state = state_.Current();
  if (!state) return;  // not synced yet: nothing to judge
  std::vector<Tracked> current;
  std::vector<Tracked> started;
  {
    common::MutexLock lock(&mu_);
    const kube::Clock::TimePoint now = clock_.Now();
    if (last_full_ == kube::Clock::TimePoint{} || now - last_full_ >= options_.full_pass) {
      full = true;
    }
    if (full) last_full_ = now;
    ContractLedger::Changes changes =
        ledger_.Update(state->snapshot, state->policy, absl::ToUnixSeconds(absl::Now()), full);
    current_ = ledger_.Current();
    current = current_;
    started = std::move(changes.started);
    for (const ContractViolation& v : changes.ended) {
      common::Log(common::LogLevel::kInfo, "contract violation ended",
                  {{"object", v.ObjectKey()}, {"rule", v.rule}});
    }
  }
  if (!api_ || !events_ || !acts_ || !acts_()) return;
  const topology::Policy& policy = *state->policy;
  for (const Tracked& t : started) {
    const topology::GuardAction action = policy.guard.ActionFor(t.violation.rule);
    common::Log(common::LogLevel::kWarn, "contract violation",
                {{"object", t.violation.ObjectKey()},
                 {"tenant", t.violation.tenant},
                 {"rule", t.violation.rule},
                 {"message", t.violation.message}});
    events_->Record(EventFor(t.violation, action));
  }
  Act(current, *state->snapshot, policy);
}

void ContractGuard::Act(const std::vector<Tracked>& current,
                        const topology::ClusterSnapshot& snapshot, const topology::Policy& policy) {
  // The pods an evicting rule names, each once, newest first.
  std::vector<const ContractViolation*> pods;
  absl::flat_hash_set<std::string> seen;
  for (const Tracked& t : current) {
    const ContractViolation& v = t.violation;
    if (v.kind != ObjectKind::kPod || Exempt(v.namespace_name)) continue;
    if (policy.guard.ActionFor(v.rule) != topology::GuardAction::kEvict) continue;
    if (seen.insert(v.uid).second) pods.push_back(&v);
  }
  std::sort(pods.begin(), pods.end(), [](const ContractViolation* a, const ContractViolation* b) {
    return std::tie(a->created, a->namespace_name, a->name) >
           std::tie(b->created, b->namespace_name, b->name);
  });
  for (const ContractViolation* v : pods) {
    EvictionRecord record{*v, ""};
    {
      common::MutexLock lock(&mu_);
      // One record per pod and outcome: a dry run or a refused eviction is not listed again
      // every round.
      auto already = std::find_if(evictions_.begin(), evictions_.end(), [&](const auto& r) {
        return r.violation.uid == v->uid && (r.result == "evicted" || r.result == "dry-run");
      });
      if (already != evictions_.end()) continue;
      if (policy.guard.dry_run) {
        record.result = "dry-run";
        ++dry_run_;
        evictions_.push_back(record);
        if (evictions_.size() > kEvictionsKept) evictions_.pop_front();
        common::Log(common::LogLevel::kWarn, "contract guard would evict (dry run)",
                    {{"pod", v->ObjectKey()}, {"rule", v->rule}});
        continue;
      }
      const kube::Clock::TimePoint now = clock_.Now();
      while (!recent_evictions_.empty() &&
             now - recent_evictions_.front() >= std::chrono::minutes(1)) {
        recent_evictions_.pop_front();
      }
      if (static_cast<int64_t>(recent_evictions_.size()) >= policy.guard.evictions_per_minute) {
        return;  // the rest wait for a later round
      }
      recent_evictions_.push_back(now);
    }
    if (!snapshot.contract_pods().Find(v->uid)) continue;  // gone since the round began
    kube::PodFacts pod;
    pod.namespace_name = v->namespace_name;
    pod.name = v->name;
    pod.uid = v->uid;
    pod.node = v->node;
    absl::StatusOr<kube::Eviction> evicted = kube::EvictPod(*api_, pod);  // no lock held
    if (!evicted.ok()) {
      record.result = "error";
      ++failed_;
      common::Log(common::LogLevel::kError, "contract guard eviction failed",
                  {{"pod", v->ObjectKey()}, {"error", evicted.status().message()}});
    } else if (evicted->result == kube::EvictionResult::kBlocked) {
      record.result = "blocked";
      ++blocked_;
    } else if (evicted->result == kube::EvictionResult::kGone) {
      record.result = "gone";
      ++gone_;
    } else {
      record.result = "evicted";
      ++evicted_;
      common::Log(common::LogLevel::kWarn, "contract guard evicted a pod",
                  {{"pod", v->ObjectKey()}, {"rule", v->rule}});
    }
    common::MutexLock lock(&mu_);
    evictions_.push_back(std::move(record));
    if (evictions_.size() > kEvictionsKept) evictions_.pop_front();
  }
}

std::vector<Tracked> ContractGuard::Current() const {
  common::MutexLock lock(&mu_);
  return current_;
}

std::vector<EvictionRecord> ContractGuard::Evictions() const {
  common::MutexLock lock(&mu_);
  return {evictions_.begin(), evictions_.end()};
}

void ContractGuard::Collect(common::MetricsText& out) const {
  absl::flat_hash_map<std::pair<std::string, std::string>, int64_t> counts;
  for (const Tracked& t : Current()) ++counts[{t.violation.tenant, t.violation.rule}];
  std::vector<std::pair<std::pair<std::string, std::string>, int64_t>> sorted(counts.begin(),
                                                                              counts.end());
  std::sort(sorted.begin(), sorted.end());
  out.Family("gpu_tenancy_contract_violations", common::MetricsText::kGauge,
             "Placed pods and allocated claims that break the tenancy contract now, by tenant "
             "and rule.");
  for (const auto& [key, n] : sorted) {
    out.Sample("gpu_tenancy_contract_violations", {{"tenant", key.first}, {"rule", key.second}}, n);
  }
  out.Family("gpu_tenancy_contract_evictions_total", common::MetricsText::kCounter,
             "Evictions of pods breaking the contract, by result (dry-run: listed, not made).");
  for (const auto& [result, n] :
       std::initializer_list<std::pair<const char*, uint64_t>>{{"evicted", evicted_.load()},
                                                               {"blocked", blocked_.load()},
                                                               {"gone", gone_.load()},
                                                               {"dry-run", dry_run_.load()},
                                                               {"error", failed_.load()}}) {
    out.Sample("gpu_tenancy_contract_evictions_total", {{"result", result}}, n);
  }
}

std::string ContractReportJson(const std::vector<Tracked>& violations,
                               const std::vector<EvictionRecord>& evictions) {
  rapidjson::StringBuffer buffer;
  common::JsonWriter w(buffer);
  auto field = [&](absl::string_view key, absl::string_view value) {
    common::WriteKey(w, key);
    common::WriteString(w, value);
  };
  w.StartObject();
  common::WriteKey(w, "violations");
  w.StartArray();
  for (const Tracked& t : violations) {
    const ContractViolation& v = t.violation;
    w.StartObject();
    field("kind", KindName(v.kind));
    field("namespace", v.namespace_name);
    field("name", v.name);
    field("uid", v.uid);
    field("node", v.node);
    field("tenant", v.tenant);
    field("rule", v.rule);
    field("message", v.message);
    field("since", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t.since_unix),
                                    absl::UTCTimeZone()));
    w.EndObject();
  }
  w.EndArray();
  common::WriteKey(w, "evictions");
  w.StartArray();
  for (const EvictionRecord& e : evictions) {
    w.StartObject();
    field("kind", KindName(e.violation.kind));
    field("namespace", e.violation.namespace_name);
    field("name", e.violation.name);
    field("rule", e.violation.rule);
    field("result", e.result);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace guard
