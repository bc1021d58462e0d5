// The device-access rule (device_access_rules.cc), allowed and denied, through the validating
// webhook's AdmissionReview path: pods' escape hatches, and DRA claims with admin access.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/webhook/pod_rules_test_util.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/claim_rules.h"
#include "webhook/pod_rules.h"

namespace {

using pod_rules_test::Pod;
using pod_rules_test::RunCases;

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

// A claim or template named "c" in resource.k8s.io/`version` whose one request is `request`
// (a YAML flow map).
std::string AdminAccessClaim(const std::string& version, const std::string& kind,
                             const std::string& request) {
  const bool tmpl = kind == "ResourceClaimTemplate";
  return absl::StrCat("apiVersion: resource.k8s.io/", version, "\nkind: ", kind,
                      "\nmetadata: {name: c}\nspec:\n", tmpl ? "  spec:\n    " : "  ",
                      "devices: {requests: [", request, "]}\n");
}

TEST(ClaimDeviceAccessTest, AdminAccessNeedsDeviceAccess) {
  const topology::Policy policy = webhook_test::TestPolicy();
  // v1 and v1beta2 carry a request's fields under `exactly`; v1beta1 on the request itself.
  const std::string exactly_all =
      "{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, "
      "adminAccess: true}}";
  const std::string flat_all =
      "{name: gpu, deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}";
  struct Case {
    std::string name, ns, version, kind, request;
    bool allowed;
    std::string message;  // exact when denied and not empty; else a part of it
  } cases[] = {
      {"v1 claim, all devices", "acme", "v1", "ResourceClaim", exactly_all, false,
       "[device-access] ResourceClaim \"c\" request \"gpu\" asks for admin access to all "
       "matching devices of class gpu.nvidia.com, including devices allocated to other tenants, "
       "but tenant \"acme\" (tier untrusted) has no device access; remove adminAccess to claim "
       "free devices only"},
      {"v1beta2 claim, all devices", "acme", "v1beta2", "ResourceClaim", exactly_all, false,
       "all matching devices of class gpu.nvidia.com"},
      {"v1beta1 claim, all devices", "acme", "v1beta1", "ResourceClaim", flat_all, false,
       "all matching devices of class gpu.nvidia.com"},
      {"v1 template", "acme", "v1", "ResourceClaimTemplate", exactly_all, false,
       "ResourceClaimTemplate \"c\" request \"gpu\" asks for admin access"},
      {"v1beta2 template", "acme", "v1beta2", "ResourceClaimTemplate", exactly_all, false,
       "ResourceClaimTemplate \"c\" request \"gpu\" asks for admin access"},
      {"v1beta1 template", "acme", "v1beta1", "ResourceClaimTemplate", flat_all, false,
       "ResourceClaimTemplate \"c\" request \"gpu\" asks for admin access"},
      {"v1, a count", "acme", "v1", "ResourceClaim",
       "{name: gpu, exactly: {deviceClassName: mig.nvidia.com, count: 3, adminAccess: true}}",
       false, "admin access to 3 devices of class mig.nvidia.com, including devices allocated"},
      {"v1beta1, the default count", "acme", "v1beta1", "ResourceClaim",
       "{name: gpu, deviceClassName: gpu.nvidia.com, adminAccess: true}", false,
       "admin access to 1 device of class gpu.nvidia.com,"},
      // A class name does not say which driver's devices it selects.
      {"any device class", "acme", "v1", "ResourceClaim",
       "{name: any, exactly: {deviceClassName: everything.example.com, adminAccess: true}}", false,
       "request \"any\" asks for admin access to 1 device of class everything.example.com"},
      {"trusted tier without deviceAccess", "research", "v1", "ResourceClaim", exactly_all, false,
       "but tenant \"research\" (tier trusted) has no device access"},
      {"the platform tier has device access", "gpu-ops", "v1", "ResourceClaim", exactly_all, true,
       ""},
      {"v1beta1 template, platform tier", "gpu-ops", "v1beta1", "ResourceClaimTemplate", flat_all,
       true, ""},
      {"adminAccess false", "acme", "v1", "ResourceClaim",
       "{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, adminAccess: false}}", true, ""},
      {"v1beta1 adminAccess false", "acme", "v1beta1", "ResourceClaim",
       "{name: gpu, deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: false}",
       true, ""},
      {"firstAvailable without admin access", "acme", "v1", "ResourceClaim",
       "{name: gpu, firstAvailable: [{name: big, deviceClassName: gpu.nvidia.com}, "
       "{name: small, deviceClassName: mig.nvidia.com, count: 2}]}",
       true, ""},
      // The API server refuses adminAccess on a subrequest today; the rule reads it anyway.
      {"a subrequest with admin access", "acme", "v1beta2", "ResourceClaim",
       "{name: gpu, firstAvailable: [{name: small, deviceClassName: mig.nvidia.com}, "
       "{name: big, deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}]}",
       false, "request \"gpu/big\" asks for admin access to all matching devices"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document claim = webhook_test::Yaml(AdminAccessClaim(c.version, c.kind, c.request));
    webhook_test::ReviewOptions o;
    o.ns = c.ns;
    o.group = "resource.k8s.io";
    o.version = c.version;
    o.kind = c.kind;
    o.resource = c.kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates";
    webhook_test::Reply r =
        webhook_test::RunReview(claim, webhook::ReviewKind::kValidate, policy, o);
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed) << r.message;
    if (c.allowed) continue;
    EXPECT_EQ(r.message.rfind("[device-access] ", 0), 0u) << r.message;
    if (absl::StartsWith(c.message, "[")) {
      EXPECT_EQ(r.message, c.message);
    } else {
      EXPECT_NE(r.message.find(c.message), std::string::npos) << c.message << "\n" << r.message;
    }
  }
}

// A claim's spec is immutable and was judged at creation: an UPDATE (kube-scheduler adds its
// finalizer and allocation) is never denied, admin access or not.
TEST(ClaimDeviceAccessTest, AdminAccessUpdateIsNotJudged) {
  rapidjson::Document claim = webhook_test::Yaml(AdminAccessClaim(
      "v1", "ResourceClaim",
      "{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, adminAccess: true}}"));
  webhook_test::ReviewOptions o;
  o.operation = "UPDATE";
  o.old_object = &claim;
  o.group = "resource.k8s.io";
  o.kind = "ResourceClaim";
  o.resource = "resourceclaims";
  webhook_test::Reply r =
      webhook_test::RunReview(claim, webhook::ReviewKind::kValidate, webhook_test::TestPolicy(), o);
  EXPECT_TRUE(r.allowed) << r.message;
}

}  // namespace
