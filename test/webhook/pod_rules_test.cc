// Every pod rule, allowed and denied, through the validating webhook's AdmissionReview path.
#include "webhook/pod_rules.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace {

using webhook::ReviewKind;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

// A one-container pod "p" whose container "main" has `limits` (a YAML flow map). `extra_spec`
// lines (indented 2) go before the containers, so container fields (indented 4) may be appended.
std::string Pod(const std::string& limits, const std::string& extra_spec = "",
                const std::string& annotations = "{}") {
  return absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: ", annotations, "}\nspec:\n",
      extra_spec,
      "  containers:\n  - name: main\n    image: cuda\n    resources: {limits: ", limits, "}\n");
}

const char kTimeSliceWarning[] =
    "no memory isolation on time-sliced GPUs; set gpu-tenancy.io/gpu-memory so the scheduler "
    "keeps headroom";

struct Case {
  std::string name;
  std::string ns;
  std::string pod_yaml;
  bool allowed;
  std::string rule;                        // denying rule id
  std::string message = "";                // exact status.message, when given
  std::vector<std::string> contains = {};  // substrings of status.message
  std::vector<std::string> warnings = {};  // exact warnings
  std::function<void(topology::Policy&)> tweak = nullptr;
};

void RunCases(const std::vector<Case>& cases) {
  topology::ClusterSnapshot snapshot = webhook_test::SnapshotWithNamespace(
      "bank-prod", {{"gpu-tenancy.io/tenant", "bank"}, {"team", "payments"}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    topology::Policy policy = TestPolicy();
    if (c.tweak) c.tweak(policy);
    rapidjson::Document pod = Yaml(c.pod_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    webhook::ReviewOutcome out =
        webhook::Review(webhook_test::MakeReview(pod, o), ReviewKind::kValidate, policy, snapshot);
    Reply r = webhook_test::Decode(out);
    ASSERT_EQ(r.http_status, 200) << out.body;
    EXPECT_EQ(r.allowed, c.allowed) << out.body;
    EXPECT_EQ(out.allowed, c.allowed);
    EXPECT_EQ(out.rule, c.rule);
    if (!c.message.empty()) {
      EXPECT_EQ(r.message, c.message);
    }
    for (const std::string& part : c.contains) {
      EXPECT_NE(r.message.find(part), std::string::npos) << "want \"" << part << "\" in\n"
                                                         << r.message;
    }
    if (!c.allowed) {
      EXPECT_EQ(r.message.rfind(absl::StrCat("[", c.rule, "] "), 0), 0u) << r.message;
      EXPECT_EQ(r.message.find('\n'), std::string::npos) << "one line";
    }
    EXPECT_EQ(r.warnings, c.warnings);
  }
}

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

TEST(PodRulesTest, DeviceAccess) {
  RunCases({
      {"privileged", "acme", Pod("{}", "", "{}") + "    securityContext: {privileged: true}\n",
       false, "device-access",
       "[device-access] container \"main\" is privileged, but tenant \"acme\" (tier untrusted) has "
       "no device access; remove securityContext.privileged"},
      {"privileged false is fine", "acme",
       Pod("{nvidia.com/gpu: 1}") + "    securityContext: {privileged: false}\n", true, ""},
      {"CAP_SYS_ADMIN",
       "acme",
       Pod("{}") + "    securityContext: {capabilities: {add: [NET_ADMIN, CAP_SYS_ADMIN]}}\n",
       false,
       "device-access",
       "",
       {"container \"main\" adds capability CAP_SYS_ADMIN",
        "remove it from securityContext.capabilities.add"}},
      {"SYS_ADMIN",
       "acme",
       Pod("{}") + "    securityContext: {capabilities: {add: [SYS_ADMIN]}}\n",
       false,
       "device-access",
       "",
       {"adds capability SYS_ADMIN"}},
      {"ALL capabilities",
       "acme",
       Pod("{}") + "    securityContext: {capabilities: {add: [ALL]}}\n",
       false,
       "device-access",
       "",
       {"adds capability ALL (which includes SYS_ADMIN)"}},
      {"other capabilities are fine", "acme",
       Pod("{}") + "    securityContext: {capabilities: {add: [NET_BIND_SERVICE]}}\n", true, ""},
      {"host path of a device",
       "acme",
       Pod("{}", "  volumes:\n  - {name: dev, hostPath: {path: /dev/nvidia0}}\n"),
       false,
       "device-access",
       "",
       {"volume \"dev\" mounts host path /dev/nvidia0, but tenant \"acme\"",
        "request GPUs as resources (nvidia.com/gpu or a MIG slice) instead of mounting host "
        "devices"}},
      {"host path of /dev/dri",
       "acme",
       Pod("{}", "  volumes:\n  - {name: dri, hostPath: {path: /dev/dri/}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /dev/dri/,"}},
      {"host path /run/nvidia",
       "acme",
       Pod("{}", "  volumes:\n  - {name: drv, hostPath: {path: /run/nvidia/driver}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /run/nvidia/driver"}},
      {"host path of all of /dev",
       "acme",
       Pod("{}", "  volumes:\n  - {name: dev, hostPath: {path: /dev}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /dev, which contains /dev/nvidia*"}},
      {"host path dodging with ..",
       "acme",
       Pod("{}", "  volumes:\n  - {name: dev, hostPath: {path: /var/../dev/./nvidiactl}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /var/../dev/./nvidiactl"}},
      {"MPS pipe directory",
       "acme",
       Pod("{}", "  volumes:\n  - {name: mps, hostPath: {path: /tmp/nvidia-mps}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /tmp/nvidia-mps (an MPS pipe directory)"}},
      {"MPS pipe elsewhere",
       "acme",
       Pod("{}", "  volumes:\n  - {name: mps, hostPath: {path: /var/lib/nvidia-mps/pipe}}\n"),
       false,
       "device-access",
       "",
       {"(an MPS pipe directory)"}},
      {"parent of the MPS pipe",
       "acme",
       Pod("{}", "  volumes:\n  - {name: tmp, hostPath: {path: /tmp}}\n"),
       false,
       "device-access",
       "",
       {"mounts host path /tmp, which contains /tmp/nvidia-mps"}},
      {"unrelated host path", "acme",
       Pod("{}", "  volumes:\n  - {name: logs, hostPath: {path: /var/log}}\n"), true, ""},
      {"hostIPC",
       "acme",
       Pod("{nvidia.com/gpu: 1}", "  hostIPC: true\n"),
       false,
       "device-access",
       "",
       {"pod sets hostIPC", "remove hostIPC"}},
      {"NVIDIA_VISIBLE_DEVICES=all without GPUs", "acme",
       Pod("{}") + "    env:\n    - {name: NVIDIA_VISIBLE_DEVICES, value: all}\n", false,
       "device-access",
       "[device-access] container \"main\" sets NVIDIA_VISIBLE_DEVICES=all without requesting a "
       "GPU, which reaches every GPU on the node, but tenant \"acme\" (tier untrusted) has no "
       "device access; remove it and request nvidia.com/gpu or a MIG slice"},
      {"NVIDIA_VISIBLE_DEVICES with GPUs",
       "acme",
       Pod("{nvidia.com/gpu: 1}") + "    env:\n    - {name: NVIDIA_VISIBLE_DEVICES, value: all}\n",
       false,
       "device-access",
       "",
       {"container \"main\" sets NVIDIA_VISIBLE_DEVICES, but", "the device plugin sets it"}},
      {"NVIDIA_DRIVER_CAPABILITIES in an init container",
       "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n"
       "  - name: setup\n    env: [{name: NVIDIA_DRIVER_CAPABILITIES, value: all}]\n"
       "  containers:\n  - name: main\n",
       false,
       "device-access",
       "",
       {"init container \"setup\" sets NVIDIA_DRIVER_CAPABILITIES"}},
      {"CUDA_MPS_PIPE_DIRECTORY in an ephemeral container",
       "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: main\n"
       "  ephemeralContainers:\n  - name: debug\n"
       "    env: [{name: CUDA_MPS_PIPE_DIRECTORY, value: /tmp/nvidia-mps}]\n",
       false,
       "device-access",
       "",
       {"ephemeral container \"debug\" sets CUDA_MPS_PIPE_DIRECTORY"}},
      {"ordinary env", "acme",
       Pod("{}") + "    env:\n    - {name: CUDA_VISIBLE_DEVICES, value: '0'}\n", true, ""},
      {"the platform tier has device access", "gpu-ops",
       Pod("{nvidia.com/gpu: 1}",
           "  hostIPC: true\n  volumes:\n  - {name: d, hostPath: {path: /dev/nvidia0}}\n") +
           "    securityContext: {privileged: true}\n"
           "    env:\n    - {name: NVIDIA_VISIBLE_DEVICES, value: all}\n",
       true, ""},
  });
}

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

TEST(PodRulesTest, InvalidGpuRequestAndSeveralViolations) {
  RunCases({
      {"unreadable memory annotation",
       "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: lots}"),
       false,
       "invalid-gpu-request",
       "",
       {"[invalid-gpu-request] pod research/p: annotation gpu-tenancy.io/gpu-memory must be a "
        "non-negative quantity such as 20Gi, got \"lots\""}},
      {"three rules at once: the first, and the count", "acme",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: engine\n"
       "    resources: {limits: {nvidia.com/gpu.shared: 2}}\n"
       "    securityContext: {privileged: true}\n",
       false, "tier-shared",
       "[tier-shared] container \"engine\" requests nvidia.com/gpu.shared, but tenant \"acme\" "
       "(tier untrusted) may use only exclusive, mig; request a MIG slice such as "
       "nvidia.com/mig-1g.10gb (and 2 more)"},
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

// UPDATE: rules on immutable fields do not deny; the memory annotation is judged when it changes.
TEST(PodRulesTest, Update) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, ns, old_yaml, new_yaml;
    bool allowed;
    std::string rule;
  } cases[] = {
      {"label change on a pod that breaks today's rules", "acme",
       Pod("{nvidia.com/gpu.shared: 2}") + "    securityContext: {privileged: true}\n",
       Pod("{nvidia.com/gpu.shared: 2}") + "    securityContext: {privileged: true}\n", true, ""},
      {"memory annotation raised over the limit", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"), false,
       "tenant-limits"},
      {"memory annotation over the limit, unchanged", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 80Gi}"), true, ""},
      {"memory annotation made unreadable", "research",
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8Gi}"),
       Pod("{nvidia.com/gpu.shared: 1}", "", "{gpu-tenancy.io/gpu-memory: 8 GB}"), false,
       "invalid-gpu-request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document old_pod = Yaml(c.old_yaml);
    rapidjson::Document new_pod = Yaml(c.new_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    o.operation = "UPDATE";
    o.old_object = &old_pod;
    Reply r = RunReview(new_pod, ReviewKind::kValidate, policy, o);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed) << r.message;
    if (!c.allowed) {
      EXPECT_EQ(r.message.rfind(absl::StrCat("[", c.rule, "]"), 0), 0u) << r.message;
    }
    EXPECT_TRUE(r.warnings.empty());
  }
}

// kubectl debug adds ephemeral containers through the pods/ephemeralcontainers subresource.
TEST(PodRulesTest, EphemeralContainersSubresource) {
  topology::Policy policy = TestPolicy();
  const std::string pod_yaml =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/gpu.shared: 4}}}\n"
      "  ephemeralContainers:\n  - name: debugger\n    securityContext: {privileged: true}\n";
  struct Case {
    std::string name, ns, sub_resource;
    bool allowed;
    std::string message;
  } cases[] = {
      {"privileged debug container", "acme", "ephemeralcontainers", false,
       "[device-access] ephemeral container \"debugger\" is privileged, but tenant \"acme\" (tier "
       "untrusted) has no device access; remove securityContext.privileged"},
      {"privileged debug container, platform tier", "gpu-ops", "ephemeralcontainers", true, ""},
      {"privileged debug container, unknown tenant", "nowhere", "ephemeralcontainers", false,
       "[unknown-tenant] namespace \"nowhere\" belongs to no tenant and the policy denies GPUs to "
       "unknown tenants, but ephemeral container \"debugger\" is privileged; ask the GPU platform "
       "team to add the namespace to a tenant"},
      {"status subresource is not ours", "acme", "status", true, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod = Yaml(pod_yaml);
    ReviewOptions o;
    o.ns = c.ns;
    o.operation = "UPDATE";
    o.old_object = &pod;
    o.sub_resource = c.sub_resource;
    Reply r = RunReview(pod, ReviewKind::kValidate, policy, o);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed);
    EXPECT_EQ(r.message, c.message);
    Reply m = RunReview(pod, ReviewKind::kMutate, policy, o);
    EXPECT_TRUE(m.allowed);
    EXPECT_FALSE(m.has_patch) << "subresources are not mutated";
  }
}

TEST(PodRulesTest, TableHasEveryRule) {
  std::set<std::string> ids;
  for (const webhook::PodRule& rule : webhook::PodRules()) {
    EXPECT_NE(rule.check, nullptr);
    ids.emplace(rule.id);
  }
  EXPECT_EQ(
      ids, (std::set<std::string>{"unknown-tenant", "tier-shared", "fail-requests-greater-than-one",
                                  "device-access", "tenant-limits", "invalid-gpu-request"}));
}

TEST(PodRulesTest, ClassifiesResources) {
  topology::Policy policy = TestPolicy();
  using webhook::ResourceUse;
  struct Case {
    std::string resource;
    ResourceUse use;
  } cases[] = {
      {"nvidia.com/gpu", ResourceUse::kWholeGpu},
      {"nvidia.com/gpu.shared", ResourceUse::kShared},
      {"example.com/vgpu", ResourceUse::kShared},
      {"nvidia.com/mig-3g.40gb", ResourceUse::kMig},
      {"nvidia.com/mig-1g.10gb.shared", ResourceUse::kMigShared},
      {"nvidia.com/gpu.memory", ResourceUse::kMemory},
      {"nvidia.com/gpumem", ResourceUse::kMemory},
      {"nvidia.com/gpu.mps", ResourceUse::kMps},
      {"nvidia.com/gpucores", ResourceUse::kOtherGpu},
      {"cpu", ResourceUse::kNotGpu},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.resource);
    EXPECT_EQ(webhook::ClassifyPodResource(c.resource, policy), c.use);
  }
  EXPECT_EQ(webhook::MigProfileOf("nvidia.com/mig-1g.10gb.shared"), "1g.10gb");
  EXPECT_EQ(webhook::MigProfileOf("nvidia.com/gpu"), "");
}

}  // namespace
