#include "bench/chaos_flags.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "common/flag_table.h"

namespace chaos {
namespace {

const common::FlagTable kFlags{
    {"chaos [--seconds 600] [--seed 1] [--faults KIND,...] [--nodes 20] [--rate 20] [--hold 40]\n"
     "             [--claim-quota 4] [--fault-gap 5] [--recovery-bound 60] [--stall 31] [--window "
     "4]\n"
     "             [--warmup-seconds 60] [--max-growth-percent 10] [--keep-logs DIR]\n"
     "             [--no-refill-check]"},
    "Two gpu-tenancy serve replicas with leader election against the kube-apiserver emulation,\n"
    "a bind storm, pod deletions and claim admissions, and faults on a schedule drawn from the\n"
    "seed; the invariants are checked continuously. One line per fault with its time to\n"
    "recover. Exit codes: 0 no breach, 1 a breach, 2 bad flags or no harness.",
    {{"seconds", "S", "how long faults are injected (and until each kind was), at least 10 (600)"},
     {"seed", "N", "draws the fault schedule (default 1)"},
     {"faults", "KIND,...",
      "the kinds to draw from: watch-cut, watch-gone, list-gone, throttle,\n"
      "stall, apiserver-restart, leader-kill (default all)"},
     {"nodes", "N", "nodes in the fleet, at least 10 (default 20)"},
     {"rate", "R", "bind cycles per second per bind thread (default 20)"},
     {"hold", "N", "pods a bind thread holds before it drains them (default 40)"},
     {"claim-quota", "N", "GPUs the claim tenant may hold through claims (default 4)"},
     {"fault-gap", "S", "quiet seconds between a recovery and the next fault (default 5)"},
     {"recovery-bound", "S", "seconds to converge after a fault before it is a breach (60)"},
     {"stall", "S", "how long a stalled write is held (default 31: past the 30 s timeout)"},
     {"window", "S", "how long 410 on lists and 429 on every request last (default 4)"},
     {"warmup-seconds", "S", "RSS growth is measured after this, per replica (default 60)"},
     {"max-growth-percent", "P", "RSS growth of a replica that is a breach (default 10)"},
     {"keep-logs", "DIR", "copy each replica's log here at the end"},
     {"no-refill-check", "",
      "skip the final check (about a minute) that the claim quota is whole again"}}};

absl::StatusOr<std::vector<FaultKind>> ReadFaults(const std::string& text) {
  std::vector<FaultKind> out;
  for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    bool found = false;
    for (int k = 0; k < static_cast<int>(FaultKind::kCount); ++k) {
      if (name == kFaultNames[k]) {
        out.push_back(static_cast<FaultKind>(k));
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("--faults: unknown kind \"", name, "\""));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("--faults: no kind given");
  return out;
}

absl::Status Read(const common::ParsedFlags& flags, Options& opt) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", flags.positional[0], "\""));
  }
  constexpr double kMax = 1e9;
  ASSIGN_OR_RETURN(opt.seconds, common::NumberFlag(flags, "seconds", opt.seconds, 10, kMax));
  ASSIGN_OR_RETURN(int64_t seed, common::IntFlag(flags, "seed", static_cast<int64_t>(opt.seed), 0,
                                                 int64_t{1} << 62));
  opt.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(opt.nodes, common::IntFlag(flags, "nodes", opt.nodes, 10, 10000));
  ASSIGN_OR_RETURN(opt.rate, common::NumberFlag(flags, "rate", opt.rate, 1, 10000));
  ASSIGN_OR_RETURN(opt.hold, common::IntFlag(flags, "hold", opt.hold, 1, 100000));
  ASSIGN_OR_RETURN(opt.claim_quota,
                   common::IntFlag(flags, "claim-quota", opt.claim_quota, 1, 1000));
  ASSIGN_OR_RETURN(opt.fault_gap_seconds,
                   common::NumberFlag(flags, "fault-gap", opt.fault_gap_seconds, 0, kMax));
  ASSIGN_OR_RETURN(
      opt.recovery_bound_seconds,
      common::NumberFlag(flags, "recovery-bound", opt.recovery_bound_seconds, 1, kMax));
  ASSIGN_OR_RETURN(opt.stall_seconds,
                   common::NumberFlag(flags, "stall", opt.stall_seconds, 0, 600));
  ASSIGN_OR_RETURN(opt.window_seconds,
                   common::NumberFlag(flags, "window", opt.window_seconds, 0.5, 600));
  ASSIGN_OR_RETURN(opt.warmup_seconds,
                   common::NumberFlag(flags, "warmup-seconds", opt.warmup_seconds, 0, kMax));
  ASSIGN_OR_RETURN(opt.max_growth_percent, common::NumberFlag(flags, "max-growth-percent",
                                                              opt.max_growth_percent, -kMax, kMax));
  if (flags.Has("faults")) {
    ASSIGN_OR_RETURN(opt.faults, ReadFaults(flags.Get("faults")));
  } else {
    opt.faults.clear();
    for (int k = 0; k < static_cast<int>(FaultKind::kCount); ++k) {
      opt.faults.push_back(static_cast<FaultKind>(k));
    }
  }
  opt.keep_logs = flags.Get("keep-logs", opt.keep_logs);
  opt.refill_check = !flags.Has("no-refill-check");
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

}  // namespace chaos
