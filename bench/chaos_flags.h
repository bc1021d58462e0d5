// chaos's command line: the flags, their defaults, and the fault kinds they may name.
#ifndef GPU_TENANCY_BENCH_CHAOS_FLAGS_H_
#define GPU_TENANCY_BENCH_CHAOS_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace chaos {

// What a fault does to the control plane (bench/chaos_faults.h injects them).
enum class FaultKind {
  kWatchCut,    // every watch stream cut mid-stream
  kWatchGone,   // compaction, then the streams cut: each watch resumes into 410 Gone
  kListGone,    // 410 Gone on every list for a while, during a forced relist
  kThrottle,    // 429 with Retry-After on every request for a while
  kStall,       // writes held past the client's timeout, then served
  kApiRestart,  // kube-apiserver down, every connection dropped, resourceVersions jump
  kLeaderKill,  // the leader replica SIGKILLed, a new one started in its place
  kCount
};
inline constexpr const char* kFaultNames[] = {"watch-cut",  "watch-gone", "list-gone",
                                              "throttle",   "stall",      "apiserver-restart",
                                              "leader-kill"};

struct Options {
  uint64_t seed = 1;
  // Faults are injected this long (and until every kind has been once); the load runs
  // throughout.
  double seconds = 600;
  int nodes = 20;
  double rate = 20;  // bind cycles per second per bind thread
  int hold = 40;     // pods a bind thread holds before it drains them
  int claim_quota = 4;
  double fault_gap_seconds = 5;        // quiet time after one fault recovered, before the next
  double recovery_bound_seconds = 60;  // longer to converge after a fault is a breach
  double stall_seconds = 31;           // a stalled write's hold: past the client's 30 s timeout
  double window_seconds = 4;           // how long 410 on lists and 429 on everything last
  double warmup_seconds = 60;          // RSS growth is measured after this, per replica
  double max_growth_percent = 10;
  std::vector<FaultKind> faults;  // the kinds to draw from (default: all)
  std::string keep_logs;          // copy each replica's log here at the end
  // After the load: the lab's whole quota must be admitted again once its reservations'
  // grace has passed (a leaked reservation would keep counting). Takes about a minute.
  bool refill_check = true;
};

// Parses argv into `opt`: -1 to go on; 0 after printing --help; 2 after printing an error
// naming the flag, and the usage.
int ParseFlags(int argc, char** argv, Options& opt);

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_FLAGS_H_
