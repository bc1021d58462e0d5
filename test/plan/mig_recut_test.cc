// Re-cut proposals: the least disruptive set of node re-cuts for pending MIG pods, on tables and
// against a brute force over every assignment on small random fleets.
#include "plan/mig_recut.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "test/plan/plan_test_util.h"

namespace plan {
namespace {

using plan::testing::Model;
using topology::CheckLayout;
using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;

const MigProfile* P(const GpuModel& m, absl::string_view name) {
  const MigProfile* p = m.FindProfile(name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

RecutNode Node(std::string name, const GpuModel& model, int gpus,
               std::vector<std::string> keep = {}, std::map<std::string, int64_t> free_now = {},
               int drained_pods = 0, std::vector<std::string> tenants = {}) {
  RecutNode n;
  n.name = std::move(name);
  n.model = &model;
  n.gpus = gpus;
  for (const std::string& k : keep) n.keep.push_back(P(model, k));
  n.free_now.insert(free_now.begin(), free_now.end());
  n.drained_pods = drained_pods;
  n.drained_tenants = std::move(tenants);
  return n;
}

RecutPod Pod(std::string name, std::string profile, std::vector<size_t> nodes,
             std::string tenant = "acme") {
  return {std::move(name), std::move(tenant), {{std::move(profile), 1}}, std::move(nodes)};
}

std::string LayoutText(const std::vector<PlacedInstance>& layout) {
  std::vector<std::string> parts;
  for (const PlacedInstance& i : layout)
    parts.push_back(absl::StrCat(i.profile->name, "@", i.start));
  return absl::StrJoin(parts, " ");
}

TEST(MigRecutTest, AnIdleNodeIsReCutBeforeOneWithPods) {
  const GpuModel& h100 = Model("H100-80GB");
  RecutProblem problem;
  problem.nodes.push_back(
      Node("busy", h100, 1, {"1g.10gb", "1g.10gb"}, {{"1g.10gb", 5}}, 2, {"bank", "research"}));
  problem.nodes.push_back(Node("idle", h100, 1, {}, {{"1g.10gb", 7}}));
  problem.pods.push_back(Pod("acme/llm", "3g.40gb", {0, 1}));
  RecutProposal p = ProposeRecuts(problem);
  ASSERT_EQ(p.recuts.size(), 1u);
  EXPECT_EQ(p.recuts[0].node, 1u);
  EXPECT_EQ(p.recuts[0].pods, std::vector<size_t>{0});
  EXPECT_EQ(p.cost, (RecutCost{1, 0, 0, 1}));
  EXPECT_TRUE(p.exhaustive);
  // The leftover memory slices are cut into the smallest profile rather than left idle.
  ASSERT_EQ(p.recuts[0].gpus.size(), 1u);
  EXPECT_EQ(LayoutText(p.recuts[0].gpus[0]), "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
}

TEST(MigRecutTest, FewerPodsThenFewerTenantsThenFewerNodes) {
  const GpuModel& h100 = Model("H100-80GB");
  RecutProblem problem;
  problem.nodes.push_back(
      Node("three-pods", h100, 1, {"1g.10gb", "1g.10gb", "1g.10gb"}, {}, 3, {"bank"}));
  problem.nodes.push_back(
      Node("two-tenants", h100, 1, {"1g.10gb", "1g.10gb"}, {}, 2, {"bank", "research"}));
  problem.nodes.push_back(Node("one-tenant", h100, 1, {"1g.10gb", "1g.10gb"}, {}, 2, {"bank"}));
  problem.pods.push_back(Pod("acme/a", "3g.40gb", {0, 1, 2}));
  RecutProposal p = ProposeRecuts(problem);
  ASSERT_EQ(p.recuts.size(), 1u);
  EXPECT_EQ(problem.nodes[p.recuts[0].node].name, "one-tenant");
  EXPECT_EQ(p.cost, (RecutCost{1, 2, 1, 1}));

  // Two pods: one re-cut node holding both beats two re-cuts.
  problem.nodes.push_back(Node("idle-a", h100, 1));
  problem.nodes.push_back(Node("idle-b", h100, 1));
  problem.pods = {Pod("acme/a", "3g.40gb", {3, 4}), Pod("acme/b", "3g.40gb", {3, 4})};
  p = ProposeRecuts(problem);
  ASSERT_EQ(p.recuts.size(), 1u);
  EXPECT_EQ(p.recuts[0].pods, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(p.cost, (RecutCost{2, 0, 0, 1}));
}

TEST(MigRecutTest, WhatFitsTodayNeedsNoReCut) {
  const GpuModel& h100 = Model("H100-80GB");
  RecutProblem problem;
  problem.nodes.push_back(
      Node("a", h100, 1, {"3g.40gb"}, {{"3g.40gb", 1}, {"1g.10gb", 0}}, 1, {"bank"}));
  problem.nodes.push_back(Node("idle", h100, 1));
  problem.pods.push_back(Pod("acme/fits", "3g.40gb", {0, 1}));
  problem.pods.push_back(Pod("acme/needs-cut", "2g.20gb", {0, 1}));
  RecutProposal p = ProposeRecuts(problem);
  EXPECT_EQ(p.fits_now, (std::vector<std::pair<size_t, size_t>>{{0, 0}}));
  ASSERT_EQ(p.recuts.size(), 1u);
  EXPECT_EQ(p.recuts[0].node, 1u);
  EXPECT_EQ(p.recuts[0].pods, std::vector<size_t>{1});
}

TEST(MigRecutTest, HeldInstancesAndTheCanaryReserveStayInTheNewGeometry) {
  const GpuModel& h100 = Model("H100-80GB");
  RecutProblem problem;
  // The 1g.10gb is the canary reserve (or a pod's instance): a 7g.80gb cannot take its place.
  problem.nodes.push_back(Node("reserved", h100, 1, {"1g.10gb"}, {{"1g.10gb", 6}}));
  problem.nodes.push_back(Node("other-pool", h100, 1));
  problem.pods.push_back(Pod("acme/big", "7g.80gb", {0}));
  problem.pods.push_back(Pod("acme/mid", "4g.40gb", {0}));
  RecutProposal p = ProposeRecuts(problem);
  EXPECT_EQ(p.unserved, std::vector<size_t>{0});
  ASSERT_EQ(p.recuts.size(), 1u);
  EXPECT_EQ(p.recuts[0].node, 0u) << "never a node the pod may not use";
  std::multiset<std::string> cut;
  for (const PlacedInstance& i : p.recuts[0].gpus[0]) cut.insert(i.profile->name);
  EXPECT_EQ(cut.count("4g.40gb"), 1u);
  EXPECT_GE(cut.count("1g.10gb"), 1u);
}

TEST(MigRecutTest, PodsOfAProfileTheModelLacksAreUnserved) {
  RecutProblem problem;
  problem.nodes.push_back(Node("a100", Model("A100-40GB"), 1));
  problem.pods.push_back(Pod("acme/h100-only", "3g.40gb", {0}));
  RecutProposal p = ProposeRecuts(problem);
  EXPECT_TRUE(p.recuts.empty());
  EXPECT_EQ(p.unserved, std::vector<size_t>{0});
  EXPECT_EQ(p.cost, RecutCost{});
}

TEST(MigRecutTest, ASmallBudgetStillGivesAValidProposal) {
  const GpuModel& h100 = Model("H100-80GB");
  RecutProblem problem;
  for (int n = 0; n < 6; ++n) {
    problem.nodes.push_back(
        Node(absl::StrCat("n", n), h100, 1, {"1g.10gb"}, {}, n % 3, {absl::StrCat("t", n)}));
  }
  for (int i = 0; i < 8; ++i) {
    problem.pods.push_back(
        Pod(absl::StrCat("acme/p", i), i % 2 ? "2g.20gb" : "3g.40gb", {0, 1, 2, 3, 4, 5}));
  }
  RecutProposal p = ProposeRecuts(problem, /*step_budget=*/10);
  EXPECT_FALSE(p.exhaustive);
  RecutProposal full = ProposeRecuts(problem);
  EXPECT_TRUE(full.exhaustive);
  EXPECT_FALSE(p.cost.BetterThan(full.cost));
}

// --- Brute force -------------------------------------------------------------------------------

// Every way to spread the profiles over `gpus` GPUs, each laid out by PlaceProfiles.
bool SpreadFits(const GpuModel& m, int gpus, const std::vector<const MigProfile*>& items,
                std::vector<std::vector<const MigProfile*>>& bins, size_t i) {
  if (i == items.size()) {
    for (const auto& bin : bins) {
      if (!bin.empty() && !topology::PlaceProfiles(m, bin)) return false;
    }
    return true;
  }
  for (int g = 0; g < gpus; ++g) {
    bins[g].push_back(items[i]);
    bool ok = SpreadFits(m, gpus, items, bins, i + 1);
    bins[g].pop_back();
    if (ok) return true;
    if (bins[g].empty()) break;  // empty GPUs are alike
  }
  return false;
}

bool BruteFits(const GpuModel& m, int gpus, const std::vector<const MigProfile*>& items) {
  if (items.empty()) return true;
  std::vector<std::vector<const MigProfile*>> bins(gpus);
  return SpreadFits(m, gpus, items, bins, 0);
}

// The best cost over every assignment of pods to nodes (or to nothing).
RecutCost BruteBest(const RecutProblem& problem) {
  const size_t pods = problem.pods.size();
  std::vector<int> choice(pods, -1);  // index into pods[p].nodes, or -1
  RecutCost best;
  while (true) {
    bool valid = true;
    RecutCost cost;
    std::set<std::string> tenants;
    for (size_t n = 0; n < problem.nodes.size() && valid; ++n) {
      const RecutNode& node = problem.nodes[n];
      std::vector<const MigProfile*> want;
      std::map<std::string, int64_t> counts;
      int served = 0;
      for (size_t p = 0; p < pods; ++p) {
        if (choice[p] < 0 || problem.pods[p].nodes[choice[p]] != n) continue;
        ++served;
        for (const auto& [name, count] : problem.pods[p].profiles) {
          counts[name] += count;
          const MigProfile* profile = node.model->FindProfile(name);
          if (!profile) valid = false;
          for (int64_t i = 0; profile && i < count; ++i) want.push_back(profile);
        }
      }
      if (served == 0 || !valid) continue;
      cost.served += served;
      bool as_is = true;
      for (const auto& [name, count] : counts) {
        auto free = node.free_now.find(name);
        as_is = as_is && free != node.free_now.end() && count <= free->second;
      }
      if (as_is) continue;
      std::vector<const MigProfile*> all = node.keep;
      all.insert(all.end(), want.begin(), want.end());
      if (!BruteFits(*node.model, node.gpus, all)) {
        valid = false;
        continue;
      }
      cost.drained_pods += node.drained_pods;
      cost.recut_nodes += 1;
      tenants.insert(node.drained_tenants.begin(), node.drained_tenants.end());
    }
    cost.drained_tenants = static_cast<int>(tenants.size());
    if (valid && cost.BetterThan(best)) best = cost;
    size_t p = 0;
    for (; p < pods; ++p) {
      if (++choice[p] < static_cast<int>(problem.pods[p].nodes.size())) break;
      choice[p] = -1;
    }
    if (p == pods) break;
  }
  return best;
}

// The proposal keeps every promise: valid layouts that hold the kept instances and the pods
// sent there, pods sent where they may go, free instances not overcommitted, the cost it states.
void ExpectSound(const RecutProblem& problem, const RecutProposal& p) {
  std::set<std::string> tenants;
  RecutCost cost;
  std::map<size_t, std::map<std::string, int64_t>> used_now;
  for (const auto& [pod, node] : p.fits_now) {
    const auto& nodes = problem.pods[pod].nodes;
    EXPECT_NE(std::find(nodes.begin(), nodes.end(), node), nodes.end());
    for (const auto& [name, count] : problem.pods[pod].profiles) used_now[node][name] += count;
    cost.served += 1;
  }
  for (const auto& [node, used] : used_now) {
    for (const auto& [name, count] : used) {
      auto free = problem.nodes[node].free_now.find(name);
      ASSERT_NE(free, problem.nodes[node].free_now.end());
      EXPECT_LE(count, free->second);
    }
  }
  for (const NodeRecut& r : p.recuts) {
    const RecutNode& node = problem.nodes[r.node];
    ASSERT_EQ(static_cast<int>(r.gpus.size()), node.gpus);
    std::map<std::string, int> offered, wanted;
    for (const auto& layout : r.gpus) {
      EXPECT_TRUE(CheckLayout(*node.model, layout).ok()) << LayoutText(layout);
      for (const PlacedInstance& i : layout) offered[i.profile->name]++;
    }
    for (const MigProfile* k : node.keep) wanted[k->name]++;
    for (size_t pod : r.pods) {
      const auto& nodes = problem.pods[pod].nodes;
      EXPECT_NE(std::find(nodes.begin(), nodes.end(), r.node), nodes.end());
      for (const auto& [name, count] : problem.pods[pod].profiles) wanted[name] += count;
    }
    for (const auto& [name, count] : wanted) EXPECT_GE(offered[name], count) << name;
    cost.served += static_cast<int>(r.pods.size());
    cost.drained_pods += node.drained_pods;
    cost.recut_nodes += 1;
    tenants.insert(node.drained_tenants.begin(), node.drained_tenants.end());
  }
  cost.drained_tenants = static_cast<int>(tenants.size());
  EXPECT_EQ(cost, p.cost);
  EXPECT_EQ(p.cost.served + p.unserved.size(), problem.pods.size());
}

TEST(MigRecutTest, NoProposalDrainsMoreThanNeededOnSmallFleets) {
  std::mt19937 rng(20261205);
  const std::vector<const GpuModel*> models = {&Model("H100-80GB"), &Model("A100-40GB")};
  const std::vector<std::string> tenant_names = {"bank", "research", "acme"};
  int recut_cases = 0;
  for (int round = 0; round < 300; ++round) {
    const GpuModel& model = *models[rng() % models.size()];
    RecutProblem problem;
    const int nodes = 1 + static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) {
      const int gpus = 1 + static_cast<int>(rng() % 2);
      // Held instances: a random cut of the node's GPUs, of which a random part is taken.
      std::vector<const MigProfile*> cut;
      for (int g = 0; g < gpus; ++g) {
        std::vector<const MigProfile*> one;
        for (int tries = 0; tries < 4; ++tries) {
          one.push_back(&model.profiles[rng() % model.profiles.size()]);
          if (!topology::PlaceProfiles(model, one)) one.pop_back();
        }
        cut.insert(cut.end(), one.begin(), one.end());
      }
      RecutNode node;
      node.name = absl::StrCat("n", n);
      node.model = &model;
      node.gpus = gpus;
      std::set<std::string> tenants;
      for (const MigProfile* p : cut) {
        if (rng() % 2) {
          node.keep.push_back(p);
          node.drained_pods += 1;
          tenants.insert(tenant_names[rng() % tenant_names.size()]);
        } else {
          node.free_now[p->name] += 1;
        }
      }
      node.drained_tenants.assign(tenants.begin(), tenants.end());
      problem.nodes.push_back(std::move(node));
    }
    const int pods = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < pods; ++i) {
      RecutPod pod;
      pod.name = absl::StrCat("acme/p", i);
      pod.tenant = "acme";
      pod.profiles.emplace_back(model.profiles[rng() % model.profiles.size()].name, 1);
      if (rng() % 4 == 0) {
        pod.profiles.emplace_back(model.profiles[rng() % model.profiles.size()].name, 1);
      }
      for (int n = 0; n < nodes; ++n) {
        if (rng() % 4 != 0) pod.nodes.push_back(n);
      }
      problem.pods.push_back(std::move(pod));
    }
    RecutProposal p = ProposeRecuts(problem);
    SCOPED_TRACE(absl::StrCat("round ", round));
    EXPECT_TRUE(p.exhaustive);
    EXPECT_EQ(p.cost, BruteBest(problem));
    ExpectSound(problem, p);
    recut_cases += !p.recuts.empty();
  }
  EXPECT_GT(recut_cases, 50) << "the random fleets should exercise re-cuts";
}

}  // namespace
}  // namespace plan
