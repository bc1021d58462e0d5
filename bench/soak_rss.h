// The server's memory as soak sees it: VmRSS samples, and the steady-state growth they show.
#ifndef GPU_TENANCY_BENCH_SOAK_RSS_H_
#define GPU_TENANCY_BENCH_SOAK_RSS_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace soak {

// VmRSS of `pid` in KiB, or -1.
long RssKiB(pid_t pid);

using RssSamples = std::vector<std::pair<double, long>>;  // seconds since start, KiB

// Growth: the median of the first 10 samples after the warm-up against the median of the last
// 10 (fewer when the steady state is short). A single sample is noisy (an in-flight
// /debug/allocations, a relist's lists or a burst of binds each hold a few hundred KB for a
// moment, and malloc returns memory lazily), while a leak moves the whole window; the median
// ignores the spikes and keeps the trend.
struct RssGrowth {
  size_t steady_samples = 0;  // after the warm-up; under 4 measures nothing (the rest stay 0)
  double start_kib = 0, end_kib = 0, percent = 0;
  long first_kib = 0, max_kib = 0;  // of all samples
};
RssGrowth MeasureGrowth(const RssSamples& samples, double warmup);

// seconds,rss_kib lines with a header.
void WriteRssCsv(const std::string& path, const RssSamples& samples);

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_RSS_H_
