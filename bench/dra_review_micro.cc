// micro_bench, DRA admission part: what each of the four reviews bench/dra_floor sends per pod
// costs in webhook::Review itself, over the same cluster (500 nodes whose slices offer 20 whole
// H100s, the chart's DeviceClasses, the Deployment's claim template) and the same tenant
// (`open`: one tier, gpuMemoryPerPod, no quota; bench::dra_floor::kPolicy) with its selectors
// planned once, as serve plans them, and no network, TLS or threads around it.
//   DRA floor review   pod mutate, pod validate, claim mutate, claim validate (Arg 0..3)
//   baseline           parsing the same body into a JSON document, what a do-nothing webhook
//                      that reads the review pays
//   ... cold           the same, each review after 64 MiB were written over: on the live path a
//                      pod's reviews come tens of milliseconds apart, with the watches' work in
//                      between, and find little of the last review's code and data in the
//                      caches; there a review costs several times what it costs warm here.
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/dra_floor_objects.h"
#include "benchmark/benchmark.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "topology/snapshot.h"
#include "webhook/claim_selectors.h"
#include "webhook/review.h"
#include "wire/dra_codec.h"

#ifndef BENCH_TESTDATA_DIR
#error "BENCH_TESTDATA_DIR: the captured reviews"
#endif

namespace dra_review_micro {
namespace {

using bench::dra_floor::ReviewFactory;

constexpr int kNodes = 500, kGpus = 20;
constexpr char kNamespace[] = "team-open";
constexpr const char* kKindNames[] = {"pod mutate", "pod validate", "claim mutate",
                                      "claim validate"};

struct Floor {
  std::shared_ptr<const topology::Policy> policy;
  // As serve keeps them: every tenant's selectors worked out once per policy.
  std::unique_ptr<webhook::TenantSelectorPlans> plans;
  topology::ClusterSnapshot snapshot;
  std::string bodies[4];
  std::string error;
};

const Floor& TheFloor() {
  static const Floor* floor = [] {
    auto* f = new Floor;
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(bench::dra_floor::kPolicy);
    absl::StatusOr<ReviewFactory> factory = ReviewFactory::Load(BENCH_TESTDATA_DIR);
    if (!policy.ok() || !factory.ok()) {
      f->error = "policy or captured reviews unreadable";
      return f;
    }
    f->policy = std::make_shared<const topology::Policy>(*std::move(policy));
    f->plans = std::make_unique<webhook::TenantSelectorPlans>(f->policy);
    topology::ClusterData data;
    data.namespace_labels[kNamespace] = {};
    for (int n = 0; n < kNodes; ++n) {
      absl::StatusOr<rapidjson::Document> slice =
          common::ParseJson(bench::dra_floor::GpuSliceJson(n, kGpus));
      absl::StatusOr<topology::DraSlice> parsed =
          slice.ok() ? wire::ParseResourceSlice(*slice) : slice.status();
      if (!parsed.ok()) {
        f->error = std::string(parsed.status().message());
        return f;
      }
      data.dra_slices.push_back(*std::move(parsed));
    }
    std::ifstream in(absl::StrCat(BENCH_TESTDATA_DIR, "/dra/list-deviceclasses.v1.json"));
    const std::string classes_text((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
    absl::StatusOr<rapidjson::Document> classes = common::ParseJson(classes_text);
    absl::StatusOr<wire::DraObjects> objects =
        classes.ok() ? wire::ParseDraList(*classes) : classes.status();
    if (!objects.ok()) {
      f->error = std::string(objects.status().message());
      return f;
    }
    data.dra_classes = objects->classes;
    // The Deployment's template, as the live state holds it once its watch has seen it: the
    // pod's claim then resolves to a GPU class and the pod takes the whole path.
    const rapidjson::Document stored = factory->TemplateObject(kNamespace);
    absl::StatusOr<topology::DraClaim> held = wire::ParseResourceClaimTemplate(stored);
    if (!held.ok()) {
      f->error = std::string(held.status().message());
      return f;
    }
    data.dra_claim_templates.push_back(*std::move(held));
    f->snapshot = topology::BuildSnapshot(data, common::BuiltinCatalog(), *f->policy);
    const rapidjson::Value& spec = stored["spec"]["spec"];
    const std::string pod = factory->PodReview(kNamespace, "p-1", "pod-uid-1");
    const std::string claim = factory->ClaimReview(kNamespace, "p-1", "claim-uid-1", &spec);
    f->bodies[0] = f->bodies[1] = pod;
    f->bodies[2] = f->bodies[3] = claim;
    return f;
  }();
  return *floor;
}

webhook::ReviewOutcome ReviewOnce(const Floor& f, const std::string& body,
                                  webhook::ReviewKind kind) {
  return webhook::Review(body, kind, *f.policy, f.snapshot, {}, f.plans.get());
}

webhook::ReviewKind KindOf(int64_t arg) {
  return arg % 2 == 0 ? webhook::ReviewKind::kMutate : webhook::ReviewKind::kValidate;
}

void BM_BaselineParseReview(benchmark::State& state) {
  const Floor& f = TheFloor();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  const std::string& body = f.bodies[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(common::ParseJson(body));
  state.SetLabel(absl::StrCat(kKindNames[state.range(0)], " body, parse only"));
}
BENCHMARK(BM_BaselineParseReview)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_DraFloorReview(benchmark::State& state) {
  const Floor& f = TheFloor();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  const std::string& body = f.bodies[state.range(0)];
  bool allowed = false;
  for (auto _ : state) {
    webhook::ReviewOutcome r = ReviewOnce(f, body, KindOf(state.range(0)));
    if (r.http_status != 200) return state.SkipWithError(r.body.c_str());
    allowed = r.allowed;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(absl::StrCat(kKindNames[state.range(0)], allowed ? ", allowed" : ", denied"));
}
BENCHMARK(BM_DraFloorReview)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// Writes over 64 MiB, so that what runs next finds little of its code and data in the caches, as
// a pod's reviews find them on a busy machine.
void Flush() {
  static std::vector<char>* scratch = new std::vector<char>(64u << 20);
  for (size_t i = 0; i < scratch->size(); i += 64) (*scratch)[i] += 1;
  benchmark::ClobberMemory();
}

// `once(floor, body, kind)` for the review of Arg, each time with the caches flushed first.
template <typename Once>
void RunCold(benchmark::State& state, Once once) {
  const Floor& f = TheFloor();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  const std::string& body = f.bodies[state.range(0)];
  for (auto _ : state) {
    state.PauseTiming();
    Flush();
    state.ResumeTiming();
    benchmark::DoNotOptimize(once(f, body, KindOf(state.range(0))));
  }
  state.SetLabel(kKindNames[state.range(0)]);
}

void BM_DraFloorReviewCold(benchmark::State& state) { RunCold(state, ReviewOnce); }
BENCHMARK(BM_DraFloorReviewCold)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->Iterations(300);

void BM_BaselineParseReviewCold(benchmark::State& state) {
  RunCold(state, [](const Floor&, const std::string& body, webhook::ReviewKind) {
    return common::ParseJson(body);
  });
}
BENCHMARK(BM_BaselineParseReviewCold)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(300);

}  // namespace
}  // namespace dra_review_micro
