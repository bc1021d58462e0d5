#include "bench/soak_flags.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "bench/synthetic.h"

namespace soak {
namespace {

bool Usage() {
  std::fprintf(
      stderr,
      "usage: soak [--seconds 600] [--nodes 30] [--rate 40] [--hold 60] [--warmup-seconds S]\n"
      "            [--max-growth-percent 5] [--resync 30s] [--rss-csv FILE] [--keep-logs DIR]\n");
  return false;
}

}  // namespace

bool ParseFlags(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    bool ok = true;
    if (a == "--seconds") {
      ok = absl::SimpleAtod(v, &opt.seconds) && opt.seconds >= 5;
    } else if (a == "--nodes") {
      ok = absl::SimpleAtoi(v, &opt.nodes) && opt.nodes >= 10;
    } else if (a == "--rate") {
      ok = absl::SimpleAtod(v, &opt.rate) && opt.rate >= 0;
    } else if (a == "--hold") {
      ok = absl::SimpleAtoi(v, &opt.hold) && opt.hold >= 1;
    } else if (a == "--warmup-seconds") {
      ok = absl::SimpleAtod(v, &opt.warmup_seconds) && opt.warmup_seconds >= 0;
    } else if (a == "--max-growth-percent") {
      ok = absl::SimpleAtod(v, &opt.max_growth_percent);
    } else if (a == "--keep-logs") {
      opt.keep_logs = v;
    } else if (a == "--rss-csv") {
      opt.rss_csv = v;
    } else if (a == "--resync") {
      opt.resync = v;
    } else {
      return Usage();
    }
    if (!ok) return Usage();
    ++i;
  }
  return true;
}

// Warm-up: allocator arenas, TLS sessions, caches and metric series reach their working size in
// the first seconds; growth after that is what a leak looks like.
double WarmupSeconds(const Options& opt) {
  return opt.warmup_seconds >= 0 ? opt.warmup_seconds : std::max(5.0, 0.2 * opt.seconds);
}

bool RunIsMeasurable(const Options& opt, double warmup) {
  if (warmup >= opt.seconds - 5) {
    std::fprintf(stderr, "soak: the warm-up (%.0f s) leaves no steady state to measure\n", warmup);
    return false;
  }
  // The filter thread expects the research MIG pod to fit somewhere at all times: the bind
  // threads hold at most hold/2 such pods between them, and each MIG node has 10 free.
  int mig_nodes = 0;
  for (int i = 0; i < opt.nodes; ++i) mig_nodes += bench::KindOf(i) == bench::NodeKind::kMig;
  if (opt.hold / 2 >= 10 * mig_nodes) {
    std::fprintf(stderr, "soak: --hold %d would fill all %d MIG nodes; use more --nodes\n",
                 opt.hold, mig_nodes);
    return false;
  }
  return true;
}

}  // namespace soak
