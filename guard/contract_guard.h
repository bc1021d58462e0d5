// The contract guard in serve: follows the live state (kube::ClusterState) with a ContractLedger
// (guard/ledger.h) and acts on what it finds. Every replica keeps the ledger, so its metric and
// pages are right wherever they are read; only the leader (`acts()`) posts Events and evicts.
//   - Each new violation: a Warning Event on the object (reason ContractViolation, the rule's
//     message, which names the fix), once; `kubectl describe` shows it.
//   - gpu_tenancy_contract_violations{tenant,rule}: violations now (a series per tenant and rule
//     with any); gpu_tenancy_contract_evictions_total{result}.
//   - For a rule whose policy action is evict (policy guard.actions): the violating pods are
//     evicted through the Eviction API (PodDisruptionBudgets are honoured: a refused eviction is
//     tried again later), newest first, at most guard.evictionsPerMinute, never in kube-system,
//     kube-public, kube-node-lease or the service's own namespace. guard.dryRun lists them
//     (log line, Would()) and evicts nothing. Claims are reported, never deleted.
// Rounds: every `interval` what changed since the last round; every `full_pass` everything,
// and everything after a policy change.
//
//   ContractGuard guard(&api, &events, state, Clock::Real(), [&] { return elector.is_leader(); },
//                       {});
//   guard.Start();  ...  guard.Collect(metrics);  ...  guard.Stop();
//
// Thread-safe: the round runs on the guard's thread (or RunOnce's caller); readers copy under
// mu_.
#ifndef GPU_TENANCY_GUARD_CONTRACT_GUARD_H_
#define GPU_TENANCY_GUARD_CONTRACT_GUARD_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "common/prometheus_text.h"
#include "guard/ledger.h"
#include "kube/api.h"
#include "kube/clock.h"
#include "kube/cluster_state.h"
#include "kube/event_recorder.h"

namespace guard {

struct ContractGuardOptions {
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds full_pass{std::chrono::minutes(5)};
  std::string service_namespace = "gpu-tenancy-system";  // never evicted from
};

// One eviction the guard made or, in a dry run, would make.
struct EvictionRecord {
  ContractViolation violation;
  std::string result;  // "evicted", "gone", "blocked", "dry-run", "error"
};

class ContractGuard {
 public:
  // `api` and `events` may be null (a fixed cluster file): the guard then only judges.
  ContractGuard(kube::Api* api, kube::EventRecorder* events, const kube::ClusterState& state,
                kube::Clock& clock, std::function<bool()> acts, ContractGuardOptions options);
  ~ContractGuard();  // Stop()

  void Start();
  void Stop();
  // One round now, on the caller's thread (tests, and the thread's own loop).
  void RunOnce(bool full);

  std::vector<Tracked> Current() const;
  // The last evictions and dry-run listings, newest last (at most 100).
  std::vector<EvictionRecord> Evictions() const;
  void Collect(common::MetricsText& out) const;

 private:
  void Run();
  void Act(const std::vector<Tracked>& current, const topology::ClusterSnapshot& snapshot,
           const topology::Policy& policy);
  bool Exempt(absl::string_view namespace_name) const;

  kube::Api* const api_;
  kube::EventRecorder* const events_;
  const kube::ClusterState& state_;
  kube::Clock& clock_;
  std::function<bool()> acts_;
  const ContractGuardOptions options_;

  // Held by the round (one at a time); readers take it to copy.
  mutable common::Mutex mu_;
  common::CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  ContractLedger ledger_ ABSL_GUARDED_BY(mu_);
  std::vector<Tracked> current_ ABSL_GUARDED_BY(mu_);
  std::deque<EvictionRecord> evictions_ ABSL_GUARDED_BY(mu_);
  std::deque<kube::Clock::TimePoint> recent_evictions_ ABSL_GUARDED_BY(mu_);  // the rate limit
  kube::Clock::TimePoint last_full_ ABSL_GUARDED_BY(mu_){};
  std::atomic<uint64_t> evicted_{0}, blocked_{0}, gone_{0}, dry_run_{0}, failed_{0};
  std::thread thread_;
};

// GET /debug/contract: {"violations": [{"kind", "namespace", "name", "uid", "node", "tenant",
// "rule", "message", "since"}], "evictions": [{"kind", "namespace", "name", "rule", "result"}]},
// violations by object and rule, `since` in RFC 3339.
std::string ContractReportJson(const std::vector<Tracked>& violations,
                               const std::vector<EvictionRecord>& evictions);

}  // namespace guard

#endif  // GPU_TENANCY_GUARD_CONTRACT_GUARD_H_
