// The tenant-limits rule (tenant_limit_rules.cc), allowed and denied, through the validating
// webhook's AdmissionReview path.
#include "gtest/gtest.h"
#include "test/webhook/pod_rules_test_util.h"
#include "webhook/pod_rules.h"

namespace {

using pod_rules_test::Pod;
using pod_rules_test::RunCases;

TEST(PodRulesTest, TenantLimits) {
  RunCases({
      {"MIG profile outside the list", "acme", Pod("{nvidia.com/mig-7g.80gb: 1}"), false,
       "tenant-limits",
       "[tenant-limits] container \"main\" requests nvidia.com/mig-7g.80gb, but tenant \"acme\" "
       "may "
       "use only MIG profiles 1g.10gb, 2g.20gb, 3g.40gb; request one of those instead"},
      {"MIG profile in the list", "acme", Pod("{nvidia.com/mig-2g.20gb: 2}"), true, ""},
      {"shared MIG without a profile list", "research",
       Pod("{nvidia.com/mig-1g.10gb.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 1Gi}"), true, ""},
      {"tenant selected by namespace label",
       "bank-prod",
       Pod("{nvidia.com/mig-1g.10gb: 1}"),
       false,
       "tenant-limits",
       "",
       {"tenant \"bank\" may use only MIG profiles 3g.40gb"}},
      {"tenant selected by namespace label, allowed profile", "bank-prod",
       Pod("{nvidia.com/mig-3g.40gb: 1}"), true, ""},
      {"GPU memory by annotation over the limit", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 48Gi}"), false,
       "tenant-limits",
       "[tenant-limits] pod requests 49152Mi of GPU memory (gpu-tenancy.io/gpu-memory), but tenant "
       "\"research\" allows at most 40960Mi per pod; request less, or split the work across pods"},
      {"GPU memory by resource over the limit",
       "research",
       Pod("{nvidia.com/gpu.shared: 1, nvidia.com/gpu.memory: 50000}"),
       false,
       "tenant-limits",
       "",
       {"pod requests 50000Mi of GPU memory (nvidia.com/gpu.memory)", "at most 40960Mi"}},
      {"GPU memory at the limit", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 40Gi}"), true, ""},
      {"shared replicas over the limit", "research",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gpu-tenancy.io/gpu-memory: "
       "1Gi}}\n"
       "spec:\n  containers:\n"
       "  - {name: a, resources: {limits: {nvidia.com/gpu.shared: 1}}}\n"
       "  - {name: b, resources: {limits: {nvidia.com/gpu.shared: 1}}}\n",
       false, "tenant-limits",
       "[tenant-limits] pod requests 2 shared GPU replicas (nvidia.com/gpu.shared), but tenant "
       "\"research\" allows at most 1 per pod; request fewer (more replicas of one GPU add no "
       "compute)"},
      {"no limits for a tenant without them", "gpu-ops",
       Pod("{nvidia.com/mig-7g.80gb: 1, nvidia.com/gpu.memory: 900000}"), true, ""},
  });
}

// priority-class: a tenant's allowed PriorityClasses bound every pod of it, GPU or not, since
// priority decides whose pods it may preempt.
TEST(PodRulesTest, PriorityClass) {
  auto allow_low_high = [](topology::Policy& p) {
    for (topology::Tenant& t : p.tenants) {
      if (t.name == "acme") t.priority_classes = {"acme-low", "acme-high"};
    }
  };
  RunCases({
      {"an allowed class",
       "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}", "  priorityClassName: acme-high\n"),
       true,
       "",
       "",
       {},
       {},
       allow_low_high},
      {"no class: priority 0",
       "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}"),
       true,
       "",
       "",
       {},
       {},
       allow_low_high},
      {"another class",
       "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}", "  priorityClassName: system-cluster-critical\n"),
       false,
       "priority-class",
       "[priority-class] priorityClassName \"system-cluster-critical\" is not allowed for tenant "
       "\"acme\" (allowed: acme-low, acme-high): a pod's priority decides whose pods it may "
       "preempt; use one of those",
       {},
       {},
       allow_low_high},
      {"a CPU-only pod of the tenant too",
       "acme",
       Pod("{cpu: 1}", "  priorityClassName: system-cluster-critical\n"),
       false,
       "priority-class",
       "",
       {},
       {},
       allow_low_high},
      {"a tenant without the list may use any", "acme",
       Pod("{nvidia.com/mig-1g.10gb: 1}", "  priorityClassName: system-cluster-critical\n"), true,
       ""},
  });
}

}  // namespace
