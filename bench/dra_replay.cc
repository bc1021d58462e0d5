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
//   dynamic_mig   instead, nodes of 8 H100s published as NVIDIA's DynamicMIG does: per GPU the
//                 whole GPU and every MIG placement of the catalog, drawing on the GPU's memory
//                 slice counters; the claims take 1g.10gb placements, so each event on such a
//                 node also recounts the devices the held ones block
// Per-event CPU should not grow with the devices (10,000 vs 40,000) or with the claims already
// held (10,000 vs 30,000, in 32 other namespaces); bench/run.sh runs these in a process of
// their own, five times, and divides the medians by the baselines measured in the same run.
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "bench/synthetic.h"
#include "benchmark/benchmark.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "kube/cluster_state.h"
#include "topology/catalog.h"
#include "topology/dra/model.h"
#include "topology/dra/store.h"
#include "wire/dra_codec.h"

namespace dra_replay {

constexpr int kGpusPerNode = 20;
constexpr int kClaims = 1000;

std::string NodeName(int n) { return absl::StrCat("dra-node-", n); }

// Node n's slice of NVIDIA's driver, without devices yet.
topology::DraSlice EmptySlice(int n) {
  topology::DraSlice s;
  s.name = NodeName(n) + "-gpu.nvidia.com";
  s.driver = "gpu.nvidia.com";
  s.pool = NodeName(n);
  s.node = NodeName(n);
  s.generation = 1;
  return s;
}

// A device of `s` with its type, as a type attribute too.
topology::DraDevice SliceDevice(const topology::DraSlice& s, std::string name,
                                const std::string& type) {
  topology::DraDevice d;
  d.driver = s.driver;
  d.pool = s.pool;
  d.node = s.node;
  d.name = std::move(name);
  d.type = type;
  d.attributes["gpu.nvidia.com/type"] = topology::DraAttribute::String(type);
  return d;
}

topology::DraSlice GpuSlice(int n) {
  topology::DraSlice s = EmptySlice(n);
  for (int i = 0; i < kGpusPerNode; ++i) {
    topology::DraDevice d = SliceDevice(s, absl::StrCat("gpu-", i), "gpu");
    d.uuid = absl::StrCat("GPU-", n, "-", i);
    d.product = "NVIDIA H100 80GB HBM3";
    d.memory_mib = 81559;
    d.attributes["gpu.nvidia.com/uuid"] = topology::DraAttribute::String(d.uuid);
    d.attributes["gpu.nvidia.com/productName"] = topology::DraAttribute::String(d.product);
    s.devices.push_back(std::move(d));
  }
  return s;
}

constexpr int kMigGpusPerNode = 8;
constexpr int kSmallPlacementsPerGpu = 7;  // an H100's 1g.10gb placements

std::string SmallPlacement(int k) {
  return absl::StrCat("gpu-", k / kSmallPlacementsPerGpu, "-mig-1g.10gb-",
                      k % kSmallPlacementsPerGpu);
}

// A node of 8 H100s as DynamicMIG publishes them: per GPU a counter set of its memory slices,
// the whole GPU taking all of them, and one device per placement of each catalog profile
// (media-extension profiles left out).
topology::DraSlice DynamicMigSlice(int n) {
  const topology::GpuModel* model = common::BuiltinCatalog().FindModel("H100-80GB");
  if (model == nullptr) std::abort();
  topology::DraSlice s = EmptySlice(n);
  auto device = [&](std::string name, const std::string& type, const std::string& set,
                    int first_slice, int slices) {
    topology::DraDevice d = SliceDevice(s, std::move(name), type);
    topology::DraCounters takes;
    for (int i = first_slice; i < first_slice + slices; ++i) {
      takes[absl::StrCat("memory-slice-", i)] = topology::Quantity::FromUnits(1);
    }
    d.consumes_counters = {{set, std::move(takes)}};
    s.devices.push_back(std::move(d));
  };
  for (int g = 0; g < kMigGpusPerNode; ++g) {
    const std::string set = absl::StrCat("gpu-", g, "-counter-set");
    topology::DraCounters all;
    for (int i = 0; i < model->memory_slices; ++i) {
      all[absl::StrCat("memory-slice-", i)] = topology::Quantity::FromUnits(1);
    }
    s.shared_counters.push_back({set, all});
    device(absl::StrCat("gpu-", g), "gpu", set, 0, model->memory_slices);
    for (const topology::MigProfile& profile : model->profiles) {
      if (profile.name.find('+') != std::string::npos) continue;
      for (int start : profile.placements) {
        device(absl::StrCat("gpu-", g, "-mig-", profile.name, "-", start), "mig", set, start,
               profile.memory_slices);
      }
    }
  }
  return s;
}

int DevicesPerNode(bool dynamic_mig) {
  return dynamic_mig ? static_cast<int>(DynamicMigSlice(0).devices.size()) : kGpusPerNode;
}

// One claim's four watch lines, as kube-apiserver sends them for a pod's own claim.
std::vector<std::string> ClaimEvents(int index, int nodes, bool dynamic_mig) {
  const std::string name = absl::StrCat("job-", index, "-gpu");
  const std::string ns = absl::StrCat("team-", index % 16);
  const std::string node = NodeName(index % nodes);
  const std::string device =
      dynamic_mig ? SmallPlacement((index / nodes) % (kMigGpusPerNode * kSmallPlacementsPerGpu))
                  : absl::StrCat("gpu-", (index / nodes) % kGpusPerNode);
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
  topology::DraStore store;
  std::vector<std::string> events;  // in replay order
};

std::shared_ptr<const topology::Policy> Policy() {
  absl::StatusOr<topology::Policy> p = common::LoadPolicy(bench::PermissivePolicyYaml());
  if (!p.ok()) std::abort();
  return std::make_shared<topology::Policy>(*std::move(p));
}

// `devices` devices on nodes of 20 GPUs (or of 8 DynamicMIG GPUs), with `held` claims
// allocated before the replay.
Cluster& ClusterOf(int devices, int held, bool dynamic_mig) {
  static std::vector<std::pair<std::tuple<int, int, bool>, Cluster*>> made;
  for (auto& [key, cluster] : made) {
    if (key == std::make_tuple(devices, held, dynamic_mig)) return *cluster;
  }
  auto* c = new Cluster;
  const int nodes = devices / DevicesPerNode(dynamic_mig);
  std::vector<topology::DraSlice> slices;
  std::vector<topology::NodeFacts> node_facts;
  for (int n = 0; n < nodes; ++n) {
    slices.push_back(dynamic_mig ? DynamicMigSlice(n) : GpuSlice(n));
    node_facts.push_back(
        {NodeName(n), {{"kubernetes.io/hostname", NodeName(n)}}, {}, {}, std::nullopt});
  }
  c->store.ReplaceSlices(std::move(slices));
  c->store.ReplaceClasses(
      {{"gpu.nvidia.com",
        {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
        "nvidia.com/gpu"}});
  // Held claims take the devices the replay does not use (the replay's claims use the first
  // kClaims / nodes GPUs, or 1g.10gb placements, of each node).
  const int small = kMigGpusPerNode * kSmallPlacementsPerGpu;
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
                      dynamic_mig
                          ? SmallPlacement(small - 1 - (i / nodes) % small)
                          : absl::StrCat("gpu-", kGpusPerNode - 1 - (i / nodes) % kGpusPerNode)}};
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
    for (std::string& e : ClaimEvents(i, nodes, dynamic_mig)) c->events.push_back(std::move(e));
  }
  made.emplace_back(std::make_tuple(devices, held, dynamic_mig), c);
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
    absl::StatusOr<topology::DraClaim> claim = wire::ParseResourceClaim(*object);
    if (!claim.ok()) std::abort();
    benchmark::DoNotOptimize(c.store.UpsertClaim(*std::move(claim)));
  }
  c.state.ReplaceDra(c.store.Build());
}

void Label(benchmark::State& state, const Cluster& c) {
  state.counters["devices"] = static_cast<double>(state.range(0));
  state.counters["held_claims"] = static_cast<double>(state.range(1));
  state.counters["dynamic_mig"] = static_cast<double>(state.range(2));
  state.counters["events"] = static_cast<double>(c.events.size());
}

Cluster& ClusterOf(const benchmark::State& state) {
  return ClusterOf(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                   state.range(2) != 0);
}

void BM_DraWatchReplay(benchmark::State& state) {
  Cluster& c = ClusterOf(state);
  size_t i = 0;
  for (auto _ : state) Apply(c, c.events[i++ % c.events.size()]);
  // A whole number of cycles leaves the state as it was, for the next run.
  while (i % c.events.size() != 0) Apply(c, c.events[i++ % c.events.size()]);
  Label(state, c);
}

void BM_BaselineParseWatchLine(benchmark::State& state) {
  Cluster& c = ClusterOf(state);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ParseLine(c.events[i++ % c.events.size()]));
  }
  Label(state, c);
}

void BM_BaselineDecodeWatchLine(benchmark::State& state) {
  Cluster& c = ClusterOf(state);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<rapidjson::Document> doc = ParseLine(c.events[i++ % c.events.size()]);
    benchmark::DoNotOptimize(wire::ParseResourceClaim(*common::FindMember(*doc, "object")));
  }
  Label(state, c);
}

#define DRA_REPLAY_ARGS                        \
  ArgNames({"devices", "held", "dynamic_mig"}) \
      ->Args({10000, 0, 0})                    \
      ->Args({40000, 0, 0})                    \
      ->Args({40000, 10000, 0})                \
      ->Args({40000, 30000, 0})                \
      ->Args({40000, 0, 1})                    \
      ->Args({40000, 10000, 1})
BENCHMARK(BM_BaselineParseWatchLine)->DRA_REPLAY_ARGS;
BENCHMARK(BM_BaselineDecodeWatchLine)->DRA_REPLAY_ARGS;
BENCHMARK(BM_DraWatchReplay)->DRA_REPLAY_ARGS;

}  // namespace dra_replay
