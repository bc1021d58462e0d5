// The allocation inventory and per-tenant gauges, computed from the demo cluster (cmd/demo):
// totals per tenant, agreement with the occupancy the scheduler decides on, and the shapes of
// the Prometheus text and the JSON document.
#include "extender/allocations.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "extender/gpu_map.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

topology::ClusterData DemoCluster() {
  absl::StatusOr<std::vector<rapidjson::Document>> docs =
      common::YamlDocumentsToJson(ReadSource("cmd/demo/cluster.yaml"));
  EXPECT_TRUE(docs.ok() && docs->size() == 1) << docs.status();
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterList(docs->front());
  EXPECT_TRUE(data.ok()) << data.status();
  return *std::move(data);
}

topology::PodFacts PodOn(const std::string& node, const std::string& ns, const std::string& name,
                         const std::string& resource, const std::string& count) {
  rapidjson::Document doc;
  doc.Parse(absl::StrCat(R"({"metadata":{"name":")", name, R"(","namespace":")", ns,
                         R"(","uid":"uid-)", name, R"("},"spec":{"nodeName":")", node,
                         R"(","containers":[{"name":"c","resources":{"limits":{")", resource,
                         R"(":")", count, R"("}}}]},"status":{"phase":"Running"}})")
                .c_str());
  absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(doc);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return *std::move(pod);
}

class AllocationsTest : public ::testing::Test {
 protected:
  void Build(const topology::ClusterData& data) {
    absl::StatusOr<topology::Policy> policy =
        common::LoadPolicy(ReadSource("cmd/demo/policy.yaml"));
    ASSERT_TRUE(policy.ok()) << policy.status();
    state_.policy = std::make_shared<const topology::Policy>(*std::move(policy));
    state_.catalog = &common::BuiltinCatalog();
    state_.snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(data, *state_.catalog, *state_.policy));
    allocations_ = extender::Allocations(state_);
  }
  const extender::TenantAllocation* Tenant(const std::string& name) const {
    for (const auto& a : allocations_) {
      if (a.tenant == name) return &a;
    }
    return nullptr;
  }

  topology::ModelState state_;
  std::vector<extender::TenantAllocation> allocations_;
};

TEST_F(AllocationsTest, SumsWhatEachTenantHolds) {
  Build(DemoCluster());
  const extender::TenantAllocation* acme = Tenant("acme");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(acme->tier, "untrusted");
  EXPECT_EQ(acme->held.mig_instances.at("1g.10gb"), 2);
  EXPECT_EQ(acme->held.mig_instances.at("3g.40gb"), 1);
  EXPECT_EQ(acme->held.mig_instances.at("2g.20gb"), 0);  // offered by the fleet, not held
  EXPECT_EQ(acme->held.pods, 3);
  EXPECT_EQ(acme->held.gpus, 0);
  const extender::TenantAllocation* research = Tenant("research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->held.gpus, 3);
  EXPECT_EQ(research->held.shared_replicas, 2);
  // Tenants holding nothing are listed too, so their gauges read 0.
  const extender::TenantAllocation* platform = Tenant("gpu-platform");
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->held.pods, 0);
  EXPECT_TRUE(platform->nodes.empty());
}

TEST_F(AllocationsTest, EveryNodeSumsToItsOccupancy) {
  topology::ClusterData data = DemoCluster();
  data.pods.push_back(PodOn("ts-a", "research", "extra-shared", "nvidia.com/gpu.shared", "1"));
  data.pods.push_back(PodOn("mig-1g", "acme", "extra-slice", "nvidia.com/mig-1g.10gb", "2"));
  Build(data);
  std::map<std::string, std::map<std::string, int64_t>> devices_by_node;
  std::map<std::string, size_t> pods_by_node;
  for (const auto& a : allocations_) {
    for (const auto& n : a.nodes) {
      EXPECT_EQ(n.held.pods, static_cast<int64_t>(n.pods.size()));
      for (const auto& pod : n.pods) {
        ++pods_by_node[n.node];
        for (const topology::ResourceCount& device : pod->demand.devices)
          devices_by_node[n.node][device.name] += device.count;
      }
    }
  }
  int nodes_with_pods = 0;
  state_.snapshot->ForEachNode([&](const topology::NodeState& node) {
    EXPECT_EQ(pods_by_node[node.facts.name], node.holds.size()) << node.facts.name;
    for (const topology::OfferedResource& r : node.supply.resources) {
      EXPECT_EQ(devices_by_node[node.facts.name][r.name], node.occupancy.Used(r.name))
          << node.facts.name << " " << r.name;
    }
    nodes_with_pods += !node.holds.empty();
  });
  EXPECT_GE(nodes_with_pods, 4);
  EXPECT_EQ(Tenant("acme")->held.mig_instances.at("1g.10gb"), 4);
  EXPECT_EQ(Tenant("research")->held.shared_replicas, 3);
}

TEST_F(AllocationsTest, PodsOfUnclaimedNamespacesAreCountedAsUnknown) {
  topology::ClusterData data = DemoCluster();
  data.pods.push_back(PodOn("excl-a", "default", "stray", "nvidia.com/gpu", "1"));
  Build(data);
  const extender::TenantAllocation* unknown = Tenant("unknown");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->tier, "");  // the demo policy denies unknown tenants
  EXPECT_EQ(unknown->held.gpus, 1);
  EXPECT_EQ(unknown->held.gpu_memory_mib, 81559);  // one whole H100 80GB as the catalog has it
  std::string metrics;
  common::MetricsText metrics_text(metrics);
  extender::AppendTenantMetrics(allocations_, metrics_text);
  EXPECT_TRUE(absl::StrContains(
      metrics, "gpu_tenancy_tenant_gpus_held{tenant=\"unknown\",tier=\"none\"} 1\n"))
      << metrics;
}

TEST_F(AllocationsTest, MetricsCarryTenantTierAndProfileOnly) {
  Build(DemoCluster());
  std::string metrics;
  common::MetricsText metrics_text(metrics);
  extender::AppendTenantMetrics(allocations_, metrics_text);
  for (const char* line : {
           "# TYPE gpu_tenancy_tenant_mig_instances_held gauge\n",
           "gpu_tenancy_tenant_mig_instances_held{tenant=\"acme\",tier=\"untrusted\",profile=\"1g."
           "10gb\"} 2\n",
           "gpu_tenancy_tenant_mig_instances_held{tenant=\"research\",tier=\"trusted\",profile="
           "\"3g.40gb\"} 0\n",
           "gpu_tenancy_tenant_shared_replicas_held{tenant=\"research\",tier=\"trusted\"} 2\n",
           "gpu_tenancy_tenant_gpus_held{tenant=\"research\",tier=\"trusted\"} 3\n",
           "gpu_tenancy_tenant_gpu_memory_held_mib{tenant=\"acme\",tier=\"untrusted\"} 60416\n",
           "gpu_tenancy_tenant_pods{tenant=\"gpu-platform\",tier=\"platform\"} 0\n",
       }) {
    EXPECT_TRUE(absl::StrContains(metrics, line)) << line << "\n" << metrics;
  }
  // No pod names or namespaces in labels: cardinality is bounded by tenants and profiles.
  EXPECT_FALSE(absl::StrContains(metrics, "llm-a"));
  EXPECT_FALSE(absl::StrContains(metrics, "namespace="));
}

TEST_F(AllocationsTest, JsonListsTenantsNodesAndPods) {
  Build(DemoCluster());
  absl::StatusOr<rapidjson::Document> doc =
      common::ParseJson(extender::AllocationsJson(state_, allocations_));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const common::JsonValue* tenants = common::FindMember(*doc, "tenants");
  ASSERT_TRUE(tenants && tenants->IsArray());
  const common::JsonValue* acme = nullptr;
  for (const auto& t : tenants->GetArray()) {
    if (common::StringOr(t, "tenant") == "acme") acme = &t;
  }
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(common::StringOr(*acme, "tier"), "untrusted");
  const common::JsonValue& nodes = *common::FindMember(*acme, "nodes");
  ASSERT_TRUE(nodes.IsArray());
  const common::JsonValue* llm_a = nullptr;
  for (const auto& n : nodes.GetArray()) {
    for (const auto& p : common::FindMember(n, "pods")->GetArray()) {
      if (common::StringOr(p, "name") == "llm-a") {
        llm_a = &p;
        EXPECT_EQ(common::StringOr(n, "node"), "mig-b");
        EXPECT_EQ(common::StringOr(n, "pool"), "gpu-mig");
      }
    }
  }
  ASSERT_NE(llm_a, nullptr);
  EXPECT_EQ(common::StringOr(*llm_a, "uid"), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(common::StringOr(*llm_a, "state"), "bound");
  EXPECT_EQ(
      common::FindMember(*llm_a, "devices")->FindMember("nvidia.com/mig-3g.40gb")->value.GetInt(),
      1);
  EXPECT_EQ(common::FindMember(*llm_a, "migProfiles")->GetArray()[0].GetString(),
            std::string("3g.40gb"));
  EXPECT_EQ(common::FindMember(*llm_a, "gpuMemoryMiB")->GetInt64(), 40448);
}

// DRA claims count once each, under the tenant of their namespace, with the devices their
// results name; a result whose device no current slice publishes is counted, not invented.
TEST_F(AllocationsTest, ClaimsAreListedUnderTheirTenantWithTheirDevices) {
  topology::ClusterData data = DemoCluster();
  topology::DraSlice slice;
  slice.driver = "gpu.nvidia.com";
  slice.pool = "dra-1";
  slice.node = "dra-1";
  slice.generation = 2;
  for (const char* name : {"gpu-0-mig-1g10gb-19-0", "gpu-0-mig-3g40gb-9-4"}) {
    topology::DraDevice d;
    d.driver = slice.driver;
    d.pool = slice.pool;
    d.node = slice.node;
    d.name = name;
    d.type = "mig";
    d.profile = absl::StrContains(name, "1g10gb") ? "1g.10gb" : "3g.40gb";
    d.uuid = absl::StrCat("MIG-", name);
    slice.devices.push_back(d);
  }
  topology::DraSlice stale = slice;  // an older generation of the same pool: not current
  stale.generation = 1;
  stale.devices[0].name = "gpu-0-mig-7g80gb-0-0";
  data.dra_slices = {stale, slice};
  auto claim = [&](const std::string& ns, const std::string& name,
                   std::vector<std::string> devices) {
    topology::DraClaim c;
    c.namespace_name = ns;
    c.name = name;
    c.allocated = !devices.empty();
    c.allocated_node = "dra-1";
    for (const std::string& d : devices) c.results.push_back({"r", "gpu.nvidia.com", "dra-1", d});
    c.reserved_for = {{"pods", "p-" + name, "uid-p-" + name}, {"pods", "q-" + name, "uid-q"}};
    return c;
  };
  data.dra_claims = {claim("research", "b", {"gpu-0-mig-3g40gb-9-4", "gpu-0-mig-7g80gb-0-0"}),
                     claim("research", "a", {"gpu-0-mig-1g10gb-19-0"}),
                     claim("research", "pending", {})};
  Build(data);
  const extender::TenantAllocation* research = Tenant("research");
  ASSERT_NE(research, nullptr);
  ASSERT_EQ(research->claims.size(), 2u) << "an unallocated claim holds nothing";
  EXPECT_EQ(research->claims[0].claim->name, "a");
  ASSERT_EQ(research->claims[0].devices.size(), 1u);
  EXPECT_EQ(research->claims[0].devices[0]->uuid, "MIG-gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(research->claims[1].claim->name, "b");
  EXPECT_EQ(research->claims[1].devices.size(), 1u);
  EXPECT_EQ(research->claims[1].unpublished, 1u) << "7g.80gb is only in the stale generation";
  // Counted per claim, not per reserving pod (each claim is reserved for two pods).
  EXPECT_EQ(research->dra_devices, (std::map<std::pair<std::string, std::string>, int64_t>{
                                       {{"mig", "1g.10gb"}, 1}, {{"mig", "3g.40gb"}, 1}}));
  std::string metrics;
  common::MetricsText metrics_text(metrics);
  extender::AppendTenantMetrics(allocations_, metrics_text);
  EXPECT_TRUE(
      absl::StrContains(metrics,
                        "gpu_tenancy_tenant_dra_devices{tenant=\"research\",tier=\"trusted\","
                        "type=\"mig\",profile=\"3g.40gb\"} 1\n"))
      << metrics;
  std::string json = extender::AllocationsJson(state_, allocations_);
  EXPECT_TRUE(absl::StrContains(json, R"("uuid":"MIG-gpu-0-mig-3g40gb-9-4")")) << json;
  EXPECT_TRUE(absl::StrContains(json, R"("unpublishedDevices":1)")) << json;
  EXPECT_FALSE(absl::StrContains(json, R"("name":"pending")")) << json;
}

// The page's map reads the same holds: each demo tenant's slices on the nodes they are bound
// to, mig-c reconfiguring, and free slots where nobody holds one.
TEST_F(AllocationsTest, TheGpuMapShowsEachTenantsSlicesOnTheirNodes) {
  Build(DemoCluster());
  rapidjson::Document map;
  map.Parse(extender::GpuMapJson(state_).c_str());
  ASSERT_TRUE(map.IsObject() && map["nodes"].IsArray());
  std::map<std::string, const rapidjson::Value*> nodes;
  for (const rapidjson::Value& n : map["nodes"].GetArray()) nodes[n["name"].GetString()] = &n;
  EXPECT_EQ(nodes.count("cpu-a"), 0u) << "nodes without GPUs are left out";
  ASSERT_EQ(nodes.count("mig-b"), 1u);
  EXPECT_EQ(std::string((*nodes["mig-c"])["migState"].GetString()),
            "nvidia.com/mig.config.state=pending");
  EXPECT_EQ(std::string((*nodes["mig-a"])["migState"].GetString()), "");
  // "node resource tenant/pod x count" for every holder.
  std::multiset<std::string> held;
  for (const auto& [name, node] : nodes) {
    for (const rapidjson::Value& r : (*node)["resources"].GetArray()) {
      int64_t counted = 0;
      for (const rapidjson::Value& h : r["holders"].GetArray()) {
        held.insert(absl::StrCat(name, " ", r["name"].GetString(), " ", h["tenant"].GetString(),
                                 "/", h["pod"].GetString(), " x", h["count"].GetInt64()));
        counted += h["count"].GetInt64();
      }
      EXPECT_EQ(counted, r["used"].GetInt64()) << name << " " << r["name"].GetString();
      EXPECT_LE(r["used"].GetInt64(), r["allocatable"].GetInt64());
    }
  }
  EXPECT_EQ(held.count("mig-b nvidia.com/mig-3g.40gb acme/llm-a x1"), 1u);
  EXPECT_EQ(held.count("mig-b nvidia.com/mig-3g.40gb bank/risk-model x1"), 1u);
  EXPECT_EQ(held.count("mig-b nvidia.com/mig-1g.10gb acme/embed-1 x1"), 1u);
  EXPECT_EQ(held.count("mig-a nvidia.com/mig-1g.10gb acme/embed-2 x1"), 1u);
  EXPECT_EQ(held.count("ts-a nvidia.com/gpu.shared research/notebook-1 x1"), 1u);
  std::set<std::string> tenants;
  for (const rapidjson::Value& t : map["tenants"].GetArray()) tenants.insert(t.GetString());
  EXPECT_TRUE(tenants.count("acme") && tenants.count("bank") && tenants.count("research"));
}

// The node agent's believed reports reach the map: each holder with the IDs of its devices
// (and their physical GPU where the ID says it), each node with the tenants on each GPU.
TEST_F(AllocationsTest, TheGpuMapShowsEachPodsDeviceIdsAndEachGpusTenants) {
  Build(DemoCluster());
  rapidjson::Document map;
  map.Parse(extender::GpuMapJson(state_).c_str());
  ASSERT_TRUE(map.IsObject() && map["nodes"].IsArray());
  // "node namespace/pod" -> "id@gpu (sharing)" of every reported device.
  std::map<std::string, std::vector<std::string>> devices;
  // "node gpu" -> "tenant,tenant (sharing)".
  std::map<std::string, std::string> gpus;
  for (const rapidjson::Value& n : map["nodes"].GetArray()) {
    const std::string node = n["name"].GetString();
    for (const rapidjson::Value& r : n["resources"].GetArray()) {
      for (const rapidjson::Value& h : r["holders"].GetArray()) {
        ASSERT_TRUE(h.HasMember("devices") && h["devices"].IsArray()) << node;
        for (const rapidjson::Value& d : h["devices"].GetArray()) {
          devices[absl::StrCat(node, " ", h["namespace"].GetString(), "/", h["pod"].GetString())]
              .push_back(absl::StrCat(d["id"].GetString(), "@", d["gpu"].GetString(), " (",
                                      d["sharing"].GetString(), ")"));
        }
      }
    }
    ASSERT_TRUE(n.HasMember("physicalGpus") && n["physicalGpus"].IsArray()) << node;
    for (const rapidjson::Value& g : n["physicalGpus"].GetArray()) {
      std::vector<std::string> tenants;
      for (const rapidjson::Value& t : g["tenants"].GetArray()) tenants.push_back(t.GetString());
      gpus[absl::StrCat(node, " ", g["id"].GetString())] =
          absl::StrCat(absl::StrJoin(tenants, ","), " (", g["sharing"].GetString(), ")");
    }
  }
  using Ids = std::vector<std::string>;
  // mig-b's driver names MIG instances by their own UUID: the GPU is not known.
  EXPECT_EQ(devices["mig-b acme/llm-a"], Ids{"MIG-9c070001-31d2-5e4f-8a6b-2f1d7e3c0001@ (mig)"});
  EXPECT_EQ(devices["mig-a acme/embed-2"], Ids{"MIG-GPU-5a1f0010-7c3e-4b8a-9d21-0e6c4f2a0010/9/0@"
                                               "GPU-5a1f0010-7c3e-4b8a-9d21-0e6c4f2a0010 (mig)"});
  EXPECT_EQ(devices["ts-a research/notebook-1"],
            Ids{"GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::2@"
                "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020 (shared)"});
  EXPECT_EQ(devices["excl-a research/trainer"].size(), 3u);
  EXPECT_EQ(gpus["mig-a GPU-5a1f0010-7c3e-4b8a-9d21-0e6c4f2a0010"], "acme (mig)");
  EXPECT_EQ(gpus["ts-a GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020"], "research (shared)");
  EXPECT_EQ(gpus.count("mig-b MIG-9c070001-31d2-5e4f-8a6b-2f1d7e3c0001"), 0u);
  for (const auto& [gpu, tenants] : gpus) EXPECT_FALSE(absl::StartsWith(gpu, "mig-b ")) << gpu;
}

// A time-sliced pod sits on the GPU the node agent saw it on: notebook-2 was promised GPU 1, but
// the kubelet gave it a replica of GPU 0.
TEST_F(AllocationsTest, TheGpuMapPutsAReplicaOnTheGpuTheAgentReported) {
  topology::ClusterData data = DemoCluster();
  const std::string moved = "GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::1";
  std::string uid;
  for (topology::PodFacts& pod : data.pods) {
    if (pod.name != "notebook-2") continue;
    ASSERT_TRUE(pod.device_report.has_value());
    pod.device_report->containers[0].resources[0].ids = {moved};
    uid = pod.uid;
  }
  // The agent's record on the Node says the same: a report it wrote.
  for (topology::NodeFacts& node : data.nodes) {
    if (node.name != "ts-a") continue;
    ASSERT_TRUE(node.reported_gpus.has_value());
    for (topology::PodDeviceRecord& r : node.reported_gpus->pods) {
      if (r.uid == uid) r.resources[0].ids = {moved};
    }
  }
  // pod -> gpuIndex on ts-a
  auto gpu_indexes = [&](const topology::ClusterData& cluster) {
    Build(cluster);
    rapidjson::Document map;
    map.Parse(extender::GpuMapJson(state_).c_str());
    std::map<std::string, int> out;
    for (const rapidjson::Value& n : map["nodes"].GetArray()) {
      if (std::string(n["name"].GetString()) != "ts-a") continue;
      for (const rapidjson::Value& h : n["resources"][0]["holders"].GetArray()) {
        out[h["pod"].GetString()] = h["gpuIndex"].GetInt();
      }
    }
    return out;
  };
  using Gpus = std::map<std::string, int>;
  EXPECT_EQ(gpu_indexes(DemoCluster()), (Gpus{{"notebook-1", 0}, {"notebook-2", 1}}));
  EXPECT_EQ(gpu_indexes(data), (Gpus{{"notebook-1", 0}, {"notebook-2", 0}}));
}

// A GPU published as partitionable devices: while its 3g.40gb on slices 0-3 is held, the map
// marks the whole GPU blocked and the 3g.40gb on slices 4-7 free.
TEST_F(AllocationsTest, TheGpuMapMarksPartitionsTheHeldOnesBlock) {
  topology::ClusterData data = DemoCluster();
  auto memory_slices = [](int from, int to) {
    topology::DraCounters c;
    for (int i = from; i < to; ++i) {
      c[absl::StrCat("memory-slice-", i)] = topology::Quantity::FromUnits(1);
    }
    return c;
  };
  topology::DraSlice slice;
  slice.driver = "gpu.nvidia.com";
  slice.pool = "dm-node";
  slice.node = "dm-node";
  slice.generation = 1;
  slice.shared_counters = {{"gpu-0-counter-set", memory_slices(0, 8)}};
  for (auto [name, from, to] : {std::tuple("gpu-0", 0, 8), std::tuple("gpu-0-mig-3g40gb-9-0", 0, 4),
                                std::tuple("gpu-0-mig-3g40gb-9-4", 4, 8)}) {
    topology::DraDevice d;
    d.driver = slice.driver;
    d.pool = slice.pool;
    d.node = slice.node;
    d.name = name;
    d.type = from == 0 && to == 8 ? "gpu" : "mig";
    d.consumes_counters = {{"gpu-0-counter-set", memory_slices(from, to)}};
    slice.devices.push_back(d);
  }
  data.dra_slices = {slice};
  topology::DraClaim big;
  big.namespace_name = "research";
  big.name = "big";
  big.allocated = true;
  big.allocated_node = "dm-node";
  big.results = {{"r", "gpu.nvidia.com", "dm-node", "gpu-0-mig-3g40gb-9-0"}};
  data.dra_claims = {big};
  data.nodes.push_back({"dm-node", {{"kubernetes.io/hostname", "dm-node"}}, {}, {}, std::nullopt});
  Build(data);
  rapidjson::Document map;
  map.Parse(extender::GpuMapJson(state_).c_str());
  ASSERT_TRUE(map.IsObject() && map["nodes"].IsArray());
  std::map<std::string, std::pair<std::string, bool>> devices;  // -> claim, blocked
  for (const rapidjson::Value& n : map["nodes"].GetArray()) {
    for (const rapidjson::Value& d : n["draDevices"].GetArray()) {
      devices[d["device"].GetString()] = {d["claim"].GetString(), d["blocked"].GetBool()};
    }
  }
  using Row = std::pair<std::string, bool>;
  EXPECT_EQ(devices["gpu.nvidia.com/dm-node/gpu-0"], Row("", true));
  EXPECT_EQ(devices["gpu.nvidia.com/dm-node/gpu-0-mig-3g40gb-9-0"], Row("research/big", false));
  EXPECT_EQ(devices["gpu.nvidia.com/dm-node/gpu-0-mig-3g40gb-9-4"], Row("", false));
  // Where on the GPU each sits.
  std::map<std::string, std::vector<int>> slices;
  for (const rapidjson::Value& n : map["nodes"].GetArray()) {
    for (const rapidjson::Value& d : n["draDevices"].GetArray()) {
      for (const rapidjson::Value& i : d["memorySlices"].GetArray()) {
        slices[d["device"].GetString()].push_back(i.GetInt());
      }
    }
  }
  EXPECT_EQ(slices["gpu.nvidia.com/dm-node/gpu-0"], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(slices["gpu.nvidia.com/dm-node/gpu-0-mig-3g40gb-9-4"], (std::vector<int>{4, 5, 6, 7}));
}

}  // namespace
