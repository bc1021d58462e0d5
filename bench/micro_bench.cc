// micro_bench: the model's per-node and per-event costs, each next to a baseline from the same run.
// (DRA watch events: bench/dra_micro.cc, linked into the same binary.)
//   Fit / Score per node       for MIG, time-sliced and exclusive nodes (synthetic fleet)
//   Quantity::Parse            Kubernetes quantities as found on nodes and pods
//   Publish after a pod event  kube::ClusterState::UpsertPod of a bound GPU pod at 5,000 nodes and
//                              150,000 pods; baseline: copying a 5,000-entry node map, which is
//                              what a naive non-incremental publish costs at least
//   RSS                        VmRSS with that state loaded (counter rss_mb, and a printed line)
//   Quiet pod relist           kube::ClusterState::ReplacePods of those 150,000 pods unchanged,
//                              parsed from their JSON (how long the state's lock is held);
//                              baseline: parsing the same items (wire::ParsePod)
//   Extender decision          the filter / prioritize verbs on a 500-name ExtenderArgs body
//                              against that 5,000-node state (parse + decide + encode, no HTTP);
//                              baseline: parsing the same bytes (common::ParseJson); the filter
//                              also for a tenant with a quota
//   Webhook review             validate / mutate of a ~20 KB pod in an AdmissionReview (parse +
//                              rules + reply, no HTTP); baseline: parsing the same bytes
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/synthetic.h"
#include "benchmark/benchmark.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "extender/allocations.h"
#include "extender/inventory.h"
#include "extender/verbs.h"
#include "guard/ledger.h"
#include "kube/cluster_state.h"
#include "topology/fit.h"
#include "topology/quantity.h"
#include "topology/snapshot.h"
#include "webhook/review.h"
#include "wire/k8s_codec.h"

namespace {

constexpr int kBigNodes = 5000;

double RssMb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return 0;
}

std::shared_ptr<const topology::Policy> BenchPolicy() {
  static auto* policy = [] {
    absl::StatusOr<topology::Policy> p = common::LoadPolicy(bench::PermissivePolicyYaml());
    if (!p.ok()) {
      std::fprintf(stderr, "policy: %s\n", p.status().ToString().c_str());
      std::abort();
    }
    return new std::shared_ptr<const topology::Policy>(
        std::make_shared<topology::Policy>(*std::move(p)));
  }();
  return *policy;
}

topology::ClusterData ParseOrDie(const std::string& text) {
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterText(text);
  if (!data.ok()) {
    std::fprintf(stderr, "cluster: %s\n", data.status().ToString().c_str());
    std::abort();
  }
  return *std::move(data);
}

// Pending pods: 0 = one MIG 1g.10gb, 1 = one time-sliced replica.
std::vector<topology::PodFacts> PendingPods() {
  std::vector<std::string> items;
  for (const std::string& pod : {bench::MigPodJson(), bench::SharedPodJson()}) {
    items.push_back(absl::StrCat(R"({"apiVersion":"v1","kind":"Pod",)", pod.substr(1)));
  }
  return ParseOrDie(absl::StrCat(R"({"apiVersion":"v1","kind":"List","items":[)",
                                 absl::StrJoin(items, ","), "]}"))
      .pods;
}

// A small fleet: node 0 is MIG, 5 time-sliced, 8 exclusive (see bench::KindOf), with their pods.
struct SmallFleet {
  topology::ClusterData data;
  topology::ClusterSnapshot snapshot;
  std::vector<topology::PodFacts> pending;
  std::vector<topology::GpuDemand> demand;
  std::vector<topology::PodContext> context;
};

const SmallFleet& Fleet() {
  static SmallFleet* fleet = [] {
    auto* f = new SmallFleet;
    f->data = ParseOrDie(bench::ClusterListJson(10));
    f->snapshot = topology::BuildSnapshot(f->data, common::BuiltinCatalog(), *BenchPolicy());
    f->pending = PendingPods();
    for (const topology::PodFacts& pod : f->pending) {
      absl::StatusOr<topology::GpuDemand> d = topology::ComputeDemand(pod, *BenchPolicy());
      absl::StatusOr<topology::PodContext> c = topology::MakePodContext(
          pod, *BenchPolicy(), f->snapshot.NamespaceLabels(pod.namespace_name));
      if (!d.ok() || !c.ok()) std::abort();
      f->demand.push_back(*d);
      f->context.push_back(*c);
    }
    return f;
  }();
  return *fleet;
}

const char* kKindNames[] = {"mig", "", "", "", "", "timesliced", "", "", "exclusive"};
const char* kPodNames[] = {"mig_pod", "shared_pod"};

void BM_Fit(benchmark::State& state) {
  const SmallFleet& f = Fleet();
  int node = static_cast<int>(state.range(0)), pod = static_cast<int>(state.range(1));
  const topology::NodeState* n = f.snapshot.FindNode(bench::NodeName(node));
  if (!n) return state.SkipWithError("node missing");
  bool fits = false;
  for (auto _ : state) {
    topology::FitResult r = topology::Fit(f.demand[pod], f.context[pod], n->supply, n->occupancy);
    fits = r.fits();
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(absl::StrCat(kKindNames[node], " node, ", kPodNames[pod],
                              fits ? " (fits)" : " (does not fit)"));
}
BENCHMARK(BM_Fit)->ArgsProduct({{0, 5, 8}, {0, 1}});

void BM_Score(benchmark::State& state) {
  const SmallFleet& f = Fleet();
  int node = static_cast<int>(state.range(0)), pod = static_cast<int>(state.range(1));
  const topology::NodeState* n = f.snapshot.FindNode(bench::NodeName(node));
  if (!n) return state.SkipWithError("node missing");
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        topology::Score(f.demand[pod], f.context[pod], n->supply, n->occupancy));
  }
  state.SetLabel(absl::StrCat(kKindNames[node], " node, ", kPodNames[pod]));
}
BENCHMARK(BM_Score)->ArgsProduct({{0, 5, 8}, {0, 1}});

void BM_QuantityParse(benchmark::State& state) {
  const char* inputs[] = {"1.5Gi", "100m", "81559", "2064384Mi", "3463790064Ki", "16"};
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(topology::Quantity::Parse(inputs[i++ % 6]));
  }
}
BENCHMARK(BM_QuantityParse);

// The 5,000-node, 150,000-pod state, loaded once.
struct BigState {
  std::unique_ptr<kube::ClusterState> state;
  std::vector<topology::PodFacts> events;  // bound GPU pods, one per MIG node
  double rss_mb = 0;
  double rss_before_mb = 0;
};

BigState& Big() {
  static BigState* big = [] {
    auto* b = new BigState;
    b->rss_before_mb = RssMb();
    {
      topology::ClusterData data = ParseOrDie(bench::ClusterListJson(kBigNodes));
      // Pods to add: copies of bound MIG pods with fresh uids, spread over MIG nodes.
      for (const topology::PodFacts& p : data.pods) {
        if (b->events.size() >= 512) break;
        if (bench::KindOf(static_cast<int>(&p - data.pods.data()) / bench::kPodsPerNode) !=
            bench::NodeKind::kMig)
          continue;
        if (p.namespace_name != "research") continue;
        topology::PodFacts e = p;
        e.uid = absl::StrCat("event-", b->events.size());
        e.name = e.uid;
        b->events.push_back(std::move(e));
      }
      b->state = std::make_unique<kube::ClusterState>(common::BuiltinCatalog());
      b->state->SetPolicy(BenchPolicy());
      b->state->ReplaceAll(std::move(data));
    }
    malloc_trim(0);  // the parsed text and ClusterData are gone; count what the state holds
    b->rss_mb = RssMb();
    std::printf(
        "RSS with %d nodes and %d pods loaded in kube::ClusterState: %.1f MB (process before "
        "loading: %.1f MB)\n",
        kBigNodes, kBigNodes * bench::kPodsPerNode, b->rss_mb, b->rss_before_mb);
    std::fflush(stdout);
    if (!b->state->Current() || b->state->Current()->snapshot->node_count() != kBigNodes)
      std::abort();
    return b;
  }();
  return *big;
}

// One watch event (a bound GPU pod appears) through to a published snapshot. The pod is deleted
// again outside the timed region so the state does not grow.
void BM_PublishAfterPodEvent(benchmark::State& state) {
  BigState& b = Big();
  size_t i = 0;
  uint64_t before = b.state->counters().publications;
  for (auto _ : state) {
    const topology::PodFacts& pod = b.events[i++ % b.events.size()];
    auto t0 = std::chrono::steady_clock::now();
    b.state->UpsertPod(pod);
    auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    b.state->DeletePod(pod.uid);
  }
  uint64_t published = b.state->counters().publications - before;
  if (published < static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("an event did not publish a snapshot");
  state.counters["rss_mb"] = b.rss_mb;
  state.counters["nodes"] = kBigNodes;
  state.counters["pods"] = kBigNodes * bench::kPodsPerNode;
}
BENCHMARK(BM_PublishAfterPodEvent)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The contract guard's share of one watch event (guard/ledger.h): after the event above is
// published, the ledger judges what changed since the last snapshot it saw. Compared with
// BM_PublishAfterPodEvent, the watch's own cost for the same event. Applying and removing the
// event, and the ledger's update after the removal, are outside the timed region.
void BM_GuardAfterPodEvent(benchmark::State& state) {
  BigState& b = Big();
  guard::ContractLedger ledger;
  std::shared_ptr<const topology::ModelState> start = b.state->Current();
  ledger.Update(start->snapshot, start->policy, 0, /*full=*/true);
  size_t i = 0;
  size_t judged = 0;
  for (auto _ : state) {
    const topology::PodFacts& pod = b.events[i++ % b.events.size()];
    b.state->UpsertPod(pod);
    std::shared_ptr<const topology::ModelState> after = b.state->Current();
    auto t0 = std::chrono::steady_clock::now();
    judged += ledger.Update(after->snapshot, after->policy, 1, /*full=*/false).judged;
    auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    b.state->DeletePod(pod.uid);
    std::shared_ptr<const topology::ModelState> gone = b.state->Current();
    ledger.Update(gone->snapshot, gone->policy, 2, /*full=*/false);
  }
  state.counters["judged_per_event"] =
      static_cast<double>(judged) / static_cast<double>(state.iterations());
  state.counters["violations"] = static_cast<double>(ledger.size());
}
BENCHMARK(BM_GuardAfterPodEvent)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Everything judged again: at start, after a policy reload, and on the periodic pass.
void BM_GuardFullPass(benchmark::State& state) {
  BigState& b = Big();
  std::shared_ptr<const topology::ModelState> now = b.state->Current();
  guard::ContractLedger ledger;
  size_t judged = 0;
  for (auto _ : state) judged = ledger.Update(now->snapshot, now->policy, 0, /*full=*/true).judged;
  state.counters["judged"] = static_cast<double>(judged);
  state.counters["contract_pods"] = static_cast<double>(now->snapshot->contract_pods().size());
}
BENCHMARK(BM_GuardFullPass)->Unit(benchmark::kMillisecond);

// Baseline: copying the 5,000-entry node map, the least a publish that copies the cluster pays.
void BM_BaselineCopyNodeMap(benchmark::State& state) {
  BigState& b = Big();
  absl::flat_hash_map<std::string, std::shared_ptr<const topology::NodeState>> map;
  std::shared_ptr<const topology::ModelState> current = b.state->Current();
  for (const std::string& name : current->snapshot->SortedNodeNames()) {
    map[name] = current->snapshot->FindNodeShared(name);
  }
  for (auto _ : state) {
    auto copy = map;
    benchmark::DoNotOptimize(copy);
  }
  state.counters["nodes"] = static_cast<double>(map.size());
}
BENCHMARK(BM_BaselineCopyNodeMap)->Unit(benchmark::kMicrosecond);

// A periodic relist of every pod at 5,000 nodes / 150,000 pods that finds nothing changed. Each
// listed item is parsed and compared with what the state holds, all under the state's lock, so
// this is also the longest a bind waits for a relist. Baseline: parsing the same items alone.
const common::JsonValue& ListedPods() {
  static auto* list = [] {
    std::string text = R"({"apiVersion":"v1","kind":"PodList","items":[)";
    for (int i = 0; i < kBigNodes; ++i) {
      for (const std::string& pod : bench::PodsJson(i)) absl::StrAppend(&text, pod, ",");
    }
    text.back() = ']';
    text += "}";
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
    if (!doc.ok()) {
      std::fprintf(stderr, "pod list: %s\n", doc.status().ToString().c_str());
      std::abort();
    }
    return new rapidjson::Document(*std::move(doc));
  }();
  return (*list)["items"];
}

void BM_QuietPodRelist(benchmark::State& state) {
  BigState& b = Big();
  const common::JsonValue& items = ListedPods();
  const uint64_t corrections = b.state->counters().resync_corrections;
  size_t unreadable = 0;
  for (auto _ : state) {
    b.state->ReplacePods([&](kube::ClusterState::PodSink offer) {
      for (const common::JsonValue& item : items.GetArray()) {
        absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(item);
        if (pod.ok())
          offer(*std::move(pod));
        else
          ++unreadable;
      }
    });
  }
  if (unreadable > 0) return state.SkipWithError("a listed pod did not parse");
  if (b.state->counters().resync_corrections != corrections)
    state.SkipWithError("the relist changed the state");
  state.counters["pods"] = items.Size();
}
BENCHMARK(BM_QuietPodRelist)->Unit(benchmark::kMillisecond);

void BM_BaselineParseListedPods(benchmark::State& state) {
  const common::JsonValue& items = ListedPods();
  for (auto _ : state) {
    for (const common::JsonValue& item : items.GetArray())
      benchmark::DoNotOptimize(wire::ParsePod(item));
  }
  state.counters["pods"] = items.Size();
}
BENCHMARK(BM_BaselineParseListedPods)->Unit(benchmark::kMillisecond);

// What a /metrics scrape adds at 5,000 nodes / 150,000 pods: the per-tenant allocations and
// the per-pool inventory, computed from the published state and written as Prometheus text. It
// runs on the operator port's handler thread, never in front of a probe. Baseline: visiting
// every pod hold once and summing its memory, the least any per-tenant accounting reads.
void BM_MetricsScrape(benchmark::State& state) {
  std::shared_ptr<const topology::ModelState> current = Big().state->Current();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    common::MetricsText text(out);
    extender::AppendInventoryMetrics(*current, text);
    extender::AppendTenantMetrics(extender::Allocations(*current), text);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsScrape)->Unit(benchmark::kMillisecond);

void BM_BaselineVisitPodHolds(benchmark::State& state) {
  std::shared_ptr<const topology::ModelState> current = Big().state->Current();
  size_t holds = 0;
  for (auto _ : state) {
    int64_t memory = 0;
    holds = 0;
    current->snapshot->ForEachNode([&](const topology::NodeState& node) {
      for (const auto& hold : node.holds) memory += hold->demand.memory_mib;
      holds += node.holds.size();
    });
    benchmark::DoNotOptimize(memory);
  }
  state.counters["holds"] = static_cast<double>(holds);
}
BENCHMARK(BM_BaselineVisitPodHolds)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Whole decisions without HTTP, each next to parsing the same bytes. Extender: range(0) is the pod
// (0 = MIG, 1 = shared), range(1) the cluster size; 500 candidate names, node i % size (at 5,000
// nodes the first 500: half MIG, 30% time-sliced, 20% exclusive; at 100 nodes every node five
// times, so the model's data stays in cache and the difference to 5,000 is memory latency).

constexpr int kCandidates = 500;

const std::string& ExtenderArgsBody(int pod, int nodes) {
  static auto* bodies = new std::map<std::pair<int, int>, std::string>;
  std::string& body = (*bodies)[{pod, nodes}];
  if (body.empty()) {
    std::vector<std::string> names;
    for (int i = 0; i < kCandidates; ++i)
      names.push_back(absl::StrCat("\"", bench::NodeName(i % nodes), "\""));
    body = absl::StrCat(R"({"Pod":)", pod == 0 ? bench::MigPodJson() : bench::SharedPodJson(),
                        R"(,"Nodes":null,"NodeNames":[)", absl::StrJoin(names, ","), "]}");
  }
  return body;
}

// The model state the extender reads: the big state for 5,000 nodes, else a fresh one.
std::shared_ptr<const topology::ModelState> ModelFor(int nodes) {
  if (nodes == kBigNodes) return Big().state->Current();
  static auto* states = new std::map<int, std::unique_ptr<kube::ClusterState>>;
  std::unique_ptr<kube::ClusterState>& s = (*states)[nodes];
  if (!s) {
    s = std::make_unique<kube::ClusterState>(common::BuiltinCatalog());
    s->SetPolicy(BenchPolicy());
    s->ReplaceAll(ParseOrDie(bench::ClusterListJson(nodes)));
  }
  return s->Current();
}

void ExtenderArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"pod", "nodes"})
      ->ArgsProduct({{0, 1}, {100, kBigNodes}})
      ->Unit(benchmark::kMicrosecond);
}

void BM_ExtenderParseOnly(benchmark::State& state) {
  const std::string& body =
      ExtenderArgsBody(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(common::ParseJson(body));
  state.SetLabel(absl::StrCat(kPodNames[state.range(0)], ", 500 names, baseline"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ExtenderParseOnly)->Apply(ExtenderArgs);

template <bool kPrioritize>
void BM_ExtenderVerb(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(1));
  std::shared_ptr<const topology::ModelState> model = ModelFor(nodes);
  if (!model) return state.SkipWithError("no model state");
  const std::string& body = ExtenderArgsBody(static_cast<int>(state.range(0)), nodes);
  int kept = 0;
  for (auto _ : state) {
    extender::VerbReply r =
        kPrioritize ? extender::Prioritize(body, model.get()) : extender::Filter(body, model.get());
    if (r.http_status != 200) return state.SkipWithError(r.body.c_str());
    kept = r.kept;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(
      absl::StrCat(kPodNames[state.range(0)], ", 500 names of ", nodes, " nodes, ", kept, " fit"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
void BM_ExtenderFilter(benchmark::State& state) { BM_ExtenderVerb<false>(state); }
void BM_ExtenderPrioritize(benchmark::State& state) { BM_ExtenderVerb<true>(state); }
BENCHMARK(BM_ExtenderFilter)->Apply(ExtenderArgs);
BENCHMARK(BM_ExtenderPrioritize)->Apply(ExtenderArgs);

// The filter for a tenant with a quota (every item set, none reached): the same snapshot read
// with a policy that differs only in research's quota, so the cost over BM_ExtenderFilter in
// the same run is the tenant's holdings plus one quota check per node that fits.
void BM_ExtenderFilterWithQuota(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(1));
  std::shared_ptr<const topology::ModelState> model = ModelFor(nodes);
  if (!model) return state.SkipWithError("no model state");
  auto policy = std::make_shared<topology::Policy>(*model->policy);
  for (topology::Tenant& t : policy->tenants) {
    if (t.name != "research") continue;
    t.quota.gpus = 1000000;
    t.quota.mig_instances = {{"1g.10gb", 1000000}, {"3g.40gb", 1000000}};
    t.quota.mig_compute_slices = 1000000;
    t.quota.shared_replicas = 1000000;
    t.quota.gpu_memory_mib = 1000000;
    t.quota.gpu_pods = 1000000;
  }
  topology::ModelState with_quota = *model;
  with_quota.policy = policy;
  const std::string& body = ExtenderArgsBody(static_cast<int>(state.range(0)), nodes);
  int kept = 0;
  for (auto _ : state) {
    extender::VerbReply r = extender::Filter(body, &with_quota);
    if (r.http_status != 200) return state.SkipWithError(r.body.c_str());
    kept = r.kept;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(absl::StrCat(kPodNames[state.range(0)], ", 500 names of ", nodes, " nodes, ", kept,
                              " fit, tenant quota"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ExtenderFilterWithQuota)->Apply(ExtenderArgs);

const std::string& ReviewBody() {
  static const std::string* body = new std::string(bench::AdmissionReviewJson());
  return *body;
}

void BM_WebhookParseOnly(benchmark::State& state) {
  const std::string& body = ReviewBody();
  for (auto _ : state) benchmark::DoNotOptimize(common::ParseJson(body));
  state.SetLabel("20 KB AdmissionReview, baseline");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_WebhookParseOnly)->Unit(benchmark::kMicrosecond);

void BM_WebhookReview(benchmark::State& state) {
  const SmallFleet& f = Fleet();
  const std::string& body = ReviewBody();
  const auto kind =
      state.range(0) == 0 ? webhook::ReviewKind::kValidate : webhook::ReviewKind::kMutate;
  bool allowed = false;
  for (auto _ : state) {
    webhook::ReviewOutcome r = webhook::Review(body, kind, *BenchPolicy(), f.snapshot);
    if (r.http_status != 200) return state.SkipWithError(r.body.c_str());
    allowed = r.allowed;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(absl::StrCat(state.range(0) == 0 ? "validate" : "mutate", ", 20 KB pod, ",
                              allowed ? "allowed" : "denied"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_WebhookReview)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
