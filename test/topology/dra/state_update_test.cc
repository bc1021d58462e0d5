// DraState::PutClaim and EraseClaim: after any sequence of claim changes, what the state counts
// (quota usage per namespace, allocated devices per node and class, the pods extended-resource
// claims cover, the devices held) equals a count from scratch over the same claims, and a state
// copied before a change keeps its counts.
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "topology/dra/model.h"

namespace topology {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;

// Everything a state counts, as ordered values that compare.
struct Counts {
  std::map<std::string, QuotaUsage> usage;
  // devices, allocated, blocked, not counted, type, shared per class
  std::map<std::string,
           std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, std::string, int64_t>>>
      classes_on_node;
  std::map<std::string, int> extended_claim_pods;
  std::map<uint32_t, int> holders;
  std::map<uint32_t, DraShares> shares;
  bool operator==(const Counts&) const = default;
};

Counts CountsOf(const DraState& s) {
  Counts out;
  s.usage.ForEach([&](const std::string& ns, const QuotaUsage& u) { out.usage[ns] = u; });
  s.node_counts.ForEach([&](const std::string& node, const auto& counts) {
    for (const DraClassOnNode& c : counts->classes) {
      out.classes_on_node[node].emplace_back(c.devices, c.allocated, c.blocked, c.not_counted,
                                             c.type, c.shared);
    }
  });
  for (size_t k = 0; k < s.devices().size(); ++k) {
    if (s.HeldBy(k) != 0) out.holders[static_cast<uint32_t>(k)] = s.HeldBy(k);
    if (const DraShares* shares = s.SharesOf(k)) out.shares[static_cast<uint32_t>(k)] = *shares;
  }
  s.extended_claim_pods.ForEach(
      [&](const std::string& k, int n) { out.extended_claim_pods[k] = n; });
  return out;
}

// Three nodes; on n3 the devices are partitionable: gpu-1 takes both memory slices of a counter
// set and each MIG device one, so holding any of them blocks gpu-1 and gpu-1 blocks both. Each
// node also has a multi-allocatable GPU of 40 units of memory, 10 by default.
std::vector<DraSlice> Fleet() {
  std::vector<DraSlice> slices;
  for (const char* node : {"n1", "n2", "n3"}) {
    slices.push_back(NodeSlice(
        node, {NvidiaDevice(node, "gpu-0"), NvidiaDevice(node, "gpu-1"),
               NvidiaDevice(node, "mig-0", "mig", "1g.10gb"),
               NvidiaDevice(node, "mig-1", "mig", "3g.40gb"),
               testing_dra::SharedGpu(node, "shared", 40, testing_dra::RangePolicy(10))}));
  }
  const Quantity one = Quantity::FromUnits(1);
  DraSlice& n3 = slices.back();
  n3.shared_counters = {{"set", {{"slice-0", one}, {"slice-1", one}}}};
  n3.devices[1].consumes_counters = {{"set", {{"slice-0", one}, {"slice-1", one}}}};
  n3.devices[2].consumes_counters = {{"set", {{"slice-0", one}}}};
  n3.devices[3].consumes_counters = {{"set", {{"slice-1", one}}}};
  return slices;
}

std::vector<DraDeviceClass> Classes() {
  return {{"gpu.nvidia.com",
           {"device.driver == 'gpu.nvidia.com' && "
            "device.attributes['gpu.nvidia.com'].type == 'gpu'"},
           "nvidia.com/gpu"},
          {"mig.nvidia.com", {"device.attributes['gpu.nvidia.com'].type == 'mig'"}, ""}};
}

DraClaim RandomClaim(std::mt19937& random) {
  static const char* kNamespaces[] = {"acme", "beta", "gamma"};
  static const char* kDevices[] = {"gpu-0", "gpu-1", "mig-0", "mig-1", "gone", "shared"};
  DraClaim c;
  c.namespace_name = kNamespaces[random() % 3];
  c.name = "claim-" + std::to_string(random() % 12);
  c.uid = c.name + "-uid-" + std::to_string(random() % 2);
  c.allocated = random() % 3 != 0;
  if (c.allocated) {
    const std::string node = "n" + std::to_string(1 + random() % 3);
    c.allocated_node = node;
    // Up to three results, sometimes naming one device twice or a device no slice has; some
    // are shares (of the multi-allocatable GPU, or a share ID on a device that allows none).
    for (int i = static_cast<int>(random() % 4); i > 0; --i) {
      DraAllocationResult& r =
          c.results.emplace_back("r", "gpu.nvidia.com", node, kDevices[random() % 6]);
      if (random() % 3 != 0) {
        r.share_id = "share-" + std::to_string(random() % 100);
        r.consumed_capacity = {{"memory", Quantity::FromUnits(10 * (random() % 4))}};
      }
    }
  }
  c.extended_resource_claim = random() % 2 == 0;
  for (int i = static_cast<int>(random() % 3); i > 0; --i) {
    const std::string pod = "pod-" + std::to_string(random() % 4);
    c.reserved_for.push_back({"pods", pod, random() % 2 ? pod + "-uid" : ""});
  }
  return c;
}

TEST(DraStateUpdateTest, ChangesCountAsAFreshCountDoes) {
  std::shared_ptr<const DraDeviceSet> set = MakeDraDeviceSet(Fleet(), Classes());
  std::mt19937 random(11);
  DraState state = MakeDraState(set, {}, {});
  std::vector<DraClaim> kept;  // the claims the state should hold, for the fresh count
  int blocked_steps = 0;
  int shared_steps = 0, full_steps = 0;
  for (int step = 0; step < 3000; ++step) {
    const DraState before = state;
    const Counts counted_before = CountsOf(before);
    DraClaim c = RandomClaim(random);
    if (random() % 4 == 0) {
      state.EraseClaim(c.namespace_name, c.name);
      std::erase_if(kept, [&](const DraClaim& k) {
        return k.namespace_name == c.namespace_name && k.name == c.name;
      });
    } else {
      std::erase_if(kept, [&](const DraClaim& k) {
        return k.namespace_name == c.namespace_name && k.name == c.name;
      });
      kept.push_back(c);
      state.PutClaim(std::make_shared<const DraClaim>(c));
    }
    const DraState fresh = MakeDraState(set, DraClaimSet::Of(kept), {});
    ASSERT_EQ(state.claims.size(), kept.size()) << "step " << step;
    ASSERT_TRUE(CountsOf(state) == CountsOf(fresh)) << "step " << step;
    ASSERT_TRUE(CountsOf(before) == counted_before) << "the state before changed at " << step;
    const DraClassesOnNode* n3 = state.ClassesOnNode("n3");
    if (n3 && (n3->at(0).blocked > 0 || n3->at(1).blocked > 0)) ++blocked_steps;
    if (state.SharesOf(4) != nullptr) {  // n1's shared GPU
      if (state.ClassesOnNode("n1")->at(0).shared == 1) {
        ++shared_steps;
      } else {
        ++full_steps;
      }
    }
  }
  // The walk went through allocated and released devices on every node.
  EXPECT_FALSE(CountsOf(state).holders.empty());
  EXPECT_GT(blocked_steps, 0) << "the walk held partitionable devices too";
  EXPECT_GT(shared_steps, 0) << "the walk held shares that left room";
  EXPECT_GT(full_steps, 0) << "and shares that left too little, or a whole hold beside them";
}

TEST(DraStateUpdateTest, ReleasingTheLastHolderFreesTheDevice) {
  std::shared_ptr<const DraDeviceSet> set = MakeDraDeviceSet(Fleet(), Classes());
  DraState state = MakeDraState(set, {}, {});
  DraClaim a;
  a.namespace_name = "acme";
  a.name = "a";
  a.allocated = true;
  a.results = {{"r", "gpu.nvidia.com", "n1", "gpu-0"}};
  DraClaim b = a;
  b.name = "b";
  state.PutClaim(std::make_shared<const DraClaim>(a));
  state.PutClaim(std::make_shared<const DraClaim>(b));
  ASSERT_NE(state.ClassesOnNode("n1"), nullptr);
  EXPECT_EQ(state.ClassesOnNode("n1")->at(0).allocated, 1) << "one device, two claims";
  EXPECT_EQ(state.usage.Find("acme")->gpus, 2) << "quota counts each claim's result";
  state.EraseClaim("acme", "a");
  EXPECT_EQ(state.ClassesOnNode("n1")->at(0).allocated, 1) << "b still holds it";
  state.EraseClaim("acme", "b");
  EXPECT_EQ(state.ClassesOnNode("n1")->at(0).allocated, 0);
  EXPECT_EQ(state.usage.Find("acme"), nullptr) << "a namespace holding nothing has no entry";
  EXPECT_FALSE(state.EraseClaim("acme", "b"));
}

}  // namespace
}  // namespace topology
