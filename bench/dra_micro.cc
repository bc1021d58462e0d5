// micro_bench, DRA part: what one resource.k8s.io watch event costs before the snapshot that
// shows it is published. kube/dra_source applies the event to its DraStore and rebuilds the
// whole DraState (topology::MakeDraState: current devices, the device index, quota usage per
// namespace, and per node and class the devices the class's CEL selectors match).
//   DRA claim event   DraStore::UpsertClaim of a claim flipping between allocated and not, then
//                     Build(), at 500 and 2,000 nodes of 8 MIG devices (1g.10gb ... 7g.80gb
//                     alike) with every other device held by a claim, and the NVIDIA chart's
//                     two classes (gpu.nvidia.com, mig.nvidia.com)
//   baseline          copying the store's devices once: the least any rebuild of one value
//                     pays (counter `ratio` in the report divides by it)
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "topology/dra/model.h"
#include "topology/dra/store.h"

namespace dra_micro {

constexpr int kDevicesPerNode = 8;

topology::DraDevice MigDevice(const std::string& node, int index) {
  static const char* kProfiles[] = {"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"};
  topology::DraDevice d;
  d.driver = "gpu.nvidia.com";
  d.pool = node;
  d.node = node;
  d.name = absl::StrCat("gpu-", index / 4, "-mig-", index);
  d.type = "mig";
  d.profile = kProfiles[index % 4];
  d.uuid = absl::StrCat("MIG-", node, "-", index);
  d.attributes["gpu.nvidia.com/type"] = topology::DraAttribute::String("mig");
  d.attributes["gpu.nvidia.com/profile"] = topology::DraAttribute::String(d.profile);
  d.attributes["gpu.nvidia.com/uuid"] = topology::DraAttribute::String(d.uuid);
  d.attributes["gpu.nvidia.com/productName"] =
      topology::DraAttribute::String("NVIDIA H100 80GB HBM3");
  return d;
}

topology::DraClaim Claim(const std::string& node, int index, bool allocated) {
  topology::DraClaim c;
  c.namespace_name = absl::StrCat("team-", index % 16);
  c.name = absl::StrCat(node, "-claim-", index);
  c.uid = absl::StrCat(c.name, "-uid");
  topology::DraRequest r;
  r.name = "mig";
  r.device_class = "mig.nvidia.com";
  c.requests = {r};
  c.device_classes = {"mig.nvidia.com"};
  c.allocated = allocated;
  if (allocated) {
    c.allocated_node = node;
    c.results = {{"mig", "gpu.nvidia.com", node, MigDevice(node, index).name}};
    c.reserved_for = {{"pods", c.name + "-pod", c.name + "-pod-uid"}};
  }
  return c;
}

struct Fleet {
  topology::DraStore store;
  topology::DraClaim flipping;  // a held claim, allocated and released in turn
  size_t devices = 0;
};

Fleet& FleetOf(int nodes) {
  static std::vector<std::pair<int, Fleet*>> made;
  for (auto& [n, fleet] : made) {
    if (n == nodes) return *fleet;
  }
  auto* fleet = new Fleet;
  std::vector<topology::DraSlice> slices;
  std::vector<topology::DraClaim> claims;
  for (int n = 0; n < nodes; ++n) {
    const std::string node = absl::StrCat("node-", n);
    topology::DraSlice s;
    s.name = node + "-gpu.nvidia.com";
    s.driver = "gpu.nvidia.com";
    s.pool = node;
    s.node = node;
    s.generation = 1;
    for (int i = 0; i < kDevicesPerNode; ++i) {
      s.devices.push_back(MigDevice(node, i));
      if (i % 2 == 0) claims.push_back(Claim(node, i, true));
    }
    fleet->devices += s.devices.size();
    slices.push_back(std::move(s));
  }
  fleet->flipping = claims.front();
  fleet->store.ReplaceSlices(std::move(slices));
  fleet->store.ReplaceClaims(std::move(claims));
  fleet->store.ReplaceClasses(
      {{"gpu.nvidia.com",
        {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
        "nvidia.com/gpu"},
       {"mig.nvidia.com",
        {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"},
        ""}});
  made.emplace_back(nodes, fleet);
  return *fleet;
}

void BM_DraClaimEvent(benchmark::State& state) {
  Fleet& fleet = FleetOf(static_cast<int>(state.range(0)));
  bool allocated = true;
  for (auto _ : state) {
    topology::DraClaim c = fleet.flipping;
    allocated = !allocated;
    if (!allocated) {
      c.allocated = false;
      c.allocated_node.clear();
      c.results.clear();
      c.reserved_for.clear();
    }
    benchmark::DoNotOptimize(fleet.store.UpsertClaim(std::move(c)));
    std::shared_ptr<const topology::DraState> built = fleet.store.Build();
    benchmark::DoNotOptimize(built);
  }
  state.counters["nodes"] = static_cast<double>(state.range(0));
  state.counters["devices"] = static_cast<double>(fleet.devices);
}
BENCHMARK(BM_DraClaimEvent)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_BaselineCopyDraDevices(benchmark::State& state) {
  Fleet& fleet = FleetOf(static_cast<int>(state.range(0)));
  const std::vector<topology::DraDevice> devices = fleet.store.Build()->devices();
  for (auto _ : state) {
    std::vector<topology::DraDevice> copy = devices;
    benchmark::DoNotOptimize(copy);
  }
  state.counters["devices"] = static_cast<double>(devices.size());
}
BENCHMARK(BM_BaselineCopyDraDevices)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);

}  // namespace dra_micro
