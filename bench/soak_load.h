// soak's load: the client threads that drive the server over HTTPS keep-alive (filter and
// prioritize, webhook reviews, bind-then-delete cycles through the emulation) and scrape its
// operator port. Each runs until Shared::end, checks every reply and counts into Shared::stats.
#ifndef GPU_TENANCY_BENCH_SOAK_LOAD_H_
#define GPU_TENANCY_BENCH_SOAK_LOAD_H_

#include <chrono>
#include <string>
#include <vector>

#include "bench/soak_flags.h"
#include "bench/soak_stats.h"
#include "test/support/fake_apiserver.h"

namespace soak {

using Clock = std::chrono::steady_clock;

// What the threads share: the flags, the counters, and where the emulation and server are.
struct Shared {
  Options opt;
  Stats stats;
  testing_support::FakeApiServer* api = nullptr;
  int tls_port = 0;
  int metrics_port = 0;
  std::string ca;
  std::vector<std::string> node_names;
  Clock::time_point end;
  bool Running() const { return Clock::now() < end; }
};

// Filter and prioritize for pods the scheduler is deciding about (not in the emulation).
void FilterLoop(Shared& s);
// Validate and mutate reviews of the admission cases, in turn; `id` keeps their uids apart.
void WebhookLoop(Shared& s, int id);
// Bind cycles: fill to --hold pods, then drain them, and again; `id` keeps pod names apart.
void BindLoop(Shared& s, int id);
// /metrics, /debug/allocations and /readyz on the operator port, twice a second.
void ObserverLoop(Shared& s);

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_LOAD_H_
