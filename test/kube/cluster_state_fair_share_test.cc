// kube::ClusterState under fair sharing: what pending pods ask is kept per namespace as pods come
// and go (fair sharing's "owed"), and Assume, bind's check, places a borrowing pod only from
// capacity no other tenant is owed and says whether it borrowed (test/testdata/fair_share).
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "kube/cluster_state.h"
#include "wire/k8s_codec.h"

namespace {

// When an assumption would lapse; these tests never wait for it.
const kube::Clock::TimePoint kShareExpiry = kube::Clock::TimePoint::max();

std::string ReadShareData(const std::string& name) {
  std::ifstream in(std::string(GT_TESTDATA_DIR) + "/fair_share/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A state synced with the scenario's policy and `cluster` file.
void LoadShareScenario(kube::ClusterState& state, const std::string& cluster) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(ReadShareData("policy.yaml"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  state.SetPolicy(std::make_shared<const topology::Policy>(*std::move(policy)));
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterText(ReadShareData(cluster));
  ASSERT_TRUE(data.ok()) << data.status();
  for (const auto& [name, labels] : data->namespace_labels) state.UpsertNamespace(name, labels);
  state.ReplaceNodes(data->nodes);
  state.ReplacePods(data->pods);
}

const topology::PodFacts* FindSharePod(const topology::ClusterData& data, const std::string& ns,
                                       const std::string& name) {
  for (const topology::PodFacts& pod : data.pods) {
    if (pod.namespace_name == ns && pod.name == name) return &pod;
  }
  return nullptr;
}

TEST(ClusterStateFairShareTest, PendingPodsAreCountedPerNamespaceAsTheyComeAndGo) {
  kube::ClusterState state{common::BuiltinCatalog()};
  LoadShareScenario(state, "cluster.json");
  auto pending_gpus = [&](const std::string& ns) -> int64_t {
    const auto& pending = state.Current()->snapshot->pending_usage();
    auto it = pending.find(ns);
    return it == pending.end() ? 0 : it->second.gpus;
  };
  EXPECT_EQ(pending_gpus("speech"), 2);
  EXPECT_EQ(pending_gpus("vision"), 0);

  absl::StatusOr<topology::ClusterData> data =
      wire::ParseClusterText(ReadShareData("cluster.json"));
  ASSERT_TRUE(data.ok());
  topology::PodFacts asr = *FindSharePod(*data, "speech", "asr");
  topology::PodFacts second = asr;
  second.name = "asr-2";
  second.uid = "uid-speech-asr-2";
  state.UpsertPod(second);
  EXPECT_EQ(pending_gpus("speech"), 4);
  // Bound: no longer pending.
  asr.node_name = "node-a";
  asr.phase = "Running";
  state.UpsertPod(asr);
  EXPECT_EQ(pending_gpus("speech"), 2);
  state.DeletePod(second.uid);
  EXPECT_EQ(pending_gpus("speech"), 0);
  EXPECT_FALSE(state.Current()->snapshot->pending_usage().contains("speech"));
}

TEST(ClusterStateFairShareTest, AssumeSaysWhetherAPodBorrowsAndRefusesWhatOthersAreOwed) {
  {
    // Two GPUs idle on node-b, nobody owed: batch borrows them.
    kube::ClusterState state{common::BuiltinCatalog()};
    LoadShareScenario(state, "cluster-idle.json");
    absl::StatusOr<topology::ClusterData> data =
        wire::ParseClusterText(ReadShareData("cluster-idle.json"));
    ASSERT_TRUE(data.ok());
    absl::StatusOr<topology::PlaceOutcome> placed =
        state.Assume(*FindSharePod(*data, "batch", "sweep-2"), "node-b", kShareExpiry);
    ASSERT_TRUE(placed.ok()) << placed.status();
    ASSERT_TRUE(placed->placed()) << placed->reason;
    EXPECT_EQ(placed->placement.share, "borrowed");
  }
  {
    // Full, and speech waits within its guarantee: batch's pod is refused, whatever the node.
    kube::ClusterState state{common::BuiltinCatalog()};
    LoadShareScenario(state, "cluster.json");
    topology::PodFacts sweep;
    sweep.uid = "uid-batch-sweep-2";
    sweep.namespace_name = "batch";
    sweep.name = "sweep-2";
    sweep.phase = "Pending";
    topology::ContainerFacts main;
    main.name = "main";
    main.limits.emplace("nvidia.com/gpu", topology::Quantity::FromUnits(2));
    main.requests = main.limits;
    sweep.containers.push_back(main);
    absl::StatusOr<topology::PlaceOutcome> placed = state.Assume(sweep, "node-b", kShareExpiry);
    ASSERT_TRUE(placed.ok()) << placed.status();
    EXPECT_FALSE(placed->placed());
    EXPECT_EQ(placed->rule, topology::Rule::kBorrowOwed);
    EXPECT_EQ(placed->reason,
              "tenant batch would borrow nvidia.com/gpu (2 requested, 4 above its guarantee of 0), "
              "but of the 0 free in the cluster 2 are owed to other tenants' pending pods");
  }
}

}  // namespace
