// The device-access rule: the escape hatches past the device plugin (privileged, CAP_SYS_ADMIN,
// device and MPS host paths, hostIPC, NVIDIA_* / CUDA_MPS_* env) and past the DRA allocator
// (claims with admin access), unless the tier allows them. unknown-tenant reuses the findings.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "webhook/claim_rules.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"
#include "webhook/verdict.h"

namespace webhook::pod_rules_internal {
namespace {

// Lexically cleans an absolute path ("/dev/../dev//nvidia0/" -> "/dev/nvidia0").
std::string CleanPath(absl::string_view path) {
  std::vector<absl::string_view> parts;
  for (absl::string_view p : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (p == ".") continue;
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(p);
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"));
}

// Why a host path reaches GPU devices or the MPS pipe, or "".
std::string HostPathReach(absl::string_view raw) {
  std::string path = CleanPath(raw);
  if (absl::StrContains(path, kMpsPipeMarker)) return " (an MPS pipe directory)";
  for (absl::string_view device : kDeviceHostPaths) {
    // /dev/nvidia0, /dev/nvidiactl, /run/nvidia-persistenced...; /dev/dri only as a directory.
    if (device == "/dev/dri" ? (path == device || absl::StartsWith(path, "/dev/dri/"))
                             : absl::StartsWith(path, device)) {
      return "";
    }
  }
  // A parent directory mounts everything below it.
  for (absl::string_view device : kDeviceHostPaths) {
    if (path == "/" || absl::StartsWith(device, absl::StrCat(path, "/"))) {
      return absl::StrCat(", which contains ", device, device == kMpsPipeDirectory ? "" : "*");
    }
  }
  return "-";  // not a device path
}

}  // namespace

std::vector<Finding> DeviceAccessFindings(const PodView& pod) {
  std::vector<Finding> out;
  const bool gpu_requests = pod.HasGpuRequests();
  for (const ContainerView& c : pod.containers) {
    if (c.privileged) {
      out.push_back(
          {absl::StrCat(c.Label(), " is privileged"), "remove securityContext.privileged"});
    }
    for (const std::string& cap : c.capabilities_added) {
      std::string upper = absl::AsciiStrToUpper(cap);
      if (std::find(kDeviceCapabilities.begin(), kDeviceCapabilities.end(), upper) !=
          kDeviceCapabilities.end()) {
        out.push_back({absl::StrCat(c.Label(), " adds capability ", cap,
                                    upper == "ALL" ? " (which includes SYS_ADMIN)" : ""),
                       "remove it from securityContext.capabilities.add"});
      }
    }
    for (const topology::EnvVar& e : c.env) {
      if (std::find(kDeviceEnv.begin(), kDeviceEnv.end(), e.name) == kDeviceEnv.end()) continue;
      if (e.name == "NVIDIA_VISIBLE_DEVICES" && !gpu_requests &&
          absl::AsciiStrToLower(e.value) == "all") {
        out.push_back({absl::StrCat(c.Label(),
                                    " sets NVIDIA_VISIBLE_DEVICES=all without requesting a GPU, "
                                    "which reaches every GPU on the node"),
                       "remove it and request nvidia.com/gpu or a MIG slice"});
        continue;
      }
      out.push_back({absl::StrCat(c.Label(), " sets ", e.name),
                     absl::StrCat("remove it; the device plugin sets it from the pod's GPU "
                                  "resource requests")});
    }
  }
  for (const topology::HostPathVolume& v : pod.facts.host_paths) {
    std::string reach = HostPathReach(v.path);
    if (reach == "-") continue;
    out.push_back({absl::StrCat("volume \"", v.volume, "\" mounts host path ", v.path, reach),
                   "request GPUs as resources (nvidia.com/gpu or a MIG slice) instead of "
                   "mounting host devices"});
  }
  if (pod.facts.host_ipc) {
    // Assigned in place: moving a Finding of two literals into the vector trips GCC 12's
    // -Warray-bounds false positive on short strings (seen with precompiled headers).
    Finding& f = out.emplace_back();
    f.what =
        "pod sets hostIPC (the host IPC namespace, shared with MPS and other pods' GPU processes)";
    f.remedy = "remove hostIPC";
  }
  return out;
}

void CheckDeviceAccess(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier || ctx.tenant.tier->device_access) return;
  for (const Finding& f : DeviceAccessFindings(ctx.pod)) {
    out.push_back(
        MakeViolation("device-access",
                      absl::StrCat(f.what, ", but ", TenantPhrase(ctx.tenant, ctx.namespace_name),
                                   " has no device access; ", f.remedy)));
  }
}

}  // namespace webhook::pod_rules_internal

namespace webhook {

void CheckClaimDeviceAccess(const ClaimView& claim, const topology::TenantRef& tenant,
                            absl::string_view namespace_name, std::vector<Violation>& out) {
  if (!tenant.tier || tenant.tier->device_access) return;
  for (const ClaimRequest& r : claim.requests) {
    if (!r.admin_access) continue;
    std::string reach = r.all_devices
                            ? absl::StrCat("all matching devices of class ", r.device_class)
                            : absl::StrCat(r.count, r.count == 1 ? " device" : " devices",
                                           " of class ", r.device_class);
    out.push_back(MakeViolation(
        "device-access",
        absl::StrCat(claim.kind, " \"", claim.name, "\" request \"", r.name,
                     "\" asks for admin access to ", reach,
                     ", including devices allocated to other tenants, but ",
                     TenantPhrase(tenant, namespace_name),
                     " has no device access; remove adminAccess to claim free devices only")));
  }
}

}  // namespace webhook
