// micro_bench, DRA watch replay: what one ResourceClaim watch event costs the live state, from
// the event's bytes to the published model, next to parsing the same bytes.
//   cluster       nodes of 20 whole GPUs in ResourceSlices (NVIDIA's gpu.nvidia.com class), a
//                 policy and the Node objects loaded in a kube::ClusterState; optionally
//                 claims allocated before the replay starts
//   events        1,000 claims, each ADDED, MODIFIED (allocated on its node), MODIFIED
//                 (reserved for its pod) and DELETED, as watch lines of the v1 shape; the cycle
//                 leaves the state as it found it, so every pass costs the same
//   replay        what kube/reflector and kube/dra_source do per event: parse the line in place
//                 into a reused 64 KiB buffer, decode the claim, apply it to the DraStore,
//                 Build, publish with ClusterState::ReplaceDra (the audit log is off: its cost
//                 is the file write)
//   baselines     the same parse of the line alone, and that plus decoding the claim
// Per-event CPU should not grow with the devices (10,000 vs 40,000) or with the claims already
// held (10,000 vs 30,000, in 32 other namespaces); bench/run.sh runs these in a process of
// their own, five times, and divides the medians by the baselines measured in the same run.
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "bench/synthetic.h"
#include "benchmark/benchmark.h"
#include "common/config_loader.h"
#include "common/dra_codec.h"
#include "common/json.h"
#include "kube/cluster_state.h"
#include "kube/dra_store.h"
#include "topology/dra.h"

namespace dra_replay {

constexpr int kGpusPerNode = 20;
constexpr int kClaims = 1000;

std::string NodeName(int n) { return absl::StrCat("dra-node-", n); }

topology::DraSlice GpuSlice(int n) {
  topology::DraSlice s;
  s.name = NodeName(n) + "-gpu.nvidia.com";
  s.driver = "gpu.nvidia.com";
  s.pool = NodeName(n);
  s.node = NodeName(n);
  s.generation = 1;
  for (int i = 0; i < kGpusPerNode; ++i) {
    topology::DraDevice d;
    d.driver = s.driver;
    d.pool = s.pool;
    d.node = s.node;
    d.name = absl::StrCat("gpu-", i);
    d.type = "gpu";
    d.uuid = absl::StrCat("GPU-", n, "-", i);
    d.product = "NVIDIA H100 80GB HBM3";
    d.memory_mib = 81559;
    d.attributes["gpu.nvidia.com/type"] = topology::DraAttribute::String("gpu");
    d.attributes["gpu.nvidia.com/uuid"] = topology::DraAttribute::String(d.uuid);
    d.attributes["gpu.nvidia.com/productName"] = topology::DraAttribute::String(d.product);
    s.devices.push_back(std::move(d));
  }
  return s;
}

// One claim's four watch lines, as kube-apiserver sends them for a pod's own claim.
std::vector<std::string> ClaimEvents(int index, int nodes) {
  const std::string name = absl::StrCat("job-", index, "-gpu");
  const std::string ns = absl::StrCat("team-", index % 16);
  const std::string node = NodeName(index % nodes);
  const std::string device = absl::StrCat("gpu-", (index / nodes) % kGpusPerNode);
  const std::string meta = absl::Substitute(
      R"("metadata":{"name":"$0","namespace":"$1","uid":"$0-uid","resourceVersion":"$2",)"
      R"("creationTimestamp":"2026-12-01T19:48:35Z",)"
      R"("finalizers":["resource.kubernetes.io/delete-protection"]})",
      name, ns, 1000 + index);
  const std::string spec =
      R"("spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":)"
      R"("gpu.nvidia.com","allocationMode":"ExactCount","count":1}}]}})";
  const std::string allocation = absl::Substitute(
      R"("allocation":{"allocationTimestamp":"2026-12-01T19:48:36Z","devices":{"results":)"
      R"([{"request":"gpu","driver":"gpu.nvidia.com","pool":"$0","device":"$1"}]},)"
      R"("nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",)"
      R"("operator":"In","values":["$0"]}]}]}})",
      node, device);
  const std::string reserved = absl::Substitute(
      R"("reservedFor":[{"resource":"pods","name":"job-$0","uid":"job-$0-pod-uid"}])", index);
  auto line = [&](const char* type, const std::string& status) {
    return absl::StrCat(R"({"type":")", type,
                        R"(","object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",)",
                        meta, ",", spec, status.empty() ? "" : ",\"status\":{" + status + "}",
                        "}}");
  };
  return {line("ADDED", ""), line("MODIFIED", allocation),
          line("MODIFIED", absl::StrCat(allocation, ",", reserved)),
          line("DELETED", absl::StrCat(allocation, ",", reserved))};
}

struct Cluster {
  kube::ClusterState state{common::BuiltinCatalog()};
  kube::DraStore store;
  std::vector<std::string> events;  // in replay order
};

std::shared_ptr<const topology::Policy> Policy() {
  absl::StatusOr<topology::Policy> p = common::LoadPolicy(bench::PermissivePolicyYaml());
  if (!p.ok()) std::abort();
  return std::make_shared<topology::Policy>(*std::move(p));
}

// `devices` GPUs on devices/20 nodes, with `held` claims allocated before the replay.
Cluster& ClusterOf(int devices, int held) {
  static std::vector<std::pair<std::pair<int, int>, Cluster*>> made;
  for (auto& [key, cluster] : made) {
    if (key == std::make_pair(devices, held)) return *cluster;
  }
  auto* c = new Cluster;
  const int nodes = devices / kGpusPerNode;
  std::vector<topology::DraSlice> slices;
  std::vector<topology::NodeFacts> node_facts;
  for (int n = 0; n < nodes; ++n) {
    slices.push_back(GpuSlice(n));
    node_facts.push_back({NodeName(n), {{"kubernetes.io/hostname", NodeName(n)}}, {}, {}});
  }
  c->store.ReplaceSlices(std::move(slices));
  c->store.ReplaceClasses(
      {{"gpu.nvidia.com",
        {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
        "nvidia.com/gpu"}});
  // Held claims take the devices the replay does not use (the replay's claims use the first
  // kClaims / nodes GPUs of each node).
  std::vector<topology::DraClaim> claims;
  for (int i = 0; i < held; ++i) {
    topology::DraClaim claim;
    claim.namespace_name = absl::StrCat("held-", i % 32);
    claim.name = absl::StrCat("held-", i);
    claim.uid = claim.name + "-uid";
    claim.allocated = true;
    const int n = i % nodes;
    claim.allocated_node = NodeName(n);
    claim.results = {{"gpu", "gpu.nvidia.com", NodeName(n),
                      absl::StrCat("gpu-", kGpusPerNode - 1 - (i / nodes) % kGpusPerNode)}};
    claims.push_back(std::move(claim));
  }
  c->store.ReplaceClaims(std::move(claims));
  c->store.ReplaceTemplates({});
  c->state.SetPolicy(Policy());
  c->state.ReplaceNodes(std::move(node_facts));
  c->state.ReplacePods(std::vector<topology::PodFacts>{});
  c->state.ReplaceNamespaces({});
  c->state.ReplaceDra(c->store.Build());
  if (!c->state.Current()) std::abort();
  for (int i = 0; i < kClaims; ++i) {
    for (std::string& e : ClaimEvents(i, nodes)) c->events.push_back(std::move(e));
  }
  made.emplace_back(std::make_pair(devices, held), c);
  return *c;
}

// The reflector's parse of one watch line: in place, in a buffer kept across events.
absl::StatusOr<rapidjson::Document> ParseLine(const std::string& line) {
  constexpr size_t kEventBufferBytes = 64 << 10;
  static char* const buffer = new char[kEventBufferBytes];
  rapidjson::MemoryPoolAllocator<> pool(buffer, kEventBufferBytes);
  return common::ParseJsonInPlace(line, &pool);
}

// What DraSource's claim handler does with one watch line.
void Apply(Cluster& c, const std::string& line) {
  absl::StatusOr<rapidjson::Document> doc = ParseLine(line);
  if (!doc.ok()) std::abort();
  const common::JsonValue* object = common::FindMember(*doc, "object");
  const absl::string_view type = common::StringOr(*doc, "type");
  if (type == "DELETED") {
    const common::JsonValue* meta = common::FindMember(*object, "metadata");
    benchmark::DoNotOptimize(c.store.DeleteClaim(std::string(common::StringOr(*meta, "namespace")),
                                                 std::string(common::StringOr(*meta, "name"))));
  } else {
    absl::StatusOr<topology::DraClaim> claim = common::ParseResourceClaim(*object);
    if (!claim.ok()) std::abort();
    benchmark::DoNotOptimize(c.store.UpsertClaim(*std::move(claim)));
  }
  c.state.ReplaceDra(c.store.Build());
}

void Label(benchmark::State& state, const Cluster& c) {
  state.counters["devices"] = static_cast<double>(state.range(0));
  state.counters["held_claims"] = static_cast<double>(state.range(1));
  state.counters["events"] = static_cast<double>(c.events.size());
}

void BM_DraWatchReplay(benchmark::State& state) {
  Cluster& c = ClusterOf(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t i = 0;
  for (auto _ : state) Apply(c, c.events[i++ % c.events.size()]);
  // A whole number of cycles leaves the state as it was, for the next run.
  while (i % c.events.size() != 0) Apply(c, c.events[i++ % c.events.size()]);
  Label(state, c);
}

void BM_BaselineParseWatchLine(benchmark::State& state) {
  Cluster& c = ClusterOf(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ParseLine(c.events[i++ % c.events.size()]));
  }
  Label(state, c);
}

void BM_BaselineDecodeWatchLine(benchmark::State& state) {
  Cluster& c = ClusterOf(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<rapidjson::Document> doc = ParseLine(c.events[i++ % c.events.size()]);
    benchmark::DoNotOptimize(common::ParseResourceClaim(*common::FindMember(*doc, "object")));
  }
  Label(state, c);
}

#define DRA_REPLAY_ARGS         \
  ArgNames({"devices", "held"}) \
      ->Args({10000, 0})        \
      ->Args({40000, 0})        \
      ->Args({40000, 10000})    \
      ->Args({40000, 30000})
BENCHMARK(BM_BaselineParseWatchLine)->DRA_REPLAY_ARGS;
BENCHMARK(BM_BaselineDecodeWatchLine)->DRA_REPLAY_ARGS;
BENCHMARK(BM_DraWatchReplay)->DRA_REPLAY_ARGS;

}  // namespace dra_replay
