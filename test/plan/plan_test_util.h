// Helpers shared by the planner's tests: the built-in catalog, sample memory inputs, fleets and
// workloads.
#ifndef GPU_TENANCY_TEST_PLAN_PLAN_TEST_UTIL_H_
#define GPU_TENANCY_TEST_PLAN_PLAN_TEST_UTIL_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "plan/input.h"
#include "plan/plan.h"
#include "topology/catalog.h"
#include "topology/mig_layout.h"

namespace plan::testing {

inline const topology::Catalog& Cat() { return common::BuiltinCatalog(); }

inline const topology::GpuModel& Model(absl::string_view name) {
  const topology::GpuModel* m = Cat().FindModel(name);
  if (m == nullptr) {
    ADD_FAILURE() << "catalog lacks " << name;
    static const topology::GpuModel kEmpty;
    return kEmpty;
  }
  return *m;
}

inline MemoryInput HighWater(int64_t bytes) {
  MemoryInput m;
  m.high_water_bytes = bytes;
  return m;
}

inline MemoryInput Llama13B() {
  ModelDescription d;
  d.parameters = 13'000'000'000;
  d.layers = 40;
  d.kv_heads = 40;
  d.head_dim = 128;
  d.max_tokens = 4096;
  d.concurrency = 2;
  MemoryInput m;
  m.model = d;
  return m;
}

inline std::map<std::string, int> Count(const std::vector<const topology::MigProfile*>& profiles) {
  std::map<std::string, int> out;
  for (const topology::MigProfile* p : profiles) ++out[p->name];
  return out;
}

inline FleetNode Node(std::string name, std::string gpu, int count, std::string zone = "",
                      std::optional<int64_t> memory_mib = std::nullopt) {
  FleetNode n;
  n.name = std::move(name);
  n.gpu = std::move(gpu);
  n.count = count;
  n.zone = std::move(zone);
  n.memory_mib = memory_mib;
  return n;
}

inline WorkloadSpec Workload(std::string name, std::string tenant, Trust trust, Latency latency,
                             MemoryInput memory) {
  WorkloadSpec w;
  w.name = std::move(name);
  w.tenant = std::move(tenant);
  w.trust = trust;
  w.latency = latency;
  w.memory = std::move(memory);
  return w;
}

inline PlanInput OneH100(WorkloadSpec w) {
  PlanInput in;
  in.fleet = {Node("n1", "H100-80GB", 1)};
  in.workloads = {std::move(w)};
  return in;
}

// Every MIG GPU of the plan has a valid layout and a verified -cgi order.
inline void ExpectEveryLayoutValid(const Plan& plan) {
  for (const GpuPlan& g : plan.gpus) {
    if (g.use != GpuUse::kMig) continue;
    std::vector<topology::PlacedInstance> layout;
    for (const PlannedInstance& i : g.instances) layout.push_back({i.profile, i.start});
    EXPECT_TRUE(topology::CheckLayout(*g.model, layout).ok()) << g.node << "/" << g.index;
    EXPECT_TRUE(g.create_order_verified) << g.node << "/" << g.index;
  }
}

}  // namespace plan::testing

#endif  // GPU_TENANCY_TEST_PLAN_PLAN_TEST_UTIL_H_
