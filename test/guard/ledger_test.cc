// The ledger follows the contract's violations from snapshot to snapshot: judged once, dated
// when first seen, dropped when they end; an unchanged object keeps its date.
#include "guard/ledger.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "kube/cluster_state.h"
#include "test/support/test_inputs.h"
#include "wire/k8s_codec.h"

namespace guard {
namespace {

constexpr char kLedgerPolicy[] = R"(
tiers:
  - {name: untrusted, modes: [exclusive, mig]}
  - {name: trusted, modes: [exclusive, mig, mig-shared, mps, timeslice]}
tenants:
  - {name: acme, tier: untrusted, namespaces: [acme], quota: {gpus: 2}}
  - {name: research, tier: trusted, namespaces: [research]}
unknownTenant: deny
pools:
  - {name: gpu-exclusive, mode: exclusive}
  - {name: gpu-timeslice, mode: timeslice}
)";

topology::NodeFacts Node(const std::string& name, const std::string& pool,
                         const std::string& resource) {
  topology::NodeFacts n;
  n.name = name;
  n.labels = {{"gpu-tenancy.io/pool", pool},
              {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/gpu.count", "4"}};
  n.allocatable[resource] = topology::Quantity::FromUnits(4);
  return n;
}

topology::PodFacts Pod(const std::string& ns, const std::string& name, const std::string& node,
                       const std::string& resource, const std::string& created) {
  topology::PodFacts p;
  p.namespace_name = ns;
  p.name = name;
  p.uid = absl::StrCat("uid-", name);
  p.node_name = node;
  p.phase = "Running";
  p.created = created;
  topology::ContainerFacts c;
  c.name = "main";
  c.limits[resource] = topology::Quantity::FromUnits(1);
  c.requests = c.limits;
  p.containers.push_back(c);
  return p;
}

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kLedgerPolicy);
    ASSERT_TRUE(policy.ok()) << policy.status();
    policy_ = std::make_shared<const topology::Policy>(*policy);
    state_.SetPolicy(policy_);
    state_.ReplaceNamespaces({{"acme", {}}, {"research", {}}});
    state_.ReplaceNodes({Node("excl-a", "gpu-exclusive", "nvidia.com/gpu"),
                         Node("ts-a", "gpu-timeslice", "nvidia.com/gpu.shared")});
    state_.ReplacePods(std::vector<topology::PodFacts>{});
  }
  // The live state's snapshot now, as the guard reads it.
  std::shared_ptr<const topology::ClusterSnapshot> Now() { return state_.Current()->snapshot; }

  std::shared_ptr<const topology::Policy> policy_;
  kube::ClusterState state_{common::BuiltinCatalog()};
  ContractLedger ledger_;
};

TEST_F(LedgerTest, ViolationsStartEndAndKeepTheirDate) {
  ContractLedger::Changes first = ledger_.Update(Now(), policy_, 100, false);
  EXPECT_TRUE(first.full);
  EXPECT_TRUE(first.started.empty());

  // A time-sliced pod of the untrusted tenant binds past admission.
  state_.UpsertPod(Pod("acme", "sneaky", "ts-a", "nvidia.com/gpu.shared", "t1"));
  ContractLedger::Changes second = ledger_.Update(Now(), policy_, 200, false);
  EXPECT_FALSE(second.full);
  ASSERT_EQ(second.started.size(), 2u);  // tier-shared and tier-pool
  EXPECT_EQ(second.started[0].since_unix, 200);
  EXPECT_EQ(ledger_.size(), 2u);

  // Unrelated events judge only what they touch, and the date stays.
  state_.UpsertPod(Pod("research", "nb", "ts-a", "nvidia.com/gpu.shared", "t2"));
  ContractLedger::Changes third = ledger_.Update(Now(), policy_, 300, false);
  EXPECT_TRUE(third.started.empty());
  EXPECT_TRUE(third.ended.empty());
  EXPECT_LE(third.judged, 2u) << "the new pod and its tenant's quota";
  for (const Tracked& t : ledger_.Current()) EXPECT_EQ(t.since_unix, 200);

  // The pod goes: its violations end.
  state_.DeletePod("uid-sneaky");
  ContractLedger::Changes fourth = ledger_.Update(Now(), policy_, 400, false);
  EXPECT_EQ(fourth.ended.size(), 2u);
  EXPECT_EQ(ledger_.size(), 0u);
}

TEST_F(LedgerTest, ALoweredQuotaReportsTheNewestPodsBeyondIt) {
  for (const char* name : {"a", "b", "c"}) {
    state_.UpsertPod(
        Pod("acme", name, "excl-a", "nvidia.com/gpu", absl::StrCat("2026-12-0", name)));
  }
  ContractLedger::Changes first = ledger_.Update(Now(), policy_, 100, false);
  ASSERT_EQ(first.started.size(), 1u) << "quota 2, three whole GPUs";
  EXPECT_EQ(first.started[0].violation.name, "c");
  EXPECT_EQ(first.started[0].violation.rule, "tenant-quota");

  // A reload raises it: everything is judged again, and the violation ends.
  absl::StatusOr<topology::Policy> raised = common::LoadPolicy(
      absl::StrReplaceAll(std::string(kLedgerPolicy), {{"quota: {gpus: 2}", "quota: {gpus: 3}"}}));
  ASSERT_TRUE(raised.ok());
  auto policy = std::make_shared<const topology::Policy>(*raised);
  state_.SetPolicy(policy);
  ContractLedger::Changes reload = ledger_.Update(Now(), policy, 200, false);
  EXPECT_TRUE(reload.full);
  EXPECT_EQ(reload.ended.size(), 1u);
  EXPECT_EQ(ledger_.size(), 0u);
}

}  // namespace
}  // namespace guard
