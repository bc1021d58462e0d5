// The two promises behind every tier, checked over thousands of generated policies, nodes and
// pods through the real entry points (the filter verb's JSON and the AdmissionReview), against
// an oracle that knows only what the generator put in, not how the model classifies it:
//   1. a tenant whose tier allows no shared mode is never admitted with a shared resource;
//   2. the filter never keeps a node whose pool, or any requested resource on it, gives an
//      isolation the tenant's tier does not allow.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "extender/verbs.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "webhook/review.h"
#include "wire/extender_codec.h"
#include "wire/k8s_codec.h"

namespace {

// Weakest isolation last, as the policy orders them.
const std::vector<std::string> kModes = {"exclusive", "mig", "mig-shared", "mps", "timeslice"};
bool IsShared(const std::string& mode) {
  return mode == "mig-shared" || mode == "mps" || mode == "timeslice";
}

struct GeneratedPolicy {
  std::string yaml;
  std::map<std::string, std::set<std::string>> tier_modes;
  std::map<std::string, std::string> namespace_tier;  // "" = denied
  std::map<std::string, std::string> pool_mode;
};

// Four namespaces with tenants, one unclaimed; tiers with random mode sets; pools of every mode.
GeneratedPolicy MakePolicy(std::mt19937& rng) {
  GeneratedPolicy p;
  std::string tiers = "tiers:\n";
  for (int t = 0; t < 3; ++t) {
    std::string name = absl::StrCat("tier", t);
    std::vector<std::string> modes;
    for (const std::string& m : kModes) {
      if (rng() % 2) modes.push_back(m);
    }
    if (modes.empty()) modes.push_back(kModes[rng() % kModes.size()]);
    p.tier_modes[name] = {modes.begin(), modes.end()};
    absl::StrAppend(&tiers, "  - name: ", name, "\n    modes: [", absl::StrJoin(modes, ", "),
                    "]\n");
  }
  std::string tenants = "tenants:\n";
  for (int n = 0; n < 4; ++n) {
    std::string ns = absl::StrCat("ns", n), tier = absl::StrCat("tier", rng() % 3);
    p.namespace_tier[ns] = tier;
    absl::StrAppend(&tenants, "  - name: tenant", n, "\n    tier: ", tier, "\n    namespaces: [",
                    ns, "]\n");
  }
  std::string unknown = "deny";
  if (rng() % 2) unknown = absl::StrCat("tier", rng() % 3);
  p.namespace_tier["stray"] = unknown == "deny" ? "" : unknown;
  std::string pools = "pools:\n";
  for (const std::string& m : kModes) {
    p.pool_mode[absl::StrCat("pool-", m)] = m;
    absl::StrAppend(&pools, "  - name: pool-", m, "\n    mode: ", m, "\n");
  }
  p.yaml = absl::StrCat(tiers, tenants, "unknownTenant: ", unknown, "\n", pools,
                        "failRequestsGreaterThanOne: ", rng() % 2 ? "true" : "false", "\n");
  return p;
}

struct GeneratedNode {
  std::string json;
  std::string name;
  std::string pool;                                  // label value, "" when unlabelled
  std::map<std::string, std::string> resource_mode;  // what each offered resource really is
};

GeneratedNode MakeNode(std::mt19937& rng, int index) {
  GeneratedNode n;
  n.name = absl::StrCat("node-", index);
  std::map<std::string, std::string> labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                               {"nvidia.com/gpu.count", "2"}};
  std::map<std::string, int> allocatable;
  switch (rng() % 6) {
    case 0:
      allocatable["nvidia.com/gpu"] = 2;
      n.resource_mode["nvidia.com/gpu"] = "exclusive";
      break;
    case 1:
      labels["nvidia.com/mig.strategy"] = "mixed";
      labels["nvidia.com/mig.config.state"] = "success";
      allocatable["nvidia.com/mig-1g.10gb"] = 1 + rng() % 4;
      allocatable["nvidia.com/mig-3g.40gb"] = rng() % 3;
      n.resource_mode["nvidia.com/mig-1g.10gb"] = "mig";
      n.resource_mode["nvidia.com/mig-3g.40gb"] = "mig";
      break;
    case 2:
      labels["nvidia.com/mig.strategy"] = "mixed";
      labels["nvidia.com/mig.config.state"] = "success";
      allocatable["nvidia.com/mig-1g.10gb"] = rng() % 3;
      allocatable["nvidia.com/mig-1g.10gb.shared"] = 4;
      n.resource_mode["nvidia.com/mig-1g.10gb"] = "mig";
      n.resource_mode["nvidia.com/mig-1g.10gb.shared"] = "mig-shared";
      break;
    case 3:
    case 4: {
      bool mps = rng() % 2;
      labels["nvidia.com/gpu.sharing-strategy"] = mps ? "mps" : "time-slicing";
      labels["nvidia.com/gpu.replicas"] = "4";
      allocatable["nvidia.com/gpu.shared"] = 8;
      n.resource_mode["nvidia.com/gpu.shared"] = mps ? "mps" : "timeslice";
      break;
    }
    default:  // whole GPUs and time-sliced replicas side by side
      labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
      labels["nvidia.com/gpu.replicas"] = "2";
      allocatable["nvidia.com/gpu"] = 1;
      allocatable["nvidia.com/gpu.shared"] = 2;
      n.resource_mode["nvidia.com/gpu"] = "exclusive";
      n.resource_mode["nvidia.com/gpu.shared"] = "timeslice";
      break;
  }
  // Any pool, whatever the node offers (operators mislabel), an undefined one, or none.
  int pool_pick = rng() % (kModes.size() + 2);
  if (pool_pick < static_cast<int>(kModes.size())) {
    n.pool = absl::StrCat("pool-", kModes[pool_pick]);
  } else if (pool_pick == static_cast<int>(kModes.size())) {
    n.pool = "pool-typo";
  }
  if (!n.pool.empty()) labels["gpu-tenancy.io/pool"] = n.pool;
  std::vector<std::string> label_json, alloc_json = {R"("cpu":"32")"};
  for (const auto& [k, v] : labels) label_json.push_back(absl::StrCat("\"", k, "\":\"", v, "\""));
  for (const auto& [k, v] : allocatable)
    alloc_json.push_back(absl::StrCat("\"", k, "\":\"", v, "\""));
  n.json = absl::StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", n.name,
                        R"(","labels":{)", absl::StrJoin(label_json, ","),
                        R"(}},"status":{"allocatable":{)", absl::StrJoin(alloc_json, ","), "}}}");
  return n;
}

const std::vector<std::string> kDeviceNames = {"nvidia.com/gpu", "nvidia.com/gpu.shared",
                                               "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb",
                                               "nvidia.com/mig-1g.10gb.shared"};

// One or two GPU resources, in a container's limits (and so its requests), maybe an init
// container's.
struct GeneratedPod {
  std::string ns;
  std::map<std::string, int> containers;       // main container's limits
  std::map<std::string, int> init_containers;  // an init container's limits
  std::string json;

  std::set<std::string> Resources() const {
    std::set<std::string> out;
    for (const auto& [k, v] : containers) out.insert(k);
    for (const auto& [k, v] : init_containers) out.insert(k);
    return out;
  }
};

std::string Limits(const std::map<std::string, int>& limits) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : limits) parts.push_back(absl::StrCat("\"", k, "\":\"", v, "\""));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

GeneratedPod MakePod(std::mt19937& rng, int index) {
  static const std::vector<std::string> kNamespaces = {"ns0", "ns1", "ns2", "ns3", "stray"};
  GeneratedPod p;
  p.ns = kNamespaces[rng() % kNamespaces.size()];
  int devices = 1 + rng() % 2;
  for (int d = 0; d < devices; ++d)
    p.containers[kDeviceNames[rng() % kDeviceNames.size()]] = 1 + rng() % 2;
  if (rng() % 4 == 0) p.init_containers[kDeviceNames[rng() % kDeviceNames.size()]] = 1;
  std::string init;
  if (!p.init_containers.empty()) {
    init = absl::StrCat(R"("initContainers":[{"name":"init","image":"x","resources":{"limits":)",
                        Limits(p.init_containers), "}}],");
  }
  p.json = absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-)", index,
                        R"(","namespace":")", p.ns, R"(","uid":"uid-)", index, R"("},"spec":{)",
                        init, R"("containers":[{"name":"main","image":"x","resources":{"limits":)",
                        Limits(p.containers), R"(}}]},"status":{"phase":"Pending"}})");
  return p;
}

// The isolation a resource name promises, whatever node it is on: what admission can know.
bool NamedShared(const std::string& resource) { return absl::EndsWith(resource, ".shared"); }

topology::Policy LoadOrDie(const std::string& yaml) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(yaml);
  EXPECT_TRUE(policy.ok()) << policy.status() << "\n" << yaml;
  return policy.ok() ? *std::move(policy) : topology::Policy();
}

TEST(IsolationPropertyTest, NoTenantIsAdmittedWithASharedResourceItsTierForbids) {
  std::mt19937 rng(20261201);
  int denied_shared = 0, admitted = 0;
  for (int round = 0; round < 60; ++round) {
    GeneratedPolicy gp = MakePolicy(rng);
    topology::Policy policy = LoadOrDie(gp.yaml);
    topology::ClusterSnapshot snapshot =
        topology::BuildSnapshot({}, common::BuiltinCatalog(), policy);
    for (int i = 0; i < 100; ++i) {
      GeneratedPod pod = MakePod(rng, i);
      std::string review = absl::StrCat(
          R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r-)", i,
          R"(","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},)",
          R"("namespace":")", pod.ns, R"(","operation":"CREATE","object":)", pod.json, "}}");
      webhook::ReviewOutcome out =
          webhook::Review(review, webhook::ReviewKind::kValidate, policy, snapshot);
      ASSERT_EQ(out.http_status, 200) << out.body;
      const std::string& tier = gp.namespace_tier.at(pod.ns);
      bool tier_shares = false;
      if (!tier.empty()) {
        for (const std::string& m : gp.tier_modes.at(tier)) tier_shares |= IsShared(m);
      }
      std::set<std::string> resources = pod.Resources();
      bool asks_shared = std::any_of(resources.begin(), resources.end(), NamedShared);
      if (tier.empty() || (asks_shared && !tier_shares)) {
        EXPECT_FALSE(out.allowed) << gp.yaml << pod.json;
        denied_shared += asks_shared && !tier.empty();
      }
      admitted += out.allowed;
    }
  }
  // The generator reaches both sides of the rule.
  EXPECT_GT(denied_shared, 100);
  EXPECT_GT(admitted, 100);
}

TEST(IsolationPropertyTest, FilterNeverKeepsANodeWhoseIsolationTheTierForbids) {
  std::mt19937 rng(4242);
  int kept_total = 0, requests = 0;
  for (int round = 0; round < 40; ++round) {
    GeneratedPolicy gp = MakePolicy(rng);
    topology::Policy policy = LoadOrDie(gp.yaml);
    std::vector<GeneratedNode> nodes;
    std::string items;
    for (int i = 0; i < 30; ++i) {
      nodes.push_back(MakeNode(rng, i));
      absl::StrAppend(&items, i ? "," : "", nodes.back().json);
    }
    absl::StatusOr<rapidjson::Document> list =
        common::ParseJson(absl::StrCat(R"({"kind":"List","items":[)", items, "]}"));
    ASSERT_TRUE(list.ok()) << list.status();
    absl::StatusOr<topology::ClusterData> data = wire::ParseClusterList(*list);
    ASSERT_TRUE(data.ok()) << data.status();
    topology::ModelState state;
    state.policy = std::make_shared<const topology::Policy>(policy);
    state.catalog = &common::BuiltinCatalog();
    state.snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*data, *state.catalog, *state.policy));
    std::vector<std::string> names;
    for (const GeneratedNode& n : nodes) names.push_back(absl::StrCat("\"", n.name, "\""));
    for (int i = 0; i < 50; ++i) {
      GeneratedPod pod = MakePod(rng, i);
      std::string body = absl::StrCat(R"({"Pod":)", pod.json, R"(,"Nodes":null,"NodeNames":[)",
                                      absl::StrJoin(names, ","), "]}");
      extender::VerbReply reply = extender::Filter(body, &state);
      ASSERT_EQ(reply.http_status, 200) << reply.body;
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(reply.body);
      ASSERT_TRUE(doc.ok()) << reply.body;
      ASSERT_EQ(common::StringOr(*doc, "Error"), "") << reply.body;
      ++requests;
      const std::string& tier = gp.namespace_tier.at(pod.ns);
      for (const auto& kept : common::FindMember(*doc, "NodeNames")->GetArray()) {
        ++kept_total;
        const GeneratedNode& node = nodes[std::stoi(std::string(kept.GetString()).substr(5))];
        SCOPED_TRACE(absl::StrCat(gp.yaml, "\n", node.json, "\n", pod.json));
        ASSERT_FALSE(tier.empty()) << "a denied tenant's pod passed the filter";
        const std::set<std::string>& allowed = gp.tier_modes.at(tier);
        // The pool's isolation: the policy's mode for a known pool label, else the weakest
        // the node offers. An undefined pool label never passes.
        std::string pool_mode;
        if (node.pool.empty()) {
          size_t weakest = 0;
          for (const auto& [r, m] : node.resource_mode) {
            weakest = std::max<size_t>(weakest,
                                       std::find(kModes.begin(), kModes.end(), m) - kModes.begin());
          }
          pool_mode = kModes[weakest];
        } else {
          ASSERT_TRUE(gp.pool_mode.contains(node.pool))
              << "undefined pool " << node.pool << " passed";
          pool_mode = gp.pool_mode.at(node.pool);
        }
        EXPECT_TRUE(allowed.contains(pool_mode)) << "pool mode " << pool_mode;
        for (const std::string& r : pod.Resources()) {
          ASSERT_TRUE(node.resource_mode.contains(r)) << r << " is not offered";
          EXPECT_TRUE(allowed.contains(node.resource_mode.at(r))) << r;
        }
      }
    }
  }
  EXPECT_EQ(requests, 2000);
  EXPECT_GT(kept_total, 500);  // the generator reaches nodes that pass
}

}  // namespace
