// chaos's load, running throughout the faults: the bind storm (pods created in the emulation,
// filtered, prioritized and bound through whichever replica leads, as kube-scheduler reaches
// the leader through the Service, then deleted), claim admissions on both replicas (a claim
// the webhook allows is created, as kube-apiserver would, and deleted a while later), and pod
// admissions whose verdict the policy fixes. A failed call is unavailability, counted and never
// a breach; a wrong answer is a breach: a bind reported done that the apiserver does not show,
// a pod admitted that the policy denies (or the reverse).
#ifndef GPU_TENANCY_BENCH_CHAOS_LOAD_H_
#define GPU_TENANCY_BENCH_CHAOS_LOAD_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bench/chaos_flags.h"
#include "bench/chaos_replicas.h"
#include "test/support/fake_apiserver.h"

namespace chaos {

using Clock = std::chrono::steady_clock;

// Invariant breaches: every one is printed as it happens; the run fails on any.
class Breaches {
 public:
  void Add(const std::string& what);
  uint64_t count() const { return count_.load(); }
  std::vector<std::string> First() const;  // the first few, for the report

 private:
  std::atomic<uint64_t> count_{0};
  mutable std::mutex mu_;
  std::vector<std::string> first_;
};

struct Counters {
  std::atomic<uint64_t> pods_created{0}, pods_deleted{0};
  std::atomic<uint64_t> bound{0}, refused{0}, unschedulable{0};
  // A bind that failed or timed out; a pod found bound before its retry all the same.
  std::atomic<uint64_t> bind_unavailable{0}, bind_landed_anyway{0};
  std::atomic<uint64_t> no_leader{0};  // a bind cycle that found no replica leading
  std::atomic<uint64_t> claims_admitted{0}, claims_denied{0}, claims_unavailable{0};
  std::atomic<uint64_t> claims_deleted{0};
  std::atomic<uint64_t> reviews_answered{0}, reviews_unavailable{0};
};

struct Shared {
  Options opt;
  testing_support::FakeApiServer* api = nullptr;
  Replicas* replicas = nullptr;
  std::vector<std::string> node_names;
  Clock::time_point start, end;  // end: faults are injected until then (see RunFaults)
  Breaches breaches;
  Counters counters;
  // While a fault is being injected, and when the last one ended: a replica out of step counts
  // against the recovery bound from then.
  std::atomic<bool> in_fault{false};
  std::atomic<Clock::duration::rep> last_fault_end{0};  // since Clock's epoch
  // The load runs until the faults are done: --seconds, and every kind injected once.
  std::atomic<bool> load_stopped{false};
  bool Running() const { return !load_stopped.load(); }
  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

void BindLoop(Shared& s, int id);   // `id` keeps pod names apart
void ClaimLoop(Shared& s, int id);  // admits through replica `id`
void ReviewLoop(Shared& s);         // pod reviews on both replicas in turn

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_LOAD_H_
