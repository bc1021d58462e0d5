// dra_floor's report: the webhooks measured, what each phase gathered, and the Markdown that
// bench/results.md carries (p50 / p99 per review kind against the do-nothing webhook, CPU per
// review by thread role, the targets).
#ifndef GPU_TENANCY_BENCH_DRA_FLOOR_REPORT_H_
#define GPU_TENANCY_BENCH_DRA_FLOOR_REPORT_H_

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace testing_support {
class FakeApiServer;
}  // namespace testing_support

namespace dra_floor {

using testing_support::FakeApiServer;

struct Options {
  int nodes = 500, gpus = 20, pods = 50, reps = 12, creators = 4;
  double rate = 40;
  bool smoke = false;
  bool store = true;  // --without-store: nothing admitted is stored, nothing to watch
  std::string md_path, logs_dir;
};

enum Kind { kPodMutate, kPodValidate, kClaimMutate, kClaimValidate, kKinds };
constexpr std::array<const char*, kKinds> kKindNames = {"pod mutate", "pod validate",
                                                        "claim mutate", "claim validate"};

// What the webhook process's threads do (common::NameThisThread): the event loops read, parse
// and answer reviews (on the loop when no I/O is needed), workers run the reviews that call the
// API server and refill admission budgets, watches follow kube-apiserver, and the rest elect,
// guard and record.
constexpr std::array<const char*, 4> kRoleNames = {"event loops", "workers", "watches", "other"};

struct Webhook {
  std::string name;  // "do-nothing", "gpu-tenancy, no quota", ...
  std::string ns;    // the namespace its pods are in
  // Where what it admits is stored (nullptr: --without-store). The do-nothing webhook's pods go
  // to an emulation of their own that nobody watches: kube-apiserver stores every pod and claim
  // whatever its webhooks, so each webhook's claims follow the same store, and gpu-tenancy's
  // watches are charged to gpu-tenancy alone.
  FakeApiServer* store = nullptr;
  int port = 0;
  pid_t pid = 0;
  std::string ca;
  // Accumulated over its phases: round trips, and the handler's own time (Server-Timing).
  std::array<std::vector<double>, kKinds> latency_us, handler_us;
  size_t errors = 0;
  std::string first_error;
  double cpu_seconds = 0, wall_seconds = 0;
  std::array<double, 4> cpu_by_role{};  // kRoleNames' order
  size_t reviews = 0, pods = 0;
};

struct Run {
  std::vector<Webhook> webhooks;  // do-nothing first
  double others_cores = 0;        // what the rest of the machine used, in cores, on average
  double bench_cores = 0;         // this process: the clients and the emulation
  double serve_idle_cores = 0;    // gpu-tenancy while the do-nothing webhook was measured
  std::string load_before, load_after;
  int record_entries = 0;
  int64_t record_writes = 0;  // PUTs and POSTs of that record: claims and refills that wrote
};

// The Markdown section for bench/results.md.
std::string Report(const Run& run, const Options& opt);

}  // namespace dra_floor

#endif  // GPU_TENANCY_BENCH_DRA_FLOOR_REPORT_H_
