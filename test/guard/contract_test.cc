// The contract after admission, judged on cluster files: a pod that got past the webhook, a
// claim on a device its tenant's tier may not share, a tenant over a lowered quota.
#include "guard/contract.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "test/topology/dra/devices.h"
#include "wire/k8s_codec.h"

namespace guard {
namespace {

constexpr char kPolicy[] = R"(
tiers:
  - {name: untrusted, modes: [exclusive, mig]}
  - {name: trusted, modes: [exclusive, mig, mig-shared, mps, timeslice]}
tenants:
  - {name: acme, tier: untrusted, namespaces: [acme], limits: {migProfiles: [1g.10gb]},
     quota: {gpus: 1}}
  - {name: research, tier: trusted, namespaces: [research]}
unknownTenant: deny
pools:
  - {name: gpu-exclusive, mode: exclusive}
  - {name: gpu-timeslice, mode: timeslice}
)";

// The side-door cluster (excl-a whole GPUs, ts-a time-sliced, dra-a's DRA devices), with more
// pods: acme's time-sliced pod on ts-a (past admission), a second and third whole GPU for acme.
constexpr char kMorePods[] = R"(
- apiVersion: v1
  kind: Pod
  metadata: {name: sneaky, namespace: acme, uid: u-sneaky, creationTimestamp: "2026-12-01T10:00:00Z"}
  spec:
    nodeName: ts-a
    containers:
    - {name: main, resources: {limits: {nvidia.com/gpu.shared: '1'}}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: second, namespace: acme, uid: u-second, creationTimestamp: "2026-12-02T10:00:00Z"}
  spec:
    nodeName: excl-a
    containers:
    - {name: main, resources: {limits: {nvidia.com/gpu: '1'}}}
  status: {phase: Running}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: share, namespace: acme, uid: u-share}
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}
  status:
    allocation:
      devices:
        results:
        - {request: gpu, driver: gpu.nvidia.com, pool: dra-a, device: gpu-0,
           shareID: 7f3e2a10-5b1c-4d2e-9f00-00000000a001, consumedCapacity: {memory: 10Gi}}
      nodeSelector:
        nodeSelectorTerms:
        - matchFields:
          - {key: metadata.name, operator: In, values: [dra-a]}
)";

struct World {
  topology::Policy policy;
  topology::ClusterSnapshot snapshot;
};

World Load() {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPolicy);
  EXPECT_TRUE(policy.ok()) << policy.status();
  std::string yaml = testing_support::Testdata("webhook/side-doors-cluster.yaml");
  yaml += kMorePods;
  absl::StatusOr<rapidjson::Document> json = common::YamlToJson(yaml);
  EXPECT_TRUE(json.ok()) << json.status();
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterList(*json);
  EXPECT_TRUE(data.ok()) << data.status();
  return {*policy, topology::BuildSnapshot(*data, common::BuiltinCatalog(), *policy)};
}

std::vector<std::string> Rules(const std::vector<ContractViolation>& vs) {
  std::vector<std::string> out;
  for (const ContractViolation& v : vs) out.push_back(v.rule);
  return out;
}

const topology::PodFacts& Pod(const World& w, const std::string& uid) {
  const auto* pod = w.snapshot.contract_pods().Find(uid);
  EXPECT_NE(pod, nullptr) << uid;
  return **pod;
}

TEST(ContractTest, APodPastAdmissionBreaksTheRulesAdmissionWouldHaveApplied) {
  World w = Load();
  std::vector<ContractViolation> vs = CheckPod(Pod(w, "u-sneaky"), w.snapshot, w.policy);
  // The webhook's own row, and the placement only a running pod has.
  EXPECT_EQ(Rules(vs), (std::vector<std::string>{"tier-shared", "tier-pool"}));
  ASSERT_EQ(vs.size(), 2u);
  EXPECT_EQ(vs[0].tenant, "acme");
  EXPECT_EQ(vs[0].node, "ts-a");
  EXPECT_EQ(vs[0].created, "2026-12-01T10:00:00Z");
  EXPECT_TRUE(absl::StartsWith(vs[0].message,
                               "[tier-shared] container \"main\" requests "
                               "nvidia.com/gpu.shared"))
      << vs[0].message;
  EXPECT_TRUE(absl::StartsWith(vs[1].message, "[tier-pool] pod runs on node \"ts-a\", where "))
      << vs[1].message;
  // A pod within the contract has nothing.
  EXPECT_TRUE(
      CheckPod(Pod(w, "4c1e0000-0000-4000-8000-0000000000e5"), w.snapshot, w.policy).empty());
}

TEST(ContractTest, AnAllocatedClaimIsJudgedByTheDeviceItGot) {
  World w = Load();
  const topology::DraClaim* claim = w.snapshot.dra().claims.Find("acme", "share");
  ASSERT_NE(claim, nullptr);
  std::vector<ContractViolation> vs = CheckClaim(*claim, w.snapshot, w.policy);
  ASSERT_EQ(Rules(vs), (std::vector<std::string>{"claim-device"}));
  EXPECT_EQ(vs[0].kind, ObjectKind::kResourceClaim);
  EXPECT_EQ(vs[0].ObjectKey(), "ResourceClaim acme/share");
  EXPECT_TRUE(absl::StrContains(vs[0].message,
                                "holds gpu.nvidia.com/dra-a/gpu-0, a device other claims may "
                                "hold at the same time (timeslice)"))
      << vs[0].message;
}

// A device with more memory than the tenant's gpuMemoryPerPod: admission may have left the cap
// to the devices published when the claim was made (webhook/claim_selectors.h), and a bigger
// one came later.
TEST(ContractTest, AClaimOnADeviceWithMoreMemoryThanTheTenantsCapViolates) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(R"(
tiers: [{name: gold, modes: [exclusive]}]
tenants: [{name: acme, tier: gold, namespaces: [acme], limits: {gpuMemoryPerPod: 80Gi}}]
)");
  ASSERT_TRUE(policy.ok()) << policy.status();
  auto gpu = [](const std::string& name, const std::string& memory) {
    topology::DraDevice d = testing_dra::NvidiaDevice("node-a", name);
    d.capacity[std::string(topology::kNvidiaMemoryCapacity)] = *topology::Quantity::Parse(memory);
    return d;
  };
  auto claim_on = [](const std::string& name, const std::string& device) {
    topology::DraClaim c;
    c.namespace_name = "acme";
    c.name = name;
    c.allocated = true;
    c.allocated_node = "node-a";
    topology::DraRequest r;
    r.name = "gpu";
    r.device_class = "gpu.nvidia.com";
    c.requests.push_back(r);
    c.results.push_back({"gpu", "gpu.nvidia.com", "node-a", device});
    return c;
  };
  topology::ClusterData data;
  data.dra_slices.push_back(testing_dra::NodeSlice(
      "node-a", {gpu("h100", "81559Mi"), gpu("h200", "143771Mi"), gpu("edge", "80Gi")}));
  data.dra_claims = {claim_on("big", "h200"), claim_on("fits", "h100"), claim_on("at-cap", "edge")};
  data.namespace_labels["acme"] = {};
  const topology::ClusterSnapshot snapshot =
      topology::BuildSnapshot(data, common::BuiltinCatalog(), *policy);
  std::vector<ContractViolation> vs =
      CheckClaim(*snapshot.dra().claims.Find("acme", "big"), snapshot, *policy);
  ASSERT_EQ(Rules(vs), (std::vector<std::string>{"claim-device"}));
  EXPECT_EQ(vs[0].message,
            "[claim-device] ResourceClaim \"acme/big\" holds gpu.nvidia.com/node-a/h200, a device "
            "with 143771Mi of memory, but tenant \"acme\" (tier gold) may use at most 81920Mi of "
            "GPU memory per pod; delete the claim: made again, it gets the tenant's selectors");
  for (const char* within : {"fits", "at-cap"}) {
    EXPECT_TRUE(CheckClaim(*snapshot.dra().claims.Find("acme", within), snapshot, *policy).empty())
        << within;
  }
}

TEST(ContractTest, OverQuotaTheNewestPodsBeyondItViolate) {
  World w = Load();
  // acme holds trainer (no timestamp: the oldest), sneaky and second, and a share of dra-a's
  // gpu-0. Whole GPUs on excl-a count in gpus; the time-sliced replica and the share do not, so
  // removing sneaky would not help: of quota 1, second alone is beyond it.
  std::vector<ContractViolation> vs = CheckQuota("acme", w.snapshot, w.policy);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].name, "second");
  EXPECT_EQ(vs[0].rule, "tenant-quota");
  EXPECT_TRUE(absl::StrContains(vs[0].message, "nvidia.com/gpu 2 held, quota 1")) << vs[0].message;
  EXPECT_TRUE(CheckQuota("research", w.snapshot, w.policy).empty());
}

TEST(ContractTest, AMigNodeAboutToBeReCutIsAViolation) {
  World w = Load();
  absl::StatusOr<rapidjson::Document> json =
      common::YamlToJson(testing_support::Testdata("extender/mig-drift-cluster.yaml"));
  ASSERT_TRUE(json.ok()) << json.status();
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterList(*json);
  ASSERT_TRUE(data.ok()) << data.status();
  const topology::ClusterSnapshot snapshot =
      topology::BuildSnapshot(*data, common::BuiltinCatalog(), w.policy);
  std::vector<std::string> drifted;
  for (const ContractViolation& v : CheckAll(snapshot, w.policy)) {
    EXPECT_EQ(v.rule, "mig-drift");
    drifted.push_back(v.ObjectKey());
    EXPECT_TRUE(absl::StrContains(v.message, "mig-manager is about to re-cut it")) << v.message;
  }
  EXPECT_EQ(drifted, (std::vector<std::string>{"Node mig-drifted"}));
}

}  // namespace
// The ids policy.guard.actions may name are the ones the guard reports, as docs/policy.md lists
// them; any other is refused, naming its key.
TEST(GuardRulesTest, ActionsNameOnlyRulesTheGuardReports) {
  EXPECT_EQ(GuardRuleIds(),
            (std::vector<std::string>{"unknown-tenant", "tier-shared", "device-access",
                                      "tenant-limits", "priority-class", "unknown-demand",
                                      "tier-pool", "claim-device", "tenant-quota", "mig-drift"}));
  topology::GuardPolicy guard;
  guard.actions["tier-shared"] = topology::GuardAction::kEvict;
  guard.actions["mig-drift"] = topology::GuardAction::kReport;
  EXPECT_TRUE(CheckGuardActions(guard).ok());
  guard.actions["tenant_quota"] = topology::GuardAction::kEvict;
  const absl::Status bad = CheckGuardActions(guard);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.message(),
                               "guard.actions.tenant_quota: not a rule the contract guard reports "
                               "(one of unknown-tenant, "))
      << bad.message();
}

}  // namespace guard
