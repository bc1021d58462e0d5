// Pod demand with Kubernetes' effective-request rules, and GPU memory from resources or the
// annotation.
#include "topology/demand.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

Quantity Q(absl::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.value_or(Quantity());
}

ResourceList Resources(std::initializer_list<std::pair<std::string, std::string>> items) {
  ResourceList out;
  for (const auto& [name, text] : items) out.emplace(name, Q(text));
  return out;
}

ContainerFacts Container(ResourceList requests, ResourceList limits = {},
                         bool restartable = false) {
  ContainerFacts c;
  c.name = "c";
  c.requests = std::move(requests);
  c.limits = std::move(limits);
  c.restartable = restartable;
  return c;
}

PodFacts Pod(std::vector<ContainerFacts> containers, std::vector<ContainerFacts> init = {},
             ResourceList overhead = {}) {
  PodFacts pod;
  pod.namespace_name = "team";
  pod.name = "p";
  pod.containers = std::move(containers);
  pod.init_containers = std::move(init);
  pod.overhead = std::move(overhead);
  return pod;
}

// Effective requests as whole-or-milli text, e.g. {"cpu": "1500m", "nvidia.com/gpu": "2"}.
std::map<std::string, std::string> AsText(const ResourceList& list) {
  std::map<std::string, std::string> out;
  for (const auto& [name, q] : list) out[name] = q.ToString();
  return out;
}

TEST(EffectiveRequestsTest, KubernetesRules) {
  struct Row {
    std::string name;
    PodFacts pod;
    std::map<std::string, std::string> want;
  };
  const std::vector<Row> rows = {
      {"regular containers are summed",
       Pod({Container(Resources({{"cpu", "500m"}, {"nvidia.com/gpu", "1"}})),
            Container(Resources({{"cpu", "1"}, {"nvidia.com/gpu", "2"}}))}),
       {{"cpu", "1500m"}, {"nvidia.com/gpu", "3"}}},
      {"limits-only resources count as requests",
       Pod({Container({}, Resources({{"nvidia.com/mig-1g.10gb", "1"}}))}),
       {{"nvidia.com/mig-1g.10gb", "1"}}},
      {"explicit requests win over limits",
       Pod({Container(Resources({{"cpu", "1"}}), Resources({{"cpu", "2"}}))}),
       {{"cpu", "1"}}},
      {"init containers count by maximum, not sum",
       Pod({Container(Resources({{"nvidia.com/gpu", "1"}}))},
           {Container(Resources({{"nvidia.com/gpu", "2"}})),
            Container(Resources({{"nvidia.com/gpu", "3"}}))}),
       {{"nvidia.com/gpu", "3"}}},
      {"init maximum below the regular sum does not matter",
       Pod({Container(Resources({{"nvidia.com/gpu", "2"}})),
            Container(Resources({{"nvidia.com/gpu", "2"}}))},
           {Container(Resources({{"nvidia.com/gpu", "3"}}))}),
       {{"nvidia.com/gpu", "4"}}},
      {"a resource only an init container asks for",
       Pod({Container(Resources({{"cpu", "1"}}))},
           {Container(Resources({{"nvidia.com/gpu", "1"}}))}),
       {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
      {"restartable init container (sidecar) is added",
       Pod({Container(Resources({{"nvidia.com/gpu.shared", "1"}}))},
           {Container(Resources({{"nvidia.com/gpu.shared", "1"}}), {}, /*restartable=*/true)}),
       {{"nvidia.com/gpu.shared", "2"}}},
      {"sidecar runs beside later init containers",
       // init peak = sidecar 1 + init 2 = 3; steady state = sidecar 1 + main 1 = 2.
       Pod({Container(Resources({{"nvidia.com/gpu", "1"}}))},
           {Container(Resources({{"nvidia.com/gpu", "1"}}), {}, true),
            Container(Resources({{"nvidia.com/gpu", "2"}}))}),
       {{"nvidia.com/gpu", "3"}}},
      {"init container before the sidecar does not see it",
       // init 2 alone = 2; then sidecar 1 + main 1 = 2.
       Pod({Container(Resources({{"nvidia.com/gpu", "1"}}))},
           {Container(Resources({{"nvidia.com/gpu", "2"}})),
            Container(Resources({{"nvidia.com/gpu", "1"}}), {}, true)}),
       {{"nvidia.com/gpu", "2"}}},
      {"sidecar with limits only",
       Pod({}, {Container({}, Resources({{"nvidia.com/gpu", "1"}}), true)}),
       {{"nvidia.com/gpu", "1"}}},
      {"pod overhead is added",
       Pod({Container(Resources({{"cpu", "1"}}))}, {}, Resources({{"cpu", "250m"}})),
       {{"cpu", "1250m"}}},
      {"overhead is added after the init maximum",
       Pod({Container(Resources({{"cpu", "1"}}))}, {Container(Resources({{"cpu", "2"}}))},
           Resources({{"cpu", "100m"}})),
       {{"cpu", "2100m"}}},
      {"no containers", Pod({}), {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(AsText(EffectiveRequests(row.pod)), row.want);
  }
}

TEST(ComputeDemandTest, DevicesAndMemory) {
  Policy policy;
  policy.shared_resources = {"example.com/vgpu"};
  struct Row {
    std::string name;
    PodFacts pod;
    std::map<std::string, int64_t> devices;
    int64_t memory_mib;
  };
  auto annotated = [](PodFacts pod, std::string value) {
    pod.annotations["gpu-tenancy.io/gpu-memory"] = std::move(value);
    return pod;
  };
  const std::vector<Row> rows = {
      {"whole GPUs",
       Pod({Container({}, Resources({{"nvidia.com/gpu", "2"}}))}),
       {{"nvidia.com/gpu", 2}},
       0},
      {"MIG instances by profile",
       Pod({Container({}, Resources({{"nvidia.com/mig-3g.40gb", "1"}})),
            Container({}, Resources({{"nvidia.com/mig-1g.10gb", "2"}}))}),
       {{"nvidia.com/mig-1g.10gb", 2}, {"nvidia.com/mig-3g.40gb", 1}},
       0},
      {"cpu and memory are not GPU demand",
       Pod({Container(Resources({{"cpu", "2"}, {"memory", "8Gi"}}))}),
       {},
       0},
      {"other vendors' resources are ignored",
       Pod({Container(Resources({{"amd.com/gpu", "1"}, {"example.com/foo", "3"}}))}),
       {},
       0},
      {"configured shared resource counts",
       Pod({Container(Resources({{"example.com/vgpu", "1"}}))}),
       {{"example.com/vgpu", 1}},
       0},
      {"zero counts are dropped", Pod({Container(Resources({{"nvidia.com/gpu", "0"}}))}), {}, 0},
      {"nvidia.com/gpu.memory is MiB, not a device",
       Pod({Container(
           {}, Resources({{"nvidia.com/gpu.shared", "1"}, {"nvidia.com/gpu.memory", "8192"}}))}),
       {{"nvidia.com/gpu.shared", 1}},
       8192},
      {"nvidia.com/gpumem is MiB and sums over containers",
       Pod({Container({}, Resources({{"nvidia.com/gpumem", "1000"}})),
            Container({}, Resources({{"nvidia.com/gpumem", "3000"}}))}),
       {},
       4000},
      {"both memory resources add up",
       Pod({Container(
           {}, Resources({{"nvidia.com/gpumem", "1000"}, {"nvidia.com/gpu.memory", "24"}}))}),
       {},
       1024},
      {"annotation is a byte quantity converted to MiB",
       annotated(Pod({Container({}, Resources({{"nvidia.com/gpu.shared", "1"}}))}), "16Gi"),
       {{"nvidia.com/gpu.shared", 1}},
       16384},
      {"annotation rounds up to whole MiB",
       annotated(Pod({Container({}, Resources({{"nvidia.com/gpu.shared", "1"}}))}), "1G"),
       {{"nvidia.com/gpu.shared", 1}},
       954},
      {"annotation larger than the resource wins",
       annotated(Pod({Container({}, Resources({{"nvidia.com/gpumem", "1024"}}))}), "2Gi"),
       {},
       2048},
      {"resource larger than the annotation wins",
       annotated(Pod({Container({}, Resources({{"nvidia.com/gpumem", "4096"}}))}), "2Gi"),
       {},
       4096},
      {"annotation alone", annotated(Pod({Container(Resources({{"cpu", "1"}}))}), "8Gi"), {}, 8192},
      {"zero annotation", annotated(Pod({Container(Resources({{"cpu", "1"}}))}), "0"), {}, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<GpuDemand> demand = ComputeDemand(row.pod, policy);
    ASSERT_TRUE(demand.ok()) << demand.status();
    std::map<std::string, int64_t> devices;
    for (const ResourceCount& device : demand->devices) devices[device.name] = device.count;
    EXPECT_EQ(devices, row.devices);
    EXPECT_EQ(demand->memory_mib, row.memory_mib);
    EXPECT_EQ(demand->empty(), row.devices.empty() && row.memory_mib == 0);
  }
}

TEST(ComputeDemandTest, ConfiguredMemoryResourcesAndAnnotation) {
  Policy policy;
  policy.memory_resources = {"example.com/gpu-memory-mib"};
  policy.memory_annotation = "example.com/vram";
  PodFacts pod = Pod({Container(
      {}, Resources({{"example.com/gpu-memory-mib", "512"}, {"nvidia.com/gpu.memory", "2"}}))});
  pod.annotations["example.com/vram"] = "1Gi";
  pod.annotations["gpu-tenancy.io/gpu-memory"] = "not read";
  absl::StatusOr<GpuDemand> demand = ComputeDemand(pod, policy);
  ASSERT_TRUE(demand.ok()) << demand.status();
  EXPECT_EQ(demand->memory_mib, 1024);
  // With the default names replaced, nvidia.com/gpu.memory is just another nvidia.com/ device.
  EXPECT_NE(demand->devices.Find("nvidia.com/gpu.memory"), nullptr);
  EXPECT_EQ(demand->devices.Find("example.com/gpu-memory-mib"), nullptr);
}

TEST(ComputeDemandTest, Errors) {
  Policy policy;
  struct Row {
    std::string name;
    PodFacts pod;
    std::string message;
  };
  auto annotated = [](PodFacts pod, std::string value) {
    pod.annotations["gpu-tenancy.io/gpu-memory"] = std::move(value);
    return pod;
  };
  const std::vector<Row> rows = {
      {"fractional GPU", Pod({Container({}, Resources({{"nvidia.com/gpu", "500m"}}))}),
       "pod team/p: nvidia.com/gpu must be a whole, non-negative number, got 500m"},
      {"fractional GPU written as a decimal",
       Pod({Container({}, Resources({{"nvidia.com/gpu", "1.5"}}))}),
       "pod team/p: nvidia.com/gpu must be a whole, non-negative number, got 1500m"},
      {"negative GPU", Pod({Container({}, Resources({{"nvidia.com/mig-1g.10gb", "-1"}}))}),
       "pod team/p: nvidia.com/mig-1g.10gb must be a whole, non-negative number, got -1"},
      {"fractional memory resource",
       Pod({Container({}, Resources({{"nvidia.com/gpumem", "0.5"}}))}),
       "pod team/p: nvidia.com/gpumem must be a whole, non-negative number, got 500m"},
      {"unparseable annotation", annotated(Pod({}), "lots"),
       "pod team/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity such as "
       "20Gi, got \"lots\""},
      {"negative annotation", annotated(Pod({}), "-1Gi"),
       "pod team/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity such as "
       "20Gi, got \"-1Gi\""},
      {"empty annotation", annotated(Pod({}), ""),
       "pod team/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity such as "
       "20Gi, got \"\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<GpuDemand> demand = ComputeDemand(row.pod, policy);
    ASSERT_FALSE(demand.ok());
    EXPECT_EQ(demand.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(demand.status().message(), row.message);
  }
}

TEST(ComputeDemandTest, FractionsOnNonGpuResourcesAreFine) {
  absl::StatusOr<GpuDemand> demand = ComputeDemand(
      Pod({Container(Resources({{"cpu", "100m"}, {"nvidia.com/gpu", "1"}}))}), Policy());
  ASSERT_TRUE(demand.ok()) << demand.status();
  EXPECT_EQ(demand->devices.Get("nvidia.com/gpu"), 1);
}

TEST(IsGpuDeviceResourceTest, Names) {
  Policy policy;
  policy.shared_resources = {"example.com/vgpu"};
  EXPECT_TRUE(IsGpuDeviceResource("nvidia.com/gpu", policy));
  EXPECT_TRUE(IsGpuDeviceResource("nvidia.com/gpu.shared", policy));
  EXPECT_TRUE(IsGpuDeviceResource("nvidia.com/mig-3g.40gb", policy));
  EXPECT_TRUE(IsGpuDeviceResource("example.com/vgpu", policy));
  EXPECT_FALSE(IsGpuDeviceResource("nvidia.com/gpu.memory", policy));
  EXPECT_FALSE(IsGpuDeviceResource("nvidia.com/gpumem", policy));
  EXPECT_FALSE(IsGpuDeviceResource("cpu", policy));
  EXPECT_FALSE(IsGpuDeviceResource("amd.com/gpu", policy));
}

}  // namespace
}  // namespace topology
