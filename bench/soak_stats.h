// What soak counts: requests and errors per kind of call, the outcomes that show the load did
// what it claims, and the first few errors for the report. Shared by every load thread.
#ifndef GPU_TENANCY_BENCH_SOAK_STATS_H_
#define GPU_TENANCY_BENCH_SOAK_STATS_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace soak {

enum Kind {
  kFilter,
  kPrioritize,
  kValidate,
  kMutate,
  kBind,
  kMetrics,
  kAllocations,
  kReadyz,
  kEmulator,
  kServer,
  kKinds
};
inline constexpr const char* kKindNames[kKinds] = {"filter",
                                                   "prioritize",
                                                   "validate",
                                                   "mutate",
                                                   "bind",
                                                   "metrics",
                                                   "debug/allocations",
                                                   "readyz",
                                                   "emulator (add/delete pod)",
                                                   "server process (RSS, log, exit)"};

struct Stats {
  std::atomic<uint64_t> requests[kKinds] = {};
  std::atomic<uint64_t> errors[kKinds] = {};
  // Valid outcomes worth reporting, to show the load did what it claims.
  std::atomic<uint64_t> bound{0}, refused_filled{0}, refused_stale{0}, unschedulable{0}, deleted{0};
  std::atomic<uint64_t> validate_denied{0}, mutate_patched{0};
  std::mutex mu;
  std::vector<std::string> first_errors;  // the first few, for the report

  void Count(Kind k) { requests[k]++; }
  void Fail(Kind k, const std::string& what) {
    errors[k]++;
    std::lock_guard<std::mutex> lock(mu);
    if (first_errors.size() < 20) {
      first_errors.push_back(absl::StrCat(kKindNames[k], ": ", what.substr(0, 400)));
      std::fprintf(stderr, "soak: ERROR %s\n", first_errors.back().c_str());
    }
  }
  uint64_t TotalErrors() const {
    uint64_t n = 0;
    for (const auto& e : errors) n += e.load();
    return n;
  }
};

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_STATS_H_
