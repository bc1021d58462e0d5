// extender/decide: one pod over candidate nodes of the demo model (cmd/demo). Every candidate
// is visited once and in order, looked up at most once, never for a pod without GPU demand; an
// unknown node is unschedulable; scores only when asked and only for fits; tenant and tier
// from the policy and the snapshot's namespace labels; a malformed pod is InvalidArgument and
// visits nothing.
#include "extender/decide.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test/extender/demo_model.h"

namespace extender {
namespace {

using testing::DemoState;

topology::PodFacts PodRequesting(const std::string& ns, const std::string& resource,
                                 const std::string& quantity, topology::Labels annotations = {}) {
  topology::PodFacts pod;
  pod.namespace_name = ns;
  pod.name = "p";
  pod.uid = "u-1";
  pod.phase = "Pending";
  pod.priority = 1000;  // above every demo pod: its own tenant's pods on a full node may go
  pod.annotations = std::move(annotations);
  topology::ContainerFacts c;
  c.name = "main";
  absl::StatusOr<topology::Quantity> q = topology::Quantity::Parse(quantity);
  EXPECT_TRUE(q.ok()) << quantity;
  if (q.ok()) c.limits.emplace(resource, *q);
  pod.containers.push_back(std::move(c));
  return pod;
}

// One visit, copied out of the visitor (the outcome's views live only during the call).
struct Seen {
  size_t index;
  topology::Verdict verdict;
  std::string code;
  std::string reason;
  int score;
};

struct Trace {
  absl::StatusOr<PodDecision> decision;
  std::vector<size_t> lookups;
  std::vector<Seen> visits;
};

class DecideTest : public ::testing::Test {
 protected:
  Trace Decide(const topology::PodFacts& pod, const std::vector<absl::string_view>& candidates,
               bool with_scores = false) {
    Trace run{absl::UnknownError("not run"), {}, {}};
    run.decision = extender::Decide(
        pod, *state_.snapshot, *state_.policy, candidates,
        [&](size_t i) {
          run.lookups.push_back(i);
          return state_.snapshot->FindNode(candidates[i]);
        },
        with_scores,
        [&](size_t i, const NodeOutcome& o) {
          EXPECT_EQ(o.fits(), o.fit.verdict == topology::Verdict::kFits);
          run.visits.push_back(
              {i, o.fit.verdict, std::string(o.fit.code()), o.fit.Reason(), o.score});
        });
    return run;
  }

  topology::ModelState state_ = DemoState();
};

TEST_F(DecideTest, VisitsEveryCandidateInOrderLookingEachUpOnce) {
  Trace run = Decide(PodRequesting("acme", "nvidia.com/mig-3g.40gb", "1"),
                     {"mig-b", "ghost", "mig-a", "cpu-a"});
  ASSERT_TRUE(run.decision.ok()) << run.decision.status();
  EXPECT_EQ(run.lookups, (std::vector<size_t>{0, 1, 2, 3}));
  struct Want {
    topology::Verdict verdict;
    std::string code;
    std::string reason;
  };
  const std::vector<Want> want = {
      {topology::Verdict::kUnschedulable, "exhausted",
       "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2"},
      {topology::Verdict::kUnschedulable, "unknown-node", "node not yet known to gpu-tenancy"},
      {topology::Verdict::kFits, "", ""},
      {topology::Verdict::kUnresolvable, "no-gpu", "no NVIDIA GPU on node"},
  };
  ASSERT_EQ(run.visits.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(run.visits[i].index, i);
    EXPECT_EQ(run.visits[i].verdict, want[i].verdict);
    EXPECT_EQ(run.visits[i].code, want[i].code);
    EXPECT_EQ(run.visits[i].reason, want[i].reason);
    EXPECT_EQ(run.visits[i].score, 0) << "no scores unless asked";
  }
  EXPECT_EQ(run.decision->pod, "acme/p");
  EXPECT_EQ(run.decision->tenant, "acme");
  EXPECT_EQ(run.decision->tier, "untrusted");
  EXPECT_EQ(run.decision->demand.devices,
            (topology::ResourceCounts{{"nvidia.com/mig-3g.40gb", 1}}));
}

TEST_F(DecideTest, ScoresOnlyFittingNodesAndOnlyWhenAsked) {
  const std::vector<absl::string_view> nodes = {"cpu-a", "ghost", "mig-1g", "mig-a"};
  topology::PodFacts pod = PodRequesting("research", "nvidia.com/mig-1g.10gb", "1");
  Trace binpack = Decide(pod, nodes, /*with_scores=*/true);
  ASSERT_TRUE(binpack.decision.ok()) << binpack.decision.status();
  ASSERT_EQ(binpack.visits.size(), 4u);
  std::vector<int> scores;
  for (const Seen& s : binpack.visits) scores.push_back(s.score);
  // mig-a already holds one of its four 1g instances, mig-1g none: binpack fills mig-a.
  EXPECT_EQ(scores, (std::vector<int>{0, 0, 1, 5}));

  pod.annotations.emplace("gpu-tenancy.io/scheduling-policy", "spread");
  Trace spread = Decide(pod, nodes, /*with_scores=*/true);
  ASSERT_TRUE(spread.decision.ok()) << spread.decision.status();
  scores.clear();
  for (const Seen& s : spread.visits) scores.push_back(s.score);
  EXPECT_EQ(scores, (std::vector<int>{0, 0, 9, 5})) << "the pod's annotation overrides binpack";
}

TEST_F(DecideTest, APodWithoutGpuDemandPassesEveryCandidateUnlookedAt) {
  Trace run = Decide(PodRequesting("nobody", "cpu", "2"), {"cpu-a", "ghost", "mig-b"},
                     /*with_scores=*/true);
  ASSERT_TRUE(run.decision.ok()) << run.decision.status();
  EXPECT_TRUE(run.lookups.empty());
  ASSERT_EQ(run.visits.size(), 3u);
  for (const Seen& s : run.visits) {
    EXPECT_EQ(s.verdict, topology::Verdict::kFits) << s.index;
    EXPECT_EQ(s.score, 0) << s.index;
  }
  EXPECT_TRUE(run.decision->demand.empty());
  EXPECT_EQ(run.decision->tenant, "unknown");
  EXPECT_EQ(run.decision->tier, "");
}

TEST_F(DecideTest, NoCandidatesStillResolvesThePod) {
  Trace run = Decide(PodRequesting("research", "nvidia.com/gpu", "1"), {});
  ASSERT_TRUE(run.decision.ok()) << run.decision.status();
  EXPECT_TRUE(run.visits.empty());
  EXPECT_TRUE(run.lookups.empty());
  EXPECT_EQ(run.decision->tier, "trusted");
}

TEST_F(DecideTest, TenantsBySelectorReadTheSnapshotsNamespaceLabels) {
  topology::PodFacts pod = PodRequesting("bank-prod", "nvidia.com/mig-3g.40gb", "1");
  Trace labelled = Decide(pod, {"mig-a"});
  ASSERT_TRUE(labelled.decision.ok()) << labelled.decision.status();
  EXPECT_EQ(labelled.decision->tenant, "bank");
  EXPECT_EQ(labelled.decision->tier, "untrusted");
  ASSERT_EQ(labelled.visits.size(), 1u);
  EXPECT_EQ(labelled.visits[0].verdict, topology::Verdict::kFits);

  // The same pod against a snapshot that has not seen the namespace's labels: no tenant claims
  // it, and the demo policy denies unknown tenants on every node.
  topology::ClusterData data = testing::DemoCluster();
  data.namespace_labels.erase("bank-prod");
  state_ = testing::ModelOf(data);
  Trace unlabelled = Decide(pod, {"mig-a", "cpu-a"});
  ASSERT_TRUE(unlabelled.decision.ok()) << unlabelled.decision.status();
  EXPECT_EQ(unlabelled.decision->tenant, "unknown");
  EXPECT_EQ(unlabelled.decision->tier, "");
  ASSERT_EQ(unlabelled.visits.size(), 2u);
  for (const Seen& s : unlabelled.visits) {
    EXPECT_EQ(s.verdict, topology::Verdict::kUnresolvable) << s.index;
    EXPECT_EQ(s.reason, "tenant unknown is not allowed GPUs by policy") << s.index;
  }
}

TEST_F(DecideTest, MalformedPodsAreInvalidArgumentAndVisitNothing) {
  struct Row {
    std::string name;
    topology::PodFacts pod;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"fraction of a GPU", PodRequesting("research", "nvidia.com/gpu", "500m"),
       "pod research/p: nvidia.com/gpu must be a whole, non-negative number, got 500m"},
      {"negative MIG count", PodRequesting("acme", "nvidia.com/mig-1g.10gb", "-1"),
       "pod acme/p: nvidia.com/mig-1g.10gb must be a whole, non-negative number, got -1"},
      {"memory annotation not a quantity",
       PodRequesting("research", "nvidia.com/gpu.shared", "1",
                     {{"gpu-tenancy.io/gpu-memory", "16 GB"}}),
       "pod research/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity "
       "such as 20Gi, got \"16 GB\""},
      {"negative memory annotation",
       PodRequesting("research", "nvidia.com/gpu.shared", "1",
                     {{"gpu-tenancy.io/gpu-memory", "-1Gi"}}),
       "pod research/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity "
       "such as 20Gi, got \"-1Gi\""},
      {"unknown scheduling policy",
       PodRequesting("research", "nvidia.com/gpu", "1",
                     {{"gpu-tenancy.io/scheduling-policy", "Spread"}}),
       "annotation gpu-tenancy.io/scheduling-policy must be binpack or spread, got \"Spread\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Trace run = Decide(row.pod, {"mig-a", "excl-a"}, /*with_scores=*/true);
    EXPECT_EQ(run.decision.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(run.decision.status().message(), row.message);
    EXPECT_TRUE(run.visits.empty());
    EXPECT_TRUE(run.lookups.empty());
  }
}

}  // namespace
}  // namespace extender
