// The policy and catalog loaders: the demo policy loads as documented, and every mistake is an
// InvalidArgument naming the YAML path, so a bad reload is refused with a useful message.
#include "common/config_loader.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"

namespace common {
namespace {

using testing_support::SourceFile;
using topology::Policy;
using topology::SharingMode;

TEST(LoadPolicyTest, DemoPolicyLoads) {
  absl::StatusOr<Policy> policy = LoadPolicy(SourceFile("cmd/demo/policy.yaml"));
  ASSERT_TRUE(policy.ok()) << policy.status();

  ASSERT_EQ(policy->tiers.size(), 3u);
  const topology::Tier* untrusted = policy->FindTier("untrusted");
  ASSERT_NE(untrusted, nullptr);
  EXPECT_EQ(untrusted->modes.ToString(), "exclusive, mig");
  EXPECT_FALSE(untrusted->device_access);
  ASSERT_NE(policy->FindTier("trusted"), nullptr);
  EXPECT_EQ(policy->FindTier("trusted")->modes.ToString(),
            "exclusive, mig, mig-shared, mps, timeslice");
  ASSERT_NE(policy->FindTier("platform"), nullptr);
  EXPECT_TRUE(policy->FindTier("platform")->device_access);

  ASSERT_EQ(policy->tenants.size(), 4u);
  const topology::Tenant* acme = policy->FindTenant("acme");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(acme->tier, "untrusted");
  EXPECT_EQ(acme->namespaces, std::vector<std::string>{"acme"});
  EXPECT_EQ(acme->limits.gpu_memory_mib_per_pod, 81920);
  EXPECT_EQ(acme->limits.mig_profiles, (std::vector<std::string>{"1g.10gb", "2g.20gb", "3g.40gb"}));
  const topology::Tenant* bank = policy->FindTenant("bank");
  ASSERT_NE(bank, nullptr);
  EXPECT_TRUE(bank->namespaces.empty());
  EXPECT_EQ(bank->namespace_selector.at("gpu-tenancy.io/tenant"), "bank");
  const topology::Tenant* research = policy->FindTenant("research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->namespaces, (std::vector<std::string>{"research", "research-dev"}));
  EXPECT_EQ(research->limits.gpu_memory_mib_per_pod, 40960);
  EXPECT_EQ(research->limits.shared_replicas_per_pod, 1);
  EXPECT_EQ(research->limits.mps.max_active_thread_percentage, 50);
  EXPECT_EQ(research->limits.mps.max_pinned_memory_mib, 20480);
  ASSERT_NE(policy->FindTenant("gpu-platform"), nullptr);

  EXPECT_FALSE(policy->unknown_tenant_tier.has_value());  // "deny"
  EXPECT_EQ(policy->pool_label, "gpu-tenancy.io/pool");
  ASSERT_EQ(policy->pools.size(), 3u);
  const topology::Pool* mig = policy->FindPool("gpu-mig");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->mode, SharingMode::kMig);
  ASSERT_TRUE(mig->taint.has_value());
  EXPECT_EQ(mig->taint->key, "gpu-tenancy.io/pool");
  EXPECT_EQ(mig->taint->value, "gpu-mig");
  EXPECT_EQ(mig->taint->effect, "NoSchedule");
  EXPECT_EQ(policy->FindPool("gpu-timeslice")->mode, SharingMode::kTimeslice);
  EXPECT_FALSE(policy->FindPool("gpu-exclusive")->taint.has_value());

  EXPECT_TRUE(policy->shared_resources.empty());
  EXPECT_EQ(policy->memory_resources,
            (std::vector<std::string>{"nvidia.com/gpu.memory", "nvidia.com/gpumem"}));
  EXPECT_EQ(policy->memory_annotation, "gpu-tenancy.io/gpu-memory");
  EXPECT_TRUE(policy->fail_requests_greater_than_one);
  EXPECT_EQ(policy->scoring, topology::ScoringStrategy::kBinpack);
  EXPECT_FALSE(policy->canary.has_value());

  // Namespace resolution as the demo cluster needs it.
  EXPECT_EQ(topology::ResolveTenant(*policy, "research-dev", {}).name, "research");
  EXPECT_EQ(topology::ResolveTenant(*policy, "bank-prod", {{"gpu-tenancy.io/tenant", "bank"}}).name,
            "bank");
  EXPECT_TRUE(topology::ResolveTenant(*policy, "default", {}).Denied());
}

// A valid base policy; rows append or replace parts of it.
constexpr char kTiers[] =
    "tiers:\n"
    "  - name: untrusted\n"
    "    modes: [exclusive, mig]\n"
    "  - name: trusted\n"
    "    modes: [exclusive, mig, mps, timeslice]\n";

TEST(LoadPolicyTest, ValidVariants) {
  struct Row {
    std::string name;
    std::string yaml;
    std::function<void(const Policy&)> check;
  };
  const std::vector<Row> rows = {
      {"empty mapping is allow-nothing", "{}",
       [](const Policy& p) {
         EXPECT_TRUE(p.tiers.empty());
         EXPECT_FALSE(p.unknown_tenant_tier.has_value());
       }},
      {"unknown tenants get a tier", absl::StrCat(kTiers, "unknownTenant: untrusted\n"),
       [](const Policy& p) { EXPECT_EQ(p.unknown_tenant_tier, "untrusted"); }},
      {"spread scoring", "scoring: spread\n",
       [](const Policy& p) { EXPECT_EQ(p.scoring, topology::ScoringStrategy::kSpread); }},
      {"canary", "canary:\n  migProfile: 1g.10gb\n  reserve: 2\n",
       [](const Policy& p) {
         ASSERT_TRUE(p.canary.has_value());
         EXPECT_EQ(p.canary->mig_profile, "1g.10gb");
         EXPECT_EQ(p.canary->reserve, 2);
         EXPECT_EQ(p.canary->pod_label, "gpu-tenancy.io/canary");
       }},
      {"preemption across tenants and priority classes",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n    namespaces: [a]\n"
                    "    priorityClasses: [low, high]\n"
                    "preemption:\n  acrossTenants:\n    - victims: {tenants: [a]}\n"
                    "    - preemptors: {tiers: [trusted]}\n      victims: {tiers: [untrusted]}\n"),
       [](const Policy& p) {
         ASSERT_EQ(p.tenants.size(), 1u);
         EXPECT_EQ(p.tenants[0].priority_classes, (std::vector<std::string>{"low", "high"}));
         ASSERT_EQ(p.preemption.across_tenants.size(), 2u);
         EXPECT_TRUE(p.preemption.across_tenants[0].preemptors.empty());
         EXPECT_EQ(p.preemption.across_tenants[0].victims.tenants, std::vector<std::string>{"a"});
         EXPECT_EQ(p.preemption.across_tenants[1].preemptors.tiers,
                   std::vector<std::string>{"trusted"});
         EXPECT_EQ(p.preemption.across_tenants[1].victims.tiers,
                   std::vector<std::string>{"untrusted"});
       }},
      {"memory resources replaced", "memoryResources: [example.com/vram-mib]\n",
       [](const Policy& p) {
         EXPECT_EQ(p.memory_resources, std::vector<std::string>{"example.com/vram-mib"});
       }},
      {"memory resources emptied", "memoryResources: []\n",
       [](const Policy& p) { EXPECT_TRUE(p.memory_resources.empty()); }},
      {"shared resources and annotation",
       "sharedResources: [example.com/vgpu]\nmemoryAnnotation: example.com/vram\n"
       "failRequestsGreaterThanOne: false\npoolLabel: example.com/pool\n",
       [](const Policy& p) {
         EXPECT_EQ(p.shared_resources, std::vector<std::string>{"example.com/vgpu"});
         EXPECT_EQ(p.memory_annotation, "example.com/vram");
         EXPECT_FALSE(p.fail_requests_greater_than_one);
         EXPECT_EQ(p.pool_label, "example.com/pool");
       }},
      {"gpu memory limit in decimal units rounds up to MiB",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n    namespaces: [a]\n"
                    "    limits: {gpuMemoryPerPod: 1G}\n"),
       [](const Policy& p) { EXPECT_EQ(p.tenants[0].limits.gpu_memory_mib_per_pod, 954); }},
      {"quota with every key",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n    namespaces: [a]\n"
                    "    quota:\n"
                    "      gpus: 4\n"
                    "      migInstances: {3g.40gb: 2, 1g.10gb.me: 1, 1g.5gb+me: 0}\n"
                    "      migComputeSlices: 14\n"
                    "      sharedReplicas: 8\n"
                    "      gpuMemory: 160Gi\n"
                    "      gpuPods: 1000000\n"),
       [](const Policy& p) {
         const topology::TenantQuota& q = p.tenants[0].quota;
         EXPECT_EQ(q.gpus, 4);
         // Stored under the nvidia-smi name, whichever form the policy used.
         EXPECT_EQ(q.mig_instances, (std::map<std::string, int64_t, std::less<>>{
                                        {"1g.10gb+me", 1}, {"1g.5gb+me", 0}, {"3g.40gb", 2}}));
         EXPECT_EQ(q.mig_compute_slices, 14);
         EXPECT_EQ(q.shared_replicas, 8);
         EXPECT_EQ(q.gpu_memory_mib, 163840);
         EXPECT_EQ(q.gpu_pods, 1000000);
         EXPECT_FALSE(q.empty());
       }},
      {"empty quota is no limit",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n    namespaces: [a]\n"
                    "    quota: {}\n"),
       [](const Policy& p) { EXPECT_TRUE(p.tenants[0].quota.empty()); }},
      {"quota enforced at admission", absl::StrCat(kTiers, "quotaEnforcement: admission\n"),
       [](const Policy& p) {
         EXPECT_EQ(p.quota_enforcement, topology::QuotaEnforcement::kAdmission);
       }},
      {"quota enforced at scheduling by default", std::string(kTiers),
       [](const Policy& p) {
         EXPECT_EQ(p.quota_enforcement, topology::QuotaEnforcement::kScheduling);
       }},
      {"zero quota is a limit",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n    namespaces: [a]\n"
                    "    quota: {gpus: 0}\n"),
       [](const Policy& p) { EXPECT_EQ(p.tenants[0].quota.gpus, 0); }},
      {"JSON policy", R"({"tiers":[{"name":"t","modes":["mig"]}],"unknownTenant":"t"})",
       [](const Policy& p) {
         ASSERT_EQ(p.tiers.size(), 1u);
         EXPECT_TRUE(p.tiers[0].modes.Has(SharingMode::kMig));
         EXPECT_FALSE(p.tiers[0].modes.Has(SharingMode::kExclusive));
       }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<Policy> policy = LoadPolicy(row.yaml);
    ASSERT_TRUE(policy.ok()) << policy.status();
    row.check(*policy);
  }
}

TEST(LoadPolicyTest, ErrorsNameTheYamlPath) {
  const std::string tenant_a = "  - name: a\n    tier: trusted\n    namespaces: [shared-ns]\n";
  struct Row {
    std::string name;
    std::string yaml;
    std::string error;  // exact message
  };
  const std::vector<Row> rows = {
      {"unknown top-level field", absl::StrCat(kTiers, "tenant: []\n"), "tenant: unknown field"},
      {"unknown field in a tier", "tiers:\n  - name: t\n    mode: [mig]\n",
       "tiers[0].mode: unknown field"},
      {"typo in a tenant field",
       absl::StrCat(kTiers, "tenants:\n  - name: a\n    tier: trusted\n    namespace: [a]\n"),
       "tenants[0].namespace: unknown field"},
      {"unknown field in limits",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    limits: {gpuMemory: 1Gi}\n"),
       "tenants[0].limits.gpuMemory: unknown field"},
      {"unknown field in mps limits",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    limits: {mps: {threads: 50}}\n"),
       "tenants[0].limits.mps.threads: unknown field"},
      {"unknown field in a pool taint",
       "pools:\n  - name: p\n    mode: mig\n    taint: {key: k, effect: NoSchedule, op: x}\n",
       "pools[0].taint.op: unknown field"},
      {"unknown field in canary", "canary: {migProfile: 1g.10gb, reserve: 1, size: 2}\n",
       "canary.size: unknown field"},
      {"unknown mode in a tier", "tiers:\n  - name: t\n  - name: u\n    modes: [mig, shared]\n",
       "tiers[1].modes: unknown mode \"shared\" (use exclusive, mig, mig-shared, mps, timeslice)"},
      {"unknown mode in a pool", "pools:\n  - name: p\n    mode: vgpu\n",
       "pools[0].mode: unknown mode \"vgpu\""},
      {"tenant with an unknown tier",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "  - name: b\n    tier: gold\n    namespaces: [b]\n"),
       "tenants[1].tier: tier \"gold\" of tenant \"b\" is not defined"},
      {"namespace claimed by two tenants",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "  - name: b\n    tier: untrusted\n    namespaces: [b, shared-ns]\n"),
       "tenants[1].namespaces: \"shared-ns\" already belongs to tenant \"a\""},
      {"duplicate tenant",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "  - name: a\n    tier: trusted\n"
                    "    namespaces: [other]\n"),
       "tenants[1].name: duplicate tenant \"a\""},
      {"tenant without namespaces",
       absl::StrCat(kTiers, "tenants:\n  - name: a\n    tier: trusted\n"),
       "tenants[0]: tenant \"a\" needs namespaces or namespaceSelector"},
      {"duplicate tier", "tiers:\n  - name: t\n  - name: t\n",
       "tiers[1].name: duplicate tier \"t\""},
      {"duplicate pool", "pools:\n  - {name: p, mode: mig}\n  - {name: p, mode: mps}\n",
       "pools[1].name: duplicate pool \"p\""},
      {"bad quantity in limits",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    limits: {gpuMemoryPerPod: 40GB}\n"),
       "tenants[0].limits.gpuMemoryPerPod: quantity \"40GB\" is not a valid Kubernetes quantity: "
       "unknown suffix \"GB\""},
      {"number instead of a quantity string",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    limits: {gpuMemoryPerPod: 40}\n"),
       "tenants[0].limits.gpuMemoryPerPod: expected a quantity such as \"40Gi\""},
      {"negative quantity in limits",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "    limits: {mps: {maxPinnedMemory: \"-1Gi\"}}\n"),
       "tenants[0].limits.mps.maxPinnedMemory: must not be negative"},
      {"thread percentage out of range",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "    limits: {mps: {maxActiveThreadPercentage: 101}}\n"),
       "tenants[0].limits.mps.maxActiveThreadPercentage: must be 1..100"},
      {"replicas not an integer",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    limits: {sharedReplicasPerPod: one}\n"),
       "tenants[0].limits.sharedReplicasPerPod: expected an integer"},
      {"unknown quota enforcement", absl::StrCat(kTiers, "quotaEnforcement: binding\n"),
       "quotaEnforcement: must be scheduling or admission, got \"binding\""},
      {"unknown field in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpu: 1}\n"),
       "tenants[0].quota.gpu: unknown field"},
      {"negative gpus in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpus: -1}\n"),
       "tenants[0].quota.gpus: expected an integer from 0 to 1000000"},
      {"gpus in quota over the bound",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpus: 1000001}\n"),
       "tenants[0].quota.gpus: expected an integer from 0 to 1000000"},
      {"negative compute slices in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migComputeSlices: -7}\n"),
       "tenants[0].quota.migComputeSlices: expected an integer from 0 to 1000000"},
      {"shared replicas in quota over the bound",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {sharedReplicas: 2000000}\n"),
       "tenants[0].quota.sharedReplicas: expected an integer from 0 to 1000000"},
      {"gpu pods in quota not an integer",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpuPods: 1.5}\n"),
       "tenants[0].quota.gpuPods: expected an integer from 0 to 1000000"},
      {"unknown MIG profile in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migInstances: {3g.41gb: 1}}\n"),
       "tenants[0].quota.migInstances.3g.41gb: unknown MIG profile \"3g.41gb\""},
      {"MIG instance count not an integer",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migInstances: {3g.40gb: two}}\n"),
       "tenants[0].quota.migInstances.3g.40gb: expected an integer from 0 to 1000000"},
      {"negative MIG instance count",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migInstances: {1g.10gb: -1}}\n"),
       "tenants[0].quota.migInstances.1g.10gb: expected an integer from 0 to 1000000"},
      {"MIG instance count null",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migInstances: {1g.10gb: null}}\n"),
       "tenants[0].quota.migInstances.1g.10gb: expected an integer from 0 to 1000000"},
      {"MIG profile given by name and by resource suffix",
       absl::StrCat(kTiers, "tenants:\n", tenant_a,
                    "    quota: {migInstances: {1g.10gb+me: 1, 1g.10gb.me: 2}}\n"),
       "tenants[0].quota.migInstances.1g.10gb.me: MIG profile \"1g.10gb+me\" given twice"},
      {"migInstances not a mapping",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {migInstances: [3g.40gb]}\n"),
       "tenants[0].quota.migInstances: expected a mapping"},
      {"bad quantity in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpuMemory: 40GB}\n"),
       "tenants[0].quota.gpuMemory: quantity \"40GB\" is not a valid Kubernetes quantity: "
       "unknown suffix \"GB\""},
      {"number instead of a quantity in quota",
       absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: {gpuMemory: 40}\n"),
       "tenants[0].quota.gpuMemory: expected a quantity such as \"40Gi\""},
      {"quota not a mapping", absl::StrCat(kTiers, "tenants:\n", tenant_a, "    quota: 4\n"),
       "tenants[0].quota: expected a mapping"},
      {"scoring neither binpack nor spread", "scoring: random\n",
       "scoring: must be binpack or spread, got \"random\""},
      {"unknownTenant names a missing tier", absl::StrCat(kTiers, "unknownTenant: guest\n"),
       "unknownTenant: tier \"guest\" is not defined"},
      {"tier name missing", "tiers:\n  - modes: [mig]\n", "tiers[0].name: missing"},
      {"modes not a list", "tiers:\n  - name: t\n    modes: mig\n",
       "tiers[0].modes: expected a list"},
      {"mode not a string", "tiers:\n  - name: t\n    modes: [[mig]]\n",
       "tiers[0].modes[0]: expected a string"},
      {"tiers not a list", "tiers: {name: t}\n", "tiers: expected a list"},
      {"tier not a mapping", "tiers: [t]\n", "tiers[0]: expected a mapping"},
      {"deviceAccess not a boolean", "tiers:\n  - name: t\n    deviceAccess: \"yes\"\n",
       "tiers[0].deviceAccess: expected true or false"},
      {"selector label not a string",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n"
                    "    namespaceSelector: {matchLabels: {team: 7}}\n"),
       "tenants[0].namespaceSelector.matchLabels.team: expected a string"},
      {"unknown field in a selector",
       absl::StrCat(kTiers,
                    "tenants:\n  - name: a\n    tier: trusted\n"
                    "    namespaceSelector: {matchExpressions: []}\n"),
       "tenants[0].namespaceSelector.matchExpressions: unknown field"},
      {"preemption rule without victims",
       absl::StrCat(kTiers,
                    "preemption:\n  acrossTenants:\n    - preemptors: {tiers: [trusted]}\n"),
       "preemption.acrossTenants[0].victims: name at least one tenant or tier"},
      {"preemption rule with an empty side",
       absl::StrCat(kTiers, "preemption:\n  acrossTenants:\n    - victims: {}\n"),
       "preemption.acrossTenants[0].victims: name at least one tenant or tier"},
      {"preemption rule naming an unknown tenant",
       absl::StrCat(kTiers, "preemption:\n  acrossTenants:\n    - victims: {tenants: [ghost]}\n"),
       "preemption.acrossTenants[0].victims.tenants: tenant \"ghost\" is not defined"},
      {"preemption rule naming an unknown tier",
       absl::StrCat(kTiers,
                    "preemption:\n  acrossTenants:\n    - preemptors: {tiers: [gold]}\n"
                    "      victims: {tiers: [trusted]}\n"),
       "preemption.acrossTenants[0].preemptors.tiers: tier \"gold\" is not defined"},
      {"typo in a preemption rule",
       absl::StrCat(kTiers, "preemption:\n  acrossTenants:\n    - victim: {tiers: [trusted]}\n"),
       "preemption.acrossTenants[0].victim: unknown field"},
      {"negative canary reserve", "canary: {migProfile: 1g.10gb, reserve: -1}\n",
       "canary.reserve: must not be negative"},
      {"canary without a profile", "canary: {reserve: 1}\n", "canary.migProfile: missing"},
      {"not a mapping", "- tiers\n", "policy: expected a mapping"},
      {"empty file", "", "expected one YAML document, found 0"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<Policy> policy = LoadPolicy(row.yaml);
    ASSERT_FALSE(policy.ok()) << row.yaml;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(policy.status().message(), row.error);
  }
}

TEST(LoadPolicyTest, SyntaxErrorNamesTheLine) {
  absl::StatusOr<Policy> policy = LoadPolicy("tiers:\n  - name: t\n    modes: [mig\n");
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(policy.status().message(), "invalid YAML at line"))
      << policy.status();
}

TEST(LoadCatalogTest, MinimalCatalog) {
  absl::StatusOr<topology::Catalog> catalog = LoadCatalog(
      "version: 1\n"
      "models:\n"
      "  - model: Toy\n"
      "    productLabels: [TOY-1]\n"
      "    totalMemoryMiB: 8192\n"
      "    computeSlices: 2\n"
      "    memorySlices: 2\n"
      "    maxInstances: 2\n"
      "    profiles:\n"
      "      - {name: 1g.4gb, id: 3, memoryMiB: 4096, sms: null, computeSlices: 1,\n"
      "         memorySlices: 1, maxCount: 2, placements: [0, 1]}\n");
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const topology::GpuModel* toy = catalog->MatchProduct("TOY-1-SHARED");
  ASSERT_NE(toy, nullptr);
  EXPECT_EQ(toy->total_memory_mib, 8192);
  ASSERT_EQ(toy->profiles.size(), 1u);
  EXPECT_EQ(toy->profiles[0].id, 3);
  EXPECT_EQ(toy->profiles[0].memory_mib, 4096);
  EXPECT_FALSE(toy->profiles[0].sm_count.has_value());
  EXPECT_EQ(toy->profiles[0].placements, (std::vector<int>{0, 1}));
  EXPECT_TRUE(toy->all_balanced.empty());  // optional
}

TEST(LoadCatalogTest, Errors) {
  const std::string model =
      "  - model: Toy\n    computeSlices: 2\n    memorySlices: 2\n    maxInstances: 2\n";
  struct Row {
    std::string name;
    std::string yaml;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"wrong version", "version: 2\nmodels: []\n", "catalog version must be 1"},
      {"missing version", "models: []\n", "version: missing"},
      {"unknown field", "version: 1\nmodel: []\n", "model: unknown field"},
      {"unknown model field", absl::StrCat("version: 1\nmodels:\n", model, "    memory: 1\n"),
       "models[0].memory: unknown field"},
      {"missing slices", "version: 1\nmodels:\n  - model: Toy\n",
       "models[0].computeSlices: missing"},
      {"placement past the end",
       absl::StrCat("version: 1\nmodels:\n", model,
                    "    profiles:\n      - {name: w, computeSlices: 1, memorySlices: 2,"
                    " maxCount: 1, placements: [1]}\n"),
       "catalog model Toy profile w: placement 1 runs past the GPU's memory slices"},
      {"placement not an integer",
       absl::StrCat("version: 1\nmodels:\n", model,
                    "    profiles:\n      - {name: w, computeSlices: 1, memorySlices: 1,"
                    " maxCount: 1, placements: [a]}\n"),
       "models[0].profiles[0].placements[0]: expected an integer"},
      {"all-balanced count missing",
       absl::StrCat("version: 1\nmodels:\n", model,
                    "    profiles:\n      - {name: w, computeSlices: 1, memorySlices: 1,"
                    " maxCount: 2, placements: [0, 1]}\n    allBalanced: [{profile: w}]\n"),
       "models[0].allBalanced[0].count: missing"},
      {"all-balanced profile unknown",
       absl::StrCat("version: 1\nmodels:\n", model,
                    "    profiles:\n      - {name: w, computeSlices: 1, memorySlices: 1,"
                    " maxCount: 2, placements: [0, 1]}\n"
                    "    allBalanced: [{profile: v, count: 1}]\n"),
       "catalog model Toy allBalanced: v is not one of its profiles"},
      {"all-balanced cut does not fit",
       absl::StrCat("version: 1\nmodels:\n", model,
                    "    profiles:\n      - {name: w, computeSlices: 1, memorySlices: 1,"
                    " maxCount: 2, placements: [0, 1]}\n"
                    "    allBalanced: [{profile: w, count: 3}]\n"),
       "catalog model Toy allBalanced has no valid placement"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<topology::Catalog> catalog = LoadCatalog(row.yaml);
    ASSERT_FALSE(catalog.ok());
    EXPECT_EQ(catalog.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(catalog.status().message(), row.error);
  }
}

}  // namespace
}  // namespace common

namespace {

// nodeAgent.serviceAccount: who may write the device annotations
// (webhook/device_annotation_rules.h).
TEST(LoadPolicyTest, NodeAgentServiceAccount) {
  absl::StatusOr<topology::Policy> plain =
      common::LoadPolicy("tiers: [{name: t, modes: [exclusive]}]\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->node_agent.service_account_namespace, "gpu-tenancy-system");
  EXPECT_EQ(plain->node_agent.service_account_name, "gpu-tenancy-node-agent");
  absl::StatusOr<topology::Policy> custom =
      common::LoadPolicy("nodeAgent: {serviceAccount: ops/gpu-agent}\n");
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->node_agent.service_account_namespace, "ops");
  EXPECT_EQ(custom->node_agent.service_account_name, "gpu-agent");
  for (const char* bad : {"gpu-agent", "ops/", "/a", "a/b/c", "Ops/agent", "ops/agent_1"}) {
    absl::StatusOr<topology::Policy> p =
        common::LoadPolicy(absl::StrCat("nodeAgent: {serviceAccount: \"", bad, "\"}\n"));
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("nodeAgent.serviceAccount: expected <namespace>/<name>"),
              std::string::npos)
        << p.status();
  }
  EXPECT_FALSE(common::LoadPolicy("nodeAgent: {account: a/b}\n").ok());
}

}  // namespace
