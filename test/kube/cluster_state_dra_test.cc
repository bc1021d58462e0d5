// Bind for a pod whose nvidia.com/gpu a DRA class backs (KEP-5004 extended resources): Assume
// counts it on the node's free DRA devices, holds it, and refuses the next pod for the same
// device. The cluster file has a node with one free GPU device and one whose device a claim
// holds; neither has device-plugin allocatable.
#include <chrono>
#include <string>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "kube/cluster_state.h"
#include "test/support/test_inputs.h"
#include "wire/k8s_codec.h"

namespace kube {
namespace cluster_state_dra_test {

using testing_support::JsonOrFail;
using testing_support::Testdata;

topology::PodFacts PodNamed(const topology::ClusterData& data, const std::string& name) {
  for (const topology::PodFacts& p : data.pods) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no pod " << name;
  return {};
}

constexpr char kNoFreeDevice[] =
    "no free nvidia.com/gpu on DRA devices of class gpu.nvidia.com (0 of 1 free)";

TEST(ClusterStateDraTest, BindCountsDraExtendedResourcesOnTheNodesDevices) {
  absl::StatusOr<topology::ClusterData> data =
      wire::ParseClusterList(JsonOrFail(Testdata("dra/cluster-extended-resources.json")));
  ASSERT_TRUE(data.ok()) << data.status();
  ClusterState state(common::BuiltinCatalog());
  state.SetPolicy(std::make_shared<const topology::Policy>(topology::Policy::AllowAll()));
  topology::PodFacts wants = PodNamed(*data, "wants-gpu");
  state.ReplaceAll(*data);
  const auto expiry = std::chrono::steady_clock::now() + std::chrono::seconds(30);

  absl::StatusOr<topology::PlaceOutcome> busy = state.Assume(wants, "dra-busy", expiry);
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_FALSE(busy->placed());
  EXPECT_EQ(busy->reason, kNoFreeDevice);

  absl::StatusOr<topology::PlaceOutcome> free = state.Assume(wants, "dra-free", expiry);
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_TRUE(free->placed()) << free->reason;
  EXPECT_EQ(state.assumption_count(), 1u);

  // The assumption holds the one device: a second pod finds none left.
  topology::PodFacts second = wants;
  second.name = "wants-gpu-2";
  second.uid = "p0000000-0000-4000-8000-000000000003";
  absl::StatusOr<topology::PlaceOutcome> again = state.Assume(second, "dra-free", expiry);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->placed());
  EXPECT_EQ(again->reason, kNoFreeDevice);
}

// Once bound, the pod's nvidia.com/gpu is served by the extended-resource claim kube-scheduler
// made and allocated for it: the tenant holds one GPU for it (the claim's device), not two.
TEST(ClusterStateDraTest, AnExtendedResourcePodAndItsClaimCountOnceTowardTheQuota) {
  absl::StatusOr<topology::ClusterData> data =
      wire::ParseClusterList(JsonOrFail(Testdata("dra/cluster-extended-resources.json")));
  ASSERT_TRUE(data.ok()) << data.status();
  for (topology::PodFacts& p : data->pods) {
    if (p.name == "wants-gpu") p.node_name = "dra-free";
  }
  topology::DraClaim extended;
  extended.namespace_name = "team-a";
  extended.name = "wants-gpu-gpu-x7k2p";
  extended.allocated = true;
  extended.allocated_node = "dra-free";
  extended.results = {{"container-0-request-0", "gpu.nvidia.com", "dra-free", "gpu-0"}};
  extended.reserved_for = {{"pods", "wants-gpu", PodNamed(*data, "wants-gpu").uid}};
  extended.extended_resource_claim = true;
  data->dra_claims.push_back(extended);

  ClusterState state(common::BuiltinCatalog());
  auto policy = std::make_shared<const topology::Policy>(topology::Policy::AllowAll());
  state.SetPolicy(policy);
  state.ReplaceAll(*data);
  const topology::ClusterSnapshot& snapshot = *state.Current()->snapshot;
  const std::string tenant =
      topology::ResolveTenant(*policy, "team-a", snapshot.NamespaceLabels("team-a")).name;
  topology::QuotaUsage used = topology::TenantUsage(snapshot, *policy, tenant);
  // holder's claim on dra-busy, and the claim that serves wants-gpu on dra-free.
  EXPECT_EQ(used.gpus, 2);
  EXPECT_EQ(used.gpu_pods, 1);  // wants-gpu; holder asks no extended resource
}

}  // namespace cluster_state_dra_test
}  // namespace kube
