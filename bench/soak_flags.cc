#include "bench/soak_flags.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/synthetic.h"
#include "common/flag_table.h"

namespace soak {
namespace {

const common::FlagTable kFlags{
    {"soak [--seconds 600] [--nodes 30] [--rate 40] [--hold 60] [--warmup-seconds S]\n"
     "            [--max-growth-percent 5] [--resync 30s] [--rss-csv FILE] [--keep-logs DIR]"},
    "A long mixed load against gpu-tenancy serve reading the kube-apiserver emulation; fails on\n"
    "any failed request or when the server's memory grows after the warm-up.\n"
    "Exit codes: 0 no errors and flat memory, 1 otherwise, 2 bad flags or no harness.",
    {{"seconds", "S", "how long to run, at least 5 (default 600)"},
     {"nodes", "N", "nodes in the fleet, at least 10 (default 30)"},
     {"rate", "R", "operations per second per client thread; 0: as fast as possible (40)"},
     {"hold", "N", "pods a bind thread holds before it drains them (default 60)"},
     {"warmup-seconds", "S", "ignore growth before this (default 20% of the run, at least 5)"},
     {"max-growth-percent", "P", "RSS growth after the warm-up that fails the run (default 5)"},
     {"resync", "DURATION", "serve --resync: a full relist this often (default 30s)"},
     {"rss-csv", "FILE", "write the RSS samples (seconds,KiB) here"},
     {"keep-logs", "DIR", "copy serve.log and audit.jsonl here at the end"}}};

absl::Status Read(const common::ParsedFlags& flags, Options& opt) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", flags.positional[0], "\""));
  }
  constexpr double kMax = 1e9;
  ASSIGN_OR_RETURN(opt.seconds, common::NumberFlag(flags, "seconds", opt.seconds, 5, kMax));
  ASSIGN_OR_RETURN(opt.nodes, common::IntFlag(flags, "nodes", opt.nodes, 10, 100000));
  ASSIGN_OR_RETURN(opt.rate, common::NumberFlag(flags, "rate", opt.rate, 0, kMax));
  ASSIGN_OR_RETURN(opt.hold, common::IntFlag(flags, "hold", opt.hold, 1, 1000000));
  ASSIGN_OR_RETURN(opt.warmup_seconds,
                   common::NumberFlag(flags, "warmup-seconds", opt.warmup_seconds, 0, kMax));
  ASSIGN_OR_RETURN(opt.max_growth_percent, common::NumberFlag(flags, "max-growth-percent",
                                                              opt.max_growth_percent, -kMax, kMax));
  opt.keep_logs = flags.Get("keep-logs", opt.keep_logs);
  opt.rss_csv = flags.Get("rss-csv", opt.rss_csv);
  opt.resync = flags.Get("resync", opt.resync);
  return absl::OkStatus();
}

}  // namespace

int ParseFlags(int argc, char** argv, Options& opt) {
  common::ParsedFlags flags;
  if (std::optional<int> exit_code =
          kFlags.ParseOrExit(std::vector<std::string>(argv + 1, argv + argc), flags)) {
    return *exit_code;
  }
  if (absl::Status read = Read(flags, opt); !read.ok()) return kFlags.Refuse(read);
  return -1;
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
