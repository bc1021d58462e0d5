// The tenant-limits rule (tenant_limit_rules.cc), allowed and denied, through the validating
// webhook's AdmissionReview path.
#include "absl/strings/str_cat.h"
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

// priority-class: a tenant's list bounds the classes of every pod of it, GPU or not
// (kube-scheduler preempts for any pod, and asks the extender only about some). A tenant that
// lists none, the default, may carry only a priority that preempts nobody across tenants: 0,
// or above 0 with preemptionPolicy Never. The pods carry spec.priority and
// spec.preemptionPolicy as kube-apiserver's Priority admission fills them in before any webhook.
TEST(PodRulesTest, PriorityClass) {
  auto allow_low_high = [](topology::Policy& p) {
    for (topology::Tenant& t : p.tenants) {
      if (t.name == "acme") t.priority_classes = {"acme-low", "acme-high"};
    }
  };
  auto with = [](const std::string& limits, const std::string& class_name, int priority,
                 const std::string& policy) {
    return Pod(limits,
               absl::StrCat(class_name.empty() ? "" : "  priorityClassName: " + class_name + "\n",
                            "  priority: ", priority, "\n  preemptionPolicy: ", policy, "\n"));
  };
  const std::string mig = "{nvidia.com/mig-1g.10gb: 1}";
  RunCases({
      {"an allowed class",
       "acme",
       with(mig, "acme-high", 1000, "PreemptLowerPriority"),
       true,
       "",
       "",
       {},
       {},
       allow_low_high},
      {"no class: priority 0",
       "acme",
       with(mig, "", 0, "PreemptLowerPriority"),
       true,
       "",
       "",
       {},
       {},
       allow_low_high},
      {"another class",
       "acme",
       with(mig, "system-cluster-critical", 2000000000, "PreemptLowerPriority"),
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
       with("{cpu: 1}", "system-cluster-critical", 2000000000, "PreemptLowerPriority"),
       false,
       "priority-class",
       "",
       {},
       {},
       allow_low_high},
      {"a listed tenant's other class, even one that never preempts",
       "acme",
       with(mig, "batch-high", 500, "Never"),
       false,
       "priority-class",
       "",
       {"\"batch-high\""},
       {},
       allow_low_high},
      // The default: a tenant that lists nothing.
      {"default: a preempting class", "acme", with(mig, "high", 1000, "PreemptLowerPriority"),
       false, "priority-class",
       "[priority-class] priority 1000 (priorityClassName \"high\", preemptionPolicy "
       "PreemptLowerPriority): it may preempt other tenants' lower-priority pods, CPU-only pods "
       "included, wherever kube-scheduler does not ask gpu-tenancy; tenant \"acme\" lists no "
       "priorityClasses, so its pods may use only priority 0 or a class above 0 with "
       "preemptionPolicy: Never, unless the policy lists the class"},
      {"default: a CPU-only pod with a preempting class",
       "acme",
       with("{cpu: 1}", "high", 1000, "PreemptLowerPriority"),
       false,
       "priority-class",
       "",
       {"priority 1000"}},
      {"default: a cluster globalDefault class above 0 is a class like any other",
       "acme",
       with("{cpu: 1}", "cluster-default", 100, "PreemptLowerPriority"),
       false,
       "priority-class",
       "",
       {"priorityClassName \"cluster-default\""}},
      {"default: no class", "acme", with(mig, "", 0, "PreemptLowerPriority"), true, ""},
      {"default: a class of value 0", "acme", with(mig, "zero", 0, "PreemptLowerPriority"), true,
       ""},
      {"default: a high class that never preempts", "acme", with(mig, "high-np", 1000, "Never"),
       true, ""},
      {"default: below 0, even without preempting",
       "acme",
       with(mig, "scavenger", -10, "Never"),
       false,
       "priority-class",
       "",
       {"priority -10 (priorityClassName \"scavenger\", preemptionPolicy Never): below 0, any "
        "other tenant's pod may preempt it"}},
      {"listed: below 0 by the tenant's own choice",
       "acme",
       with(mig, "acme-low", -10, "PreemptLowerPriority"),
       true,
       "",
       "",
       {},
       {},
       [](topology::Policy& p) {
         for (topology::Tenant& t : p.tenants) {
           if (t.name == "acme") t.priority_classes = {"acme-low"};
         }
       }},
      {"a namespace of no tenant is not bound by it", "kube-public",
       with("{cpu: 1}", "high", 1000, "PreemptLowerPriority"), true, ""},
  });
}

}  // namespace
