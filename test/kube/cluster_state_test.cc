// ClusterState: incremental publication agrees with a rebuild from scratch, assumptions count
// until confirmed or expired, and concurrent binds never over-allocate.
#include "kube/cluster_state.h"

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"

namespace kube {
namespace {

using topology::NodeFacts;
using topology::PodFacts;
using topology::Quantity;

NodeFacts MigNode(const std::string& name, int instances_3g) {
  NodeFacts n;
  n.name = name;
  n.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/mig.strategy", "mixed"},
              {"nvidia.com/mig.config.state", "success"}};
  n.allocatable = {{"nvidia.com/mig-3g.40gb", Quantity::FromUnits(instances_3g)},
                   {"nvidia.com/mig-1g.10gb", Quantity::FromUnits(4)}};
  return n;
}

PodFacts MigPod(const std::string& uid, const std::string& node,
                const std::string& profile = "3g.40gb", int count = 1) {
  PodFacts p;
  p.namespace_name = "team";
  p.name = "pod-" + uid;
  p.uid = uid;
  p.node_name = node;
  p.phase = node.empty() ? "Pending" : "Running";
  topology::ContainerFacts c;
  c.name = "main";
  c.limits = {{"nvidia.com/mig-" + profile, Quantity::FromUnits(count)}};
  p.containers.push_back(c);
  return p;
}

// Assume decided the pod fits and recorded it.
bool Placed(const absl::StatusOr<topology::PlaceOutcome>& outcome) {
  return outcome.ok() && outcome->placed();
}

class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_.SetPolicy(std::make_shared<const topology::Policy>(topology::Policy::AllowAll()));
  }
  int64_t Used(const std::string& node, const std::string& resource) {
    std::shared_ptr<const topology::ModelState> s = state_.Current();
    const topology::NodeState* n = s ? s->snapshot->FindNode(node) : nullptr;
    return n ? n->occupancy.Used(resource) : -1;
  }
  ClusterState state_{common::BuiltinCatalog()};
};

TEST_F(ClusterStateTest, NothingIsPublishedBeforeTheFirstSync) {
  EXPECT_EQ(state_.Current(), nullptr);
  state_.ReplaceNodes({MigNode("n1", 2)});
  EXPECT_EQ(state_.Current(), nullptr) << "pods not listed yet";
  state_.ReplacePods({});
  ASSERT_NE(state_.Current(), nullptr);
}

TEST_F(ClusterStateTest, WithDraRequiredNothingIsPublishedBeforeTheDraState) {
  state_.RequireDra();
  state_.ReplaceNodes({MigNode("n1", 2)});
  state_.ReplacePods({});
  EXPECT_EQ(state_.Current(), nullptr) << "DRA objects not listed yet";
  topology::DraDeviceClass mig;
  mig.name = "mig.nvidia.com";
  auto shared = std::make_shared<const topology::DraState>(topology::MakeDraState({}, {}, {mig}));
  state_.ReplaceDra(shared);
  ASSERT_NE(state_.Current(), nullptr);
  EXPECT_EQ(&state_.Current()->snapshot->dra(), shared.get()) << "shared, not copied";
}

TEST_F(ClusterStateTest, WatchEventsUpdateOnlyTouchedNodes) {
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 2)});
  state_.ReplacePods({MigPod("a", "n1")});
  std::shared_ptr<const topology::ModelState> before = state_.Current();
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);

  state_.UpsertPod(MigPod("b", "n1"));
  std::shared_ptr<const topology::ModelState> after = state_.Current();
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 2);
  // The untouched node is shared between the two snapshots, not copied.
  EXPECT_EQ(before->snapshot->FindNodeShared("n2"), after->snapshot->FindNodeShared("n2"));
  EXPECT_NE(before->snapshot->FindNodeShared("n1"), after->snapshot->FindNodeShared("n1"));
  // The old snapshot is immutable.
  EXPECT_EQ(before->snapshot->FindNode("n1")->occupancy.Used("nvidia.com/mig-3g.40gb"), 1);

  state_.DeletePod("a");
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  PodFacts done = MigPod("b", "n1");
  done.phase = "Succeeded";
  state_.UpsertPod(done);
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 0);
  EXPECT_TRUE(state_.OccupancyConsistent());
}

TEST_F(ClusterStateTest, RelistHealsAMissedDelete) {
  state_.ReplaceNodes({MigNode("n1", 2)});
  state_.ReplacePods({MigPod("a", "n1"), MigPod("b", "n1")});
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 2);
  // "b" was deleted while the watch was down: the next relist no longer lists it.
  state_.ReplacePods({MigPod("a", "n1")});
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  EXPECT_EQ(state_.counters().resync_corrections, 1u);
}

// Every bound pod, GPU or not, is in the snapshot's directory by UID (the preempt verb resolves
// kube-scheduler's UID-only victims with it): bound pods in, pending and finished ones out,
// deletes by the watch and by a relist, and a quiet relist publishes nothing new.
TEST_F(ClusterStateTest, TheDirectoryListsEveryBoundPodByUid) {
  PodFacts web;
  web.namespace_name = "shop";
  web.name = "web-0";
  web.uid = "cpu-1";
  web.node_name = "n2";
  web.phase = "Running";
  web.priority = 7;
  PodFacts pending = web;
  pending.uid = "cpu-2";
  pending.name = "web-1";
  pending.node_name = "";
  pending.phase = "Pending";
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 2)});
  state_.ReplacePods({MigPod("a", "n1"), web, pending});
  auto find = [&](const std::string& uid) { return state_.Current()->snapshot->FindBoundPod(uid); };
  ASSERT_NE(find("cpu-1"), nullptr);
  EXPECT_EQ(*find("cpu-1"), (topology::BoundPodRef{"shop", "web-0", "n2", 7}));
  ASSERT_NE(find("a"), nullptr);
  EXPECT_EQ(find("a")->node, "n1");
  EXPECT_EQ(find("cpu-2"), nullptr) << "not bound";

  PodFacts bound = pending;
  bound.node_name = "n1";
  bound.phase = "Running";
  state_.UpsertPod(bound);
  ASSERT_NE(find("cpu-2"), nullptr);
  EXPECT_EQ(find("cpu-2")->node, "n1");
  PodFacts done = bound;
  done.phase = "Succeeded";
  state_.UpsertPod(done);
  EXPECT_EQ(find("cpu-2"), nullptr) << "finished";

  state_.DeletePod("cpu-1");
  EXPECT_EQ(find("cpu-1"), nullptr);
  state_.UpsertPod(web);
  ASSERT_NE(find("cpu-1"), nullptr);
  // Deleted while the watch was down: the relist no longer lists it.
  state_.ReplacePods({MigPod("a", "n1")});
  EXPECT_EQ(find("cpu-1"), nullptr);
  const uint64_t publications = state_.counters().publications;
  state_.ReplacePods({MigPod("a", "n1")});
  EXPECT_EQ(state_.counters().publications, publications);
  EXPECT_EQ(state_.Current()->snapshot->bound_pods().size(), 1u);
}

TEST_F(ClusterStateTest, AQuietRelistChangesNothing) {
  state_.ReplaceNamespaces({{"team", {{"tier", "trusted"}}}});
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 2)});
  state_.ReplacePods({MigPod("a", "n1"), MigPod("b", "n2"), MigPod("p", "")});
  std::shared_ptr<const topology::ModelState> before = state_.Current();
  ASSERT_NE(before, nullptr);
  const uint64_t publications = state_.counters().publications;

  // What the watch already delivered, listed again: no new model, no correction.
  state_.ReplaceNamespaces({{"team", {{"tier", "trusted"}}}});
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 2)});
  state_.ReplacePods({MigPod("a", "n1"), MigPod("b", "n2"), MigPod("p", "")});
  EXPECT_EQ(state_.Current(), before);
  EXPECT_EQ(state_.counters().publications, publications);
  EXPECT_EQ(state_.counters().resync_corrections, 0u);
  EXPECT_TRUE(state_.PendingPod("p").has_value());
  EXPECT_TRUE(state_.OccupancyConsistent());
}

TEST_F(ClusterStateTest, ARelistRebuildsOnlyTheNodesItCorrects) {
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 2), MigNode("n3", 2)});
  state_.ReplacePods({MigPod("a", "n1"), MigPod("b", "n2"), MigPod("c", "n3")});
  std::shared_ptr<const topology::ModelState> before = state_.Current();

  // Missed while the watch was down: n2 grew a slice, pod d appeared on n1, pod b was deleted,
  // and pod c now holds two slices instead of one.
  state_.ReplaceNodes({MigNode("n1", 2), MigNode("n2", 3), MigNode("n3", 2)});
  state_.ReplacePods({MigPod("a", "n1"), MigPod("d", "n1"), MigPod("c", "n3", "3g.40gb", 2)});
  std::shared_ptr<const topology::ModelState> after = state_.Current();
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 2);
  EXPECT_EQ(Used("n2", "nvidia.com/mig-3g.40gb"), 0);
  EXPECT_EQ(Used("n3", "nvidia.com/mig-3g.40gb"), 2);
  EXPECT_EQ(after->snapshot->FindNode("n2")->facts.allocatable.at("nvidia.com/mig-3g.40gb"),
            Quantity::FromUnits(3));
  EXPECT_EQ(state_.counters().resync_corrections, 4u);  // n2, d, b, c
  EXPECT_TRUE(state_.OccupancyConsistent());

  // A relist that corrects nothing on a node leaves that node's state shared.
  state_.ReplacePods({MigPod("a", "n1"), MigPod("d", "n1")});
  EXPECT_EQ(Used("n3", "nvidia.com/mig-3g.40gb"), 0);
  EXPECT_EQ(state_.Current()->snapshot->FindNodeShared("n1"),
            after->snapshot->FindNodeShared("n1"));
  EXPECT_EQ(state_.Current()->snapshot->FindNodeShared("n2"),
            after->snapshot->FindNodeShared("n2"));
  EXPECT_NE(before->snapshot->FindNodeShared("n2"), after->snapshot->FindNodeShared("n2"));
  EXPECT_EQ(state_.counters().resync_corrections, 5u);
}

TEST_F(ClusterStateTest, RelistsKeepAnAssumptionUntilTheyShowTheBinding) {
  state_.ReplaceNodes({MigNode("n1", 2)});
  state_.ReplacePods({MigPod("p", "")});
  auto expiry = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(Placed(state_.Assume(MigPod("p", ""), "n1", expiry)));
  // Listed before the Binding landed: still pending, still assumed, counted once.
  state_.ReplacePods({MigPod("p", "")});
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  EXPECT_EQ(state_.assumption_count(), 1u);
  // Listed bound: the assumption is confirmed, still counted once.
  state_.ReplacePods({MigPod("p", "n1")});
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  EXPECT_EQ(state_.assumption_count(), 0u);
  EXPECT_EQ(state_.counters().assumptions_confirmed, 1u);
  EXPECT_TRUE(state_.OccupancyConsistent());
}

TEST_F(ClusterStateTest, AssumptionCountsUntilConfirmedThenOnce) {
  state_.ReplaceNodes({MigNode("n1", 2)});
  state_.ReplacePods({MigPod("p", "")});
  auto expiry = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  absl::StatusOr<topology::PlaceOutcome> placed = state_.Assume(MigPod("p", ""), "n1", expiry);
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_TRUE(placed->placed()) << placed->reason;
  EXPECT_EQ(placed->placement.mig_profile, "3g.40gb");
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  // The watch confirms the binding: still counted once.
  state_.UpsertPod(MigPod("p", "n1"));
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  EXPECT_EQ(state_.assumption_count(), 0u);
  EXPECT_EQ(state_.counters().assumptions_confirmed, 1u);
  EXPECT_TRUE(state_.OccupancyConsistent());
}

TEST_F(ClusterStateTest, UnconfirmedAssumptionsExpireAndForgetReleases) {
  state_.ReplaceNodes({MigNode("n1", 2)});
  state_.ReplacePods({});
  auto now = std::chrono::steady_clock::now();
  ASSERT_TRUE(Placed(state_.Assume(MigPod("x", ""), "n1", now + std::chrono::seconds(1))));
  ASSERT_TRUE(Placed(state_.Assume(MigPod("y", ""), "n1", now + std::chrono::seconds(60))));
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 2);
  absl::StatusOr<topology::PlaceOutcome> third = state_.Assume(MigPod("z", ""), "n1", now);
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_FALSE(third->placed());
  EXPECT_EQ(third->reason, "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2");
  EXPECT_EQ(third->verdict, topology::Verdict::kUnschedulable);
  EXPECT_EQ(state_.ExpireAssumptions(now + std::chrono::seconds(2)), 1);
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 1);
  state_.Forget("y");
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 0);
}

TEST_F(ClusterStateTest, FiftyConcurrentBindsForThreeSlices) {
  state_.ReplaceNodes({MigNode("n1", 3), MigNode("n2", 7)});
  state_.ReplacePods({});
  std::atomic<int> won{0}, lost{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&, i] {
      bool placed =
          Placed(state_.Assume(MigPod(absl::StrCat("race-", i), ""), "n1",
                               std::chrono::steady_clock::now() + std::chrono::seconds(30)));
      (placed ? won : lost).fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(won.load(), 3);
  EXPECT_EQ(lost.load(), 47);
  EXPECT_EQ(Used("n1", "nvidia.com/mig-3g.40gb"), 3);
  EXPECT_EQ(Used("n2", "nvidia.com/mig-3g.40gb"), 0);
  EXPECT_TRUE(state_.OccupancyConsistent());
}

// Drives `state` through `steps` random events over four MIG nodes (7 3g.40gb slices): pending
// pods of two namespaces seen by the watch, binds (assume, then the POST fails or lands and the
// watch reports it, sometimes late), deletes, finishes and full relists. `check` runs after each.
void RandomEvents(ClusterState& state, std::mt19937& rng, int steps,
                  absl::FunctionRef<void(int step)> check) {
  std::vector<std::string> nodes = {"n0", "n1", "n2", "n3"};
  state.ReplaceNodes({MigNode("n0", 2), MigNode("n1", 2), MigNode("n2", 1), MigNode("n3", 2)});
  state.ReplacePods({});
  std::map<std::string, PodFacts> live;  // what the API server holds
  for (int step = 0; step < steps; ++step) {
    std::string uid = absl::StrCat("u", rng() % 40);
    std::string node = nodes[rng() % nodes.size()];
    switch (rng() % 5) {
      case 0: {  // a new pending pod seen by the watch
        PodFacts p = MigPod(uid, "", rng() % 2 ? "3g.40gb" : "1g.10gb");
        if (rng() % 3 == 0) p.namespace_name = "other";
        live[uid] = p;
        state.UpsertPod(p);
        break;
      }
      case 1: {  // bind: assume, then the API server binds it and the watch reports it
        auto it = live.find(uid);
        if (it == live.end() || !it->second.node_name.empty()) break;
        if (Placed(state.Assume(it->second, node,
                                std::chrono::steady_clock::now() + std::chrono::hours(1)))) {
          if (rng() % 5 == 0) {  // the Binding POST failed: bind forgets the assumption
            state.Forget(uid);
            break;
          }
          it->second.node_name = node;
          it->second.phase = "Running";
          if (rng() % 3) state.UpsertPod(it->second);  // sometimes the watch lags
        }
        break;
      }
      case 2:  // delete
        live.erase(uid);
        state.DeletePod(uid);
        break;
      case 3: {  // finish
        auto it = live.find(uid);
        if (it == live.end() || it->second.node_name.empty()) break;
        it->second.phase = "Succeeded";
        state.UpsertPod(it->second);
        break;
      }
      case 4: {  // a full relist
        if (rng() % 10) break;
        std::vector<PodFacts> all;
        for (const auto& [k, p] : live) all.push_back(p);
        state.ReplacePods(all);
        break;
      }
    }
    check(step);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Property: after any sequence of binds, watch events, deletes and relists, the incremental
// occupancy equals a recomputation from scratch and never exceeds capacity.
TEST_F(ClusterStateTest, RandomEventSequencesKeepOccupancyExact) {
  std::mt19937 rng(7);
  RandomEvents(state_, rng, 3000, [&](int step) {
    if (step % 50 == 0) {
      ASSERT_TRUE(state_.OccupancyConsistent()) << "step " << step;
    }
  });
  ASSERT_TRUE(state_.OccupancyConsistent());
  std::shared_ptr<const topology::ModelState> s = state_.Current();
  s->snapshot->ForEachNode([](const topology::NodeState& n) {
    for (const topology::OfferedResource& r : n.supply.resources) {
      EXPECT_LE(n.occupancy.Used(r.name), r.allocatable) << n.facts.name << " " << r.name;
    }
  });
}

// Property: binds never take a tenant above its quota, whatever the order of binds, deletes,
// finishes and relists, and the snapshot's per-namespace sums equal a recount of the holds.
TEST_F(ClusterStateTest, RandomEventSequencesNeverTakeATenantAboveItsQuota) {
  auto policy = std::make_shared<topology::Policy>(topology::Policy::AllowAll());
  topology::Tenant team;
  team.name = "team";
  team.tier = "default";
  team.namespaces = {"team"};
  team.quota.mig_instances = {{"3g.40gb", 3}};
  team.quota.mig_compute_slices = 10;
  team.quota.gpu_pods = 6;
  policy->tenants.push_back(team);
  state_.SetPolicy(policy);
  std::mt19937 rng(11);
  int at_quota_steps = 0;
  RandomEvents(state_, rng, 4000, [&](int step) {
    std::shared_ptr<const topology::ModelState> s = state_.Current();
    topology::QuotaUsage held = topology::TenantUsage(*s->snapshot, *s->policy, "team");
    auto three_g = held.mig_instances.find("3g.40gb");
    int64_t slices_3g = three_g == held.mig_instances.end() ? 0 : three_g->second;
    ASSERT_LE(slices_3g, 3) << "step " << step;
    ASSERT_LE(held.mig_compute_slices, 10) << "step " << step;
    ASSERT_LE(held.gpu_pods, 6) << "step " << step;
    at_quota_steps += slices_3g == 3 || held.gpu_pods == 6;
    topology::UsageByNamespace recount;
    s->snapshot->ForEachNode([&](const topology::NodeState& n) {
      for (const auto& hold : n.holds) {
        recount[hold->namespace_name].Add(
            topology::HoldUsage(hold->demand, n.supply, n.facts.labels, *s->policy));
      }
    });
    ASSERT_EQ(s->snapshot->usage(), recount) << "step " << step;
  });
  EXPECT_GT(at_quota_steps, 100) << "the sequence must actually reach the quota";
}

}  // namespace
}  // namespace kube
