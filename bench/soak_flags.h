// soak's command line: the flags, their defaults, and the checks that
// a run they describe has a steady state to measure and cannot fill the fleet.
#ifndef GPU_TENANCY_BENCH_SOAK_FLAGS_H_
#define GPU_TENANCY_BENCH_SOAK_FLAGS_H_

#include <string>

namespace soak {

struct Options {
  double seconds = 600;
  int nodes = 30;
  double rate = 40;            // operations per second per client thread; 0 = as fast as possible
  int hold = 60;               // pods a bind thread holds before it drains them
  double warmup_seconds = -1;  // < 0: 20% of the run, at least 5 s
  double max_growth_percent = 5;
  std::string keep_logs;       // copy serve.log and audit.jsonl here at the end
  std::string rss_csv;         // write the RSS samples (seconds,KiB) here
  std::string resync = "30s";  // serve --resync: a full relist this often
};

// Parses argv into `opt`: -1 to go on; 0 after printing --help; 2 after printing an error
// naming the flag, and the usage.
int ParseFlags(int argc, char** argv, Options& opt);

// The warm-up in seconds: --warmup-seconds, else 20% of the run, at least 5 s.
double WarmupSeconds(const Options& opt);

// False, after saying why on stderr, when the warm-up leaves no steady state to measure or the
// bind threads could fill every MIG node.
bool RunIsMeasurable(const Options& opt, double warmup);

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_FLAGS_H_
