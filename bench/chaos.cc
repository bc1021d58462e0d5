// chaos: the control plane's bad day. Two replicas of `gpu-tenancy serve` with leader election
// follow the kube-apiserver emulation (test/support/fake_apiserver.h) while the soak's load runs
// through them (a bind storm through the leader, pod deletions, claim admissions on both
// replicas, pod admissions) and faults come one after another on a schedule drawn from --seed:
// watch streams cut, 410 Gone on watches and on lists, 429 with Retry-After, writes stalled
// past the client's timeout, a full apiserver restart (every connection dropped, the
// resourceVersion jumps on), the leader replica SIGKILLed and started again.
//
// The invariants are checked four times a second throughout (bench/chaos_invariants.h): no
// device or MIG slice handed out twice, no tenant past its quota on pods or on claims (usage
// record included), every replica's view back in step with the apiserver within
// --recovery-bound after each fault, no admission answered wrongly, no bind reported done that
// did not happen, never two leaders; and each replica's memory flat after --warmup-seconds.
// One line per fault says how long the replicas took to be in step again after it ended.
//
//   chaos [--seconds 600] [--seed 1] [--faults KIND,...] [...]   (chaos --help)
//
// Exit status: 0 when nothing was breached, 1 otherwise, 2 for bad flags or no harness.
//
// The pieces: chaos_flags (the command line), chaos_cluster (the cluster and the truth's
// invariants), chaos_replicas (the two serve processes), chaos_load (the client threads),
// chaos_invariants (the continuous checks), chaos_faults (the schedule and each fault).
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/chaos_cluster.h"
#include "bench/chaos_faults.h"
#include "bench/chaos_flags.h"
#include "bench/chaos_invariants.h"
#include "bench/chaos_load.h"
#include "bench/chaos_replicas.h"
#include "bench/soak_objects.h"
#include "bench/soak_rss.h"
#include "common/config_loader.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "webhook/claim_quota.h"

namespace chaos {
namespace {

using testing_support::FakeApiServer;

void PrintCounters(const Shared& s, double elapsed) {
  const Counters& c = s.counters;
  auto n = [](const std::atomic<uint64_t>& v) { return static_cast<unsigned long long>(v.load()); };
  std::printf(
      "  pods: %llu created, %llu bound (%.1f/s), %llu refused (node or quota full), "
      "%llu fit nowhere, %llu deleted\n",
      n(c.pods_created), n(c.bound), static_cast<double>(c.bound.load()) / elapsed, n(c.refused),
      n(c.unschedulable), n(c.pods_deleted));
  std::printf(
      "  binds unavailable: %llu (of which the apiserver bound %llu all the same); "
      "cycles with no leader: %llu\n",
      n(c.bind_unavailable), n(c.bind_landed_anyway), n(c.no_leader));
  std::printf("  claims: %llu admitted, %llu denied by the quota, %llu unanswered, %llu deleted\n",
              n(c.claims_admitted), n(c.claims_denied), n(c.claims_unavailable),
              n(c.claims_deleted));
  std::printf("  pod reviews: %llu answered, %llu unanswered\n", n(c.reviews_answered),
              n(c.reviews_unavailable));
}

// Growth per replica incarnation that lived past the warm-up; a breach past the limit.
void CheckRss(Shared& s, const std::map<std::string, soak::RssSamples>& rss) {
  for (const auto& [identity, samples] : rss) {
    if (samples.empty()) continue;
    const double warmup = samples.front().first + s.opt.warmup_seconds;
    soak::RssGrowth g = soak::MeasureGrowth(samples, warmup);
    if (g.steady_samples < 4) {
      std::printf(
          "  RSS %s: %.1f MiB at the start, %.1f MiB max (lived %.0f s: too short to "
          "measure growth)\n",
          identity.c_str(), static_cast<double>(g.first_kib) / 1024,
          static_cast<double>(g.max_kib) / 1024, samples.back().first - samples.front().first);
      continue;
    }
    std::printf(
        "  RSS %s: %.1f MiB after the warm-up, %.1f MiB at the end, max %.1f MiB, "
        "growth %+.2f%% (limit %.0f%%)\n",
        identity.c_str(), g.start_kib / 1024, g.end_kib / 1024,
        static_cast<double>(g.max_kib) / 1024, g.percent, s.opt.max_growth_percent);
    if (g.percent >= s.opt.max_growth_percent) {
      s.breaches.Add(
          absl::StrFormat("replica %s grew %+.2f%% after the warm-up", identity, g.percent));
    }
  }
}

// Crashes and errors the replicas logged: a fault is no reason for a crash, and every error
// line is printed (the run does not fail on them: a fault makes some, e.g. a refused list).
void ReportLogs(Shared& s) {
  size_t errors = 0;
  for (const std::string& file : s.replicas->LogFiles()) {
    for (absl::string_view line : absl::StrSplit(soak::ReadWhole(file), '\n', absl::SkipEmpty())) {
      if (!absl::StrContains(line, "level=error")) continue;
      if (++errors <= 10) std::printf("  log %s: %s\n", file.c_str(), std::string(line).c_str());
    }
  }
  std::printf("  replica logs: %zu error lines\n", errors);
}

// Once every claim is deleted and the last reservation's grace has passed, the lab tenant must
// be able to claim its whole quota again (asked as a dry run, which writes nothing): a leaked
// reservation, or a claim the replicas still count, would keep it short.
void CheckQuotaRefills(Shared& s) {
  const auto limit = Clock::now() + std::chrono::seconds(webhook::kReservationGraceSeconds + 30);
  std::string last = "not asked";
  for (int attempt = 0; Clock::now() < limit; ++attempt) {
    const Endpoint e = s.replicas->Get(attempt % kReplicas);
    httplib::SSLClient client("127.0.0.1", e.tls_port);
    client.set_ca_cert_path(e.ca.c_str());
    client.enable_server_certificate_verification(true);
    client.set_read_timeout(10, 0);
    const std::string uid = absl::StrFormat("f111%04x-0000-4000-8000-000000000000", attempt);
    httplib::Result r =
        client.Post("/webhook/validate", ClaimReview(uid, "chaos-refill", s.opt.claim_quota, true),
                    "application/json");
    last = r ? r->body.substr(0, 300) : "no answer";
    if (r && r->status == 200 && absl::StrContains(r->body, R"("allowed":true)")) {
      std::printf("  claim quota: whole again %.0f s after the load\n",
                  std::chrono::duration<double>(Clock::now() - s.end).count());
      return;
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  s.breaches.Add(absl::StrCat("the lab tenant cannot claim its quota of ", s.opt.claim_quota,
                              " GPUs after every claim was deleted and the grace passed: ", last));
}

int Run(int argc, char** argv) {
  Options opt;
  if (int exit_code = ParseFlags(argc, argv, opt); exit_code >= 0) return exit_code;
  const std::string policy_yaml = PolicyYaml(opt.claim_quota);
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(policy_yaml);
  if (!policy.ok()) {
    std::fprintf(stderr, "chaos: policy: %s\n", policy.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
  if (!api.ok()) {
    std::fprintf(stderr, "chaos: emulator: %s\n", api.status().ToString().c_str());
    return 2;
  }
  Shared s;
  s.opt = opt;
  s.api = api->get();
  if (absl::Status st = LoadCluster(**api, opt.nodes, policy_yaml, s.node_names); !st.ok()) {
    std::fprintf(stderr, "chaos: loading the cluster: %s\n", st.ToString().c_str());
    return 2;
  }
  testing_support::TempDir dir;
  std::ofstream(dir.File("kubeconfig")) << soak::Kubeconfig(**api);
  std::ofstream(dir.File("policy.yaml")) << policy_yaml;
  Replicas replicas(
      {"--kubeconfig", dir.File("kubeconfig"), "--policy", dir.File("policy.yaml"),
       "--leader-elect", "true", "--lease-namespace", kRecordNamespace, "--resync", "1m"},
      dir.path());
  s.replicas = &replicas;
  for (int i = 0; i < kReplicas; ++i) {
    if (absl::Status st = replicas.Start(i); !st.ok()) {
      std::fprintf(stderr, "chaos: replica %d: %s\n%s\n", i, st.ToString().c_str(),
                   replicas.Logs().c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "chaos: seed %llu, %d nodes, 2 replicas (pids %d, %d), %.0f s of load\n",
               static_cast<unsigned long long>(opt.seed), opt.nodes, replicas.Get(0).pid,
               replicas.Get(1).pid, opt.seconds);

  s.start = Clock::now();
  s.end = s.start +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.seconds));
  Invariants invariants(s, *policy);
  std::thread checker([&] { invariants.Run(); });
  std::vector<std::thread> load;
  load.emplace_back(BindLoop, std::ref(s), 0);
  load.emplace_back(BindLoop, std::ref(s), 1);
  load.emplace_back(ClaimLoop, std::ref(s), 0);
  load.emplace_back(ClaimLoop, std::ref(s), 1);
  load.emplace_back(ReviewLoop, std::ref(s));
  std::vector<FaultReport> faults = RunFaults(s, invariants);
  s.load_stopped = true;
  for (std::thread& t : load) t.join();
  // The load has stopped: one more convergence, so the run ends in step.
  if (!invariants.WaitRecovered(
          Clock::now(),
          Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(opt.recovery_bound_seconds)))) {
    s.breaches.Add("the replicas were not in step with the apiserver at the end");
  }
  if (opt.refill_check) CheckQuotaRefills(s);
  invariants.Stop();
  checker.join();
  const double elapsed = s.Elapsed();

  for (int i = 0; i < kReplicas; ++i) {
    int status = replicas.Terminate(i);
    if (status != 0) s.breaches.Add(absl::StrCat("replica ", i, " exited with status ", status));
  }
  if (!opt.keep_logs.empty()) {
    for (const std::string& file : replicas.LogFiles()) {
      std::ofstream(absl::StrCat(opt.keep_logs, "/", file.substr(file.rfind('/') + 1)))
          << soak::ReadWhole(file);
    }
  }

  const Invariants::Tally tally = invariants.tally();
  std::printf(
      "chaos: %.0f s, seed %llu, %zu faults, %llu checks (%llu all in step), %llu leader "
      "changes, longest a replica was out of step after a fault: %.1f s\n",
      elapsed, static_cast<unsigned long long>(opt.seed), faults.size(),
      static_cast<unsigned long long>(tally.rounds),
      static_cast<unsigned long long>(tally.rounds_in_step),
      static_cast<unsigned long long>(tally.leader_changes), tally.longest_behind_seconds);
  PrintCounters(s, elapsed);
  CheckRss(s, invariants.Rss());
  ReportLogs(s);
  for (const std::string& b : s.breaches.First()) std::printf("  breach: %s\n", b.c_str());
  const bool failed = s.breaches.count() > 0;
  std::printf("chaos: %s\n", failed
                                 ? absl::StrCat("FAILED: ", s.breaches.count(), " breaches").c_str()
                                 : "passed: no breach");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace chaos

int main(int argc, char** argv) { return chaos::Run(argc, argv); }
