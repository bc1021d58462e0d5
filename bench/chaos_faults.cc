#include "bench/chaos_faults.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/chaos_cluster.h"
#include "common/json.h"

namespace chaos {
namespace {

using testing_support::FakeApiServer;
using Kind = FakeApiServer::RequestKind;

// Past the 30 s client timeout: a client that retries once on a fresh connection (kube/'s
// ApiClient does) has both attempts held.
constexpr auto kStallWindowPastHold = std::chrono::seconds(2);
constexpr auto kApiDowntime = std::chrono::seconds(2);
constexpr int64_t kRestartJump = 1000;  // revisions other writers made while it was down
constexpr auto kKilledFor = std::chrono::seconds(1);

double Since(const Shared& s, Clock::time_point t) {
  return std::chrono::duration<double>(t - s.start).count();
}

// The replica holding the extender Lease, by its identity; -1 when none holds it.
int LeaseHolder(const Shared& s) {
  absl::StatusOr<rapidjson::Document> lease = common::ParseJson(s.api->GetObject(
      testing_support::Resource::kLeases, kRecordNamespace, "gpu-tenancy-extender"));
  if (!lease.ok()) return -1;
  const common::JsonValue* spec = common::FindNonNull(*lease, "spec");
  const std::string holder(spec ? common::StringOr(*spec, "holderIdentity") : "");
  for (int i = 0; i < kReplicas; ++i) {
    Endpoint e = s.replicas->Get(i);
    if (e.up && e.identity == holder) return i;
  }
  return -1;
}

// Does the fault; returns when its harm has stopped, with what was done in `detail`.
Clock::time_point Inject(Shared& s, FaultKind kind, std::string* detail) {
  FakeApiServer& api = *s.api;
  const Clock::time_point now = Clock::now();
  const auto window = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s.opt.window_seconds));
  switch (kind) {
    case FaultKind::kWatchCut:
      *detail = absl::StrCat(api.OpenWatches(), " watch streams cut");
      api.DropWatches(/*graceful=*/false);
      return Clock::now();
    case FaultKind::kWatchGone:
      *detail = absl::StrCat("compacted at ", api.resource_version(), ", ", api.OpenWatches(),
                             " watch streams cut");
      api.Compact();
      api.DropWatches(/*graceful=*/false);
      return Clock::now();
    case FaultKind::kListGone:
      api.FailRequests({"GET", "", Kind::kList}, 410, now + window);
      api.Compact();
      api.DropWatches(/*graceful=*/false);
      *detail = absl::StrFormat("410 Gone on every list for %.0f s, watches cut into 410",
                                s.opt.window_seconds);
      std::this_thread::sleep_until(now + window);
      return Clock::now();
    case FaultKind::kThrottle:
      api.FailRequests({"", "", Kind::kAny}, 429, now + window);
      *detail =
          absl::StrFormat("429 Retry-After: 1 on every request for %.0f s", s.opt.window_seconds);
      std::this_thread::sleep_until(now + window);
      return Clock::now();
    case FaultKind::kStall: {
      // The data path's writes: Bindings and the claim quota's records. The Lease is left
      // alone, so the leader goes on binding while its earlier Bindings hang.
      const auto hold = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::duration<double>(s.opt.stall_seconds));
      const Clock::time_point until = now + hold + kStallWindowPastHold;
      api.StallRequests({"POST", "/api/v1/namespaces/", Kind::kWrite}, hold, until);
      api.StallRequests({"PUT", "/api/v1/namespaces/", Kind::kWrite}, hold, until);
      *detail =
          absl::StrFormat("Bindings and record writes held %.0f s for %.0f s, then served",
                          s.opt.stall_seconds, std::chrono::duration<double>(until - now).count());
      std::this_thread::sleep_until(until + hold);
      return Clock::now();
    }
    case FaultKind::kApiRestart: {
      api.Stop();
      api.AdvanceResourceVersion(kRestartJump);
      std::this_thread::sleep_for(kApiDowntime);
      absl::Status restarted = api.Restart(/*keep_state=*/true);
      if (!restarted.ok()) {
        s.breaches.Add(absl::StrCat("the emulator did not restart: ", restarted.ToString()));
      }
      *detail = absl::StrCat("down 2 s, resourceVersion +", kRestartJump);
      return Clock::now();
    }
    case FaultKind::kLeaderKill: {
      int victim = LeaseHolder(s);
      if (victim < 0) victim = 0;
      const std::string who = s.replicas->Get(victim).identity;
      s.replicas->Kill(victim);
      std::this_thread::sleep_for(kKilledFor);
      absl::Status started = s.replicas->Start(victim);
      if (!started.ok()) {
        s.breaches.Add(
            absl::StrCat("replica ", victim, " did not start again: ", started.ToString()));
      }
      *detail = absl::StrCat(who, " (lease holder) SIGKILLed, ", s.replicas->Get(victim).identity,
                             " started in its place");
      return Clock::now();
    }
    case FaultKind::kCount:
      break;
  }
  return Clock::now();
}

}  // namespace

std::vector<FaultKind> Schedule(const Options& opt, size_t count) {
  std::mt19937_64 rng(opt.seed);
  std::vector<FaultKind> out = opt.faults;
  std::shuffle(out.begin(), out.end(), rng);
  std::uniform_int_distribution<size_t> pick(0, opt.faults.size() - 1);
  while (out.size() < count) out.push_back(opt.faults[pick(rng)]);
  out.resize(count);
  return out;
}

std::vector<FaultReport> RunFaults(Shared& s, Invariants& invariants) {
  std::vector<FaultReport> reports;
  const std::vector<FaultKind> schedule = Schedule(s.opt, 10000);
  const auto bound = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s.opt.recovery_bound_seconds));
  const auto gap = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s.opt.fault_gap_seconds));
  // The first fault waits for the replicas to be in step, as every later one does.
  if (!invariants.WaitRecovered(s.start, s.start + bound)) {
    s.breaches.Add("the replicas never came in step before the first fault");
    return reports;
  }
  for (FaultKind kind : schedule) {
    std::this_thread::sleep_for(gap);
    if (Clock::now() >= s.end && reports.size() >= s.opt.faults.size()) break;
    FaultReport r;
    r.kind = kind;
    const Clock::time_point began = Clock::now();
    r.began = Since(s, began);
    s.in_fault = true;
    const Clock::time_point ended = Inject(s, kind, &r.detail);
    s.last_fault_end = ended.time_since_epoch().count();
    s.in_fault = false;
    r.lasted = std::chrono::duration<double>(ended - began).count();
    std::optional<Clock::time_point> in_step = invariants.WaitRecovered(ended, ended + bound);
    if (in_step) {
      r.recovered = std::chrono::duration<double>(*in_step - ended).count();
    } else {
      s.breaches.Add(absl::StrFormat("fault %s at %.1f s (%s): not recovered %.0f s after it ended",
                                     kFaultNames[static_cast<int>(kind)], r.began, r.detail,
                                     s.opt.recovery_bound_seconds));
    }
    std::printf("chaos: fault %-2zu %-17s at %6.1f s, lasted %5.1f s, %s; %s\n", reports.size() + 1,
                kFaultNames[static_cast<int>(kind)], r.began, r.lasted,
                r.recovered >= 0
                    ? absl::StrFormat("recovered %.1f s after it ended", r.recovered).c_str()
                    : "NOT RECOVERED",
                r.detail.c_str());
    std::fflush(stdout);
    reports.push_back(std::move(r));
    if (!in_step) break;  // the rest would measure this one again
  }
  return reports;
}

}  // namespace chaos
