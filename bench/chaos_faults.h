// chaos's faults: the schedule drawn from the seed, and what each kind does to the emulated
// control plane or to the replicas (see FaultKind in bench/chaos_flags.h). A fault ends when the
// harm stops (the apiserver serves again, a new replica has started, the last held write was
// served); then the run waits for the replicas to converge and reports how long that took.
#ifndef GPU_TENANCY_BENCH_CHAOS_FAULTS_H_
#define GPU_TENANCY_BENCH_CHAOS_FAULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/chaos_flags.h"
#include "bench/chaos_invariants.h"
#include "bench/chaos_load.h"

namespace chaos {

// Every kind of `opt.faults` once in an order drawn from the seed, then draws from them with
// repeats, `count` in all.
std::vector<FaultKind> Schedule(const Options& opt, size_t count);

struct FaultReport {
  FaultKind kind = FaultKind::kWatchCut;
  std::string detail;     // what exactly was done
  double began = 0;       // seconds since the run began
  double lasted = 0;      // from its start to its end
  double recovered = -1;  // seconds after its end until all in step; < 0: not within bound
};

// Injects faults one after another, each after the previous one has recovered and
// opt.fault_gap_seconds passed, until s.end, and at least until every kind was injected once.
// A fault not recovered within the bound is a breach (and ends the run). Returns one report per
// fault, each also printed as it completes.
std::vector<FaultReport> RunFaults(Shared& s, Invariants& invariants);

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_FAULTS_H_
