// chaos's continuous checks, a round every 250 ms while the run lasts:
//   - on the truth (the emulator's objects): no device or MIG slice handed out twice, no tenant
//     past a pod quota, no claim quota overshot counting the usage record's reservations
//     (bench/chaos_cluster.h);
//   - each running replica's view (its /debug/allocations: which GPU pods it counts on which
//     node) against the truth. A pod whose truth changed less than kSettle ago may still be in
//     flight on a watch and is not compared; any other difference makes the replica behind;
//   - who leads: which replica answers /readyz/extender, and never two in one quick round.
// A fault has recovered once a round that began after it ended found every running replica
// ready and in step, and one of them leading (WaitRecovered). A replica out of step for longer
// than the recovery bound, fault or not, is a breach; so is any breach of the truth.
// The replicas' memory is sampled every second, per incarnation.
#ifndef GPU_TENANCY_BENCH_CHAOS_INVARIANTS_H_
#define GPU_TENANCY_BENCH_CHAOS_INVARIANTS_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench/chaos_cluster.h"
#include "bench/chaos_load.h"
#include "bench/soak_rss.h"
#include "topology/policy.h"

namespace chaos {

inline constexpr std::chrono::milliseconds kSettle{2000};

class Invariants {
 public:
  Invariants(Shared& s, topology::Policy policy);

  // Runs rounds until Stop().
  void Run();
  void Stop();

  // Waits until a round that began at or after `since` found everything in step, up to
  // `deadline`. The time that round began, or nullopt at the deadline.
  std::optional<Clock::time_point> WaitRecovered(Clock::time_point since,
                                                 Clock::time_point deadline);

  struct Tally {
    uint64_t rounds = 0;
    uint64_t rounds_in_step = 0;  // every running replica in step, one leading
    uint64_t leader_changes = 0;
    // A replica out of step, the longest stretch after a fault ended (or without one).
    double longest_behind_seconds = 0;
  };
  Tally tally() const;
  // Per incarnation ("chaos-0-1"), the RSS samples (seconds since the run began, KiB).
  std::map<std::string, soak::RssSamples> Rss() const;

 private:
  void Round();
  void CheckTruth(const Truth& truth);
  // Updates when each pod's truth last changed.
  void Settle(const Truth& truth, Clock::time_point now);
  // "" when replica `e`'s view agrees with the truth on every settled pod, else the first few
  // differences.
  std::string CompareView(const Endpoint& e, const Truth& truth, Clock::time_point now);
  void SampleRss();

  Shared& s_;
  const topology::Policy policy_;
  const std::map<std::string, NodeCapacity> capacity_;
  std::map<std::string, std::string> last_state_;         // pod -> node ("" once gone)
  std::map<std::string, Clock::time_point> last_change_;  // pod -> when its state changed
  std::map<std::string, uint64_t> breach_seen_;           // breach text -> rounds seen
  Clock::time_point behind_since_[kReplicas];             // max() when in step
  uint64_t behind_reported_[kReplicas] = {};              // incarnation already reported
  std::string last_leader_;  // the identity that led at the last round with a leader
  Clock::time_point last_rss_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  Clock::time_point last_good_round_{};  // begin time of the latest round all in step
  Tally tally_;
  std::map<std::string, soak::RssSamples> rss_;
};

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_INVARIANTS_H_
