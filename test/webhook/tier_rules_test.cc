// The tier and sharing rules (tier_rules.cc), allowed and denied, through the validating
// webhook's AdmissionReview path: tier-shared, fail-requests-greater-than-one, unknown-tenant,
// and the time-slicing warning.
#include <string>

#include "gtest/gtest.h"
#include "test/webhook/pod_rules_test_util.h"
#include "webhook/pod_rules.h"

namespace {

using pod_rules_test::kTimeSliceWarning;
using pod_rules_test::Pod;
using pod_rules_test::RunCases;

TEST(PodRulesTest, TierShared) {
  RunCases({
      {"untrusted asks for a time-sliced GPU", "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: engine\n"
       "    resources: {limits: {nvidia.com/gpu.shared: 1}}\n",
       false, "tier-shared",
       "[tier-shared] container \"engine\" requests nvidia.com/gpu.shared, but tenant \"acme\" "
       "(tier untrusted) may use only exclusive, mig; request a MIG slice such as "
       "nvidia.com/mig-1g.10gb"},
      {"trusted may time-slice", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"), true, ""},
      {"untrusted asks for a shared MIG slice",
       "acme",
       Pod("{nvidia.com/mig-1g.10gb.shared: 1}"),
       false,
       "tier-shared",
       "",
       {"container \"main\" requests nvidia.com/mig-1g.10gb.shared",
        "may use only exclusive, mig"}},
      {"untrusted asks for a configured shared resource",
       "acme",
       Pod("{example.com/vgpu: 1}"),
       false,
       "tier-shared",
       "",
       {"requests example.com/vgpu,"}},
      {"untrusted asks for GPU memory only",
       "acme",
       Pod("{nvidia.com/gpu.memory: 8192}"),
       false,
       "tier-shared",
       "",
       {"requests nvidia.com/gpu.memory (GPU memory without a whole device shares a GPU"}},
      {"untrusted asks for an MPS resource",
       "acme",
       Pod("{nvidia.com/gpu.mps: 1}"),
       false,
       "tier-shared",
       "",
       {"requests nvidia.com/gpu.mps"}},
      {"untrusted init container asks for a shared GPU",
       "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n"
       "  - name: setup\n    resources: {limits: {nvidia.com/gpu.shared: 1}}\n"
       "  containers:\n  - name: main\n",
       false,
       "tier-shared",
       "",
       {"init container \"setup\" requests nvidia.com/gpu.shared"}},
      {"untrusted selects the time-sliced pool by nodeSelector", "acme",
       Pod("{cpu: 1}", "  nodeSelector: {gpu-tenancy.io/pool: gpu-timeslice}\n"), false,
       "tier-shared",
       "[tier-shared] pod selects pool \"gpu-timeslice\" (timeslice) through nodeSelector on "
       "gpu-tenancy.io/pool, but tenant \"acme\" (tier untrusted) may use only exclusive, mig; "
       "select gpu-mig or gpu-exclusive, or drop the selector"},
      {"untrusted selects the time-sliced pool by required affinity",
       "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}",
           "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
           "        nodeSelectorTerms:\n        - matchExpressions:\n"
           "          - {key: gpu-tenancy.io/pool, operator: In, values: [gpu-mig, "
           "gpu-timeslice]}\n"),
       false,
       "tier-shared",
       "",
       {"pod selects pool \"gpu-timeslice\" (timeslice) through required node affinity"}},
      {"untrusted selects its own pool", "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}", "  nodeSelector: {gpu-tenancy.io/pool: gpu-mig}\n"), true,
       ""},
      {"NotIn is not a selection", "acme",
       Pod("{nvidia.com/gpu: 1}",
           "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
           "        nodeSelectorTerms:\n        - matchExpressions:\n"
           "          - {key: gpu-tenancy.io/pool, operator: NotIn, values: [gpu-timeslice]}\n"),
       true, ""},
      {"untrusted whole GPUs and MIG", "acme",
       Pod("{nvidia.com/gpu: 1, nvidia.com/mig-3g.40gb: 1}"), true, ""},
      {"a tier without MIG is told to take a whole GPU",
       "acme",
       Pod("{nvidia.com/gpu.shared: 1}"),
       false,
       "tier-shared",
       "",
       {"may use only exclusive; request a whole GPU (nvidia.com/gpu)"},
       {},
       [](topology::Policy& p) {
         topology::Tier& t = p.tiers[0];
         t.modes = topology::ModeSet();
         t.modes.Add(topology::SharingMode::kExclusive);
       }},
  });
}

TEST(PodRulesTest, FailRequestsGreaterThanOne) {
  RunCases({
      {"two replicas in one container",
       "gpu-ops",
       Pod("{nvidia.com/gpu.shared: 2}"),
       false,
       "fail-requests-greater-than-one",
       "[fail-requests-greater-than-one] container \"main\" requests 2 nvidia.com/gpu.shared, but "
       "a "
       "shared GPU resource allows at most 1 per container (the device plugin would only fail the "
       "pod later at kubelet with UnexpectedAdmissionError); request 1, or split the work across "
       "containers",
       {},
       {kTimeSliceWarning}},
      {"one replica in each of two containers",
       "gpu-ops",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
       "  - {name: a, resources: {limits: {nvidia.com/gpu.shared: 1}}}\n"
       "  - {name: b, resources: {limits: {nvidia.com/gpu.shared: 1}}}\n",
       true,
       "",
       "",
       {},
       {kTimeSliceWarning}},
      {"counted in limits too",
       "gpu-ops",
       Pod("{nvidia.com/mig-1g.10gb.shared: 3}"),
       false,
       "fail-requests-greater-than-one",
       "",
       {"requests 3 nvidia.com/mig-1g.10gb.shared"},
       {kTimeSliceWarning}},
      {"counted in requests",
       "gpu-ops",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
       "  - {name: main, resources: {requests: {example.com/vgpu: 4}}}\n",
       false,
       "fail-requests-greater-than-one",
       "",
       {"requests 4 example.com/vgpu"},
       {kTimeSliceWarning}},
      {"whole GPUs are not shared", "gpu-ops", Pod("{nvidia.com/gpu: 4}"), true, ""},
      {"off in the policy",
       "gpu-ops",
       Pod("{nvidia.com/gpu.shared: 2}"),
       true,
       "",
       "",
       {},
       {kTimeSliceWarning},
       [](topology::Policy& p) { p.fail_requests_greater_than_one = false; }},
      {"a second rule is counted",
       "research",
       Pod("{nvidia.com/gpu.shared: 2}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"),
       false,
       "fail-requests-greater-than-one",
       "",
       {"[fail-requests-greater-than-one] container \"main\" requests 2",
        "containers (and 1 more)"}},
  });
}

TEST(PodRulesTest, UnknownTenant) {
  auto admit_as = [](const std::string& tier) {
    return [tier](topology::Policy& p) { p.unknown_tenant_tier = tier; };
  };
  RunCases({
      {"GPU pod of an unknown tenant", "nowhere", Pod("{nvidia.com/gpu: 1}"), false,
       "unknown-tenant",
       "[unknown-tenant] namespace \"nowhere\" belongs to no tenant and the policy denies GPUs to "
       "unknown tenants, but container \"main\" requests nvidia.com/gpu; ask the GPU platform team "
       "to add the namespace to a tenant"},
      {"CPU-only pod of an unknown tenant", "nowhere", Pod("{cpu: 2, memory: 1Gi}"), true, ""},
      {"device access of an unknown tenant",
       "nowhere",
       Pod("{cpu: 1}") + "    securityContext: {privileged: true}\n",
       false,
       "unknown-tenant",
       "",
       {"but container \"main\" is privileged;"}},
      {"memory annotation of an unknown tenant",
       "nowhere",
       Pod("{}", "", "{gpu-tenancy.io/gpu-memory: 1Gi}"),
       false,
       "unknown-tenant",
       "",
       {"but the pod sets gpu-tenancy.io/gpu-memory"}},
      {"unknown tenants admitted as trusted",
       "nowhere",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 2Gi}"),
       true,
       "",
       "",
       {},
       {},
       admit_as("trusted")},
      {"unknown tenants admitted as untrusted",
       "nowhere",
       Pod("{nvidia.com/gpu.shared: 1}"),
       false,
       "tier-shared",
       "",
       {"namespace \"nowhere\" (no tenant, tier untrusted) may use only exclusive, mig"},
       {},
       admit_as("untrusted")},
  });
}

TEST(PodRulesTest, Warnings) {
  const std::string warning = kTimeSliceWarning;
  EXPECT_LE(warning.size(), 120u);
  RunCases({
      {"time-sliced without memory",
       "research",
       Pod("{nvidia.com/gpu.shared: 1}"),
       true,
       "",
       "",
       {},
       {warning}},
      {"shared MIG without memory",
       "research",
       Pod("{nvidia.com/mig-1g.10gb.shared: 1}"),
       true,
       "",
       "",
       {},
       {warning}},
      {"time-sliced with a memory annotation", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"), true, ""},
      {"time-sliced with a memory resource", "research",
       Pod("{nvidia.com/gpu.shared: 1, nvidia.com/gpu.memory: 8192}"), true, ""},
      {"whole GPUs need no memory", "research", Pod("{nvidia.com/gpu: 1}"), true, ""},
  });
}

}  // namespace
