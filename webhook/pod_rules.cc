#include "webhook/pod_rules.h"

#include <algorithm>
#include <array>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/k8s_codec.h"
#include "topology/status_macros.h"
#include "topology/supply.h"

namespace webhook {
namespace {

using common::AsStringView;
using common::FindNonNull;
using common::JsonValue;
using common::StringOr;
using topology::ModeSet;
using topology::Quantity;
using topology::SharingMode;

// ---------------------------------------------------------------------------------------------
// Reading the pod.

// The environment variables device-access looks at; ParseContainer keeps only these.
constexpr std::array<absl::string_view, 3> kDeviceEnv = {
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_MPS_PIPE_DIRECTORY"};

absl::StatusOr<ContainerView> ParseContainer(const JsonValue& c, ContainerList list,
                                             absl::string_view path) {
  if (!c.IsObject()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected object"));
  ContainerView view;
  view.list = list;
  view.name = std::string(StringOr(c, "name"));
  if (const JsonValue* resources = FindNonNull(c, "resources");
      resources && resources->IsObject()) {
    std::string r_path = common::JoinPath(path, "resources");
    if (const JsonValue* req = common::FindMember(*resources, "requests")) {
      ASSIGN_OR_RETURN(view.requests,
                       common::ParseResourceList(*req, common::JoinPath(r_path, "requests")));
    }
    if (const JsonValue* lim = common::FindMember(*resources, "limits")) {
      ASSIGN_OR_RETURN(view.limits,
                       common::ParseResourceList(*lim, common::JoinPath(r_path, "limits")));
    }
  }
  // The API server has validated field types before any webhook runs; a hand-written manifest
  // with a wrong type simply does not count as asking for the thing.
  if (const JsonValue* sc = FindNonNull(c, "securityContext"); sc && sc->IsObject()) {
    const JsonValue* privileged = FindNonNull(*sc, "privileged");
    view.privileged = privileged && privileged->IsBool() && privileged->GetBool();
    if (const JsonValue* caps = FindNonNull(*sc, "capabilities"); caps && caps->IsObject()) {
      if (const JsonValue* add = FindNonNull(*caps, "add"); add && add->IsArray()) {
        for (const JsonValue& cap : add->GetArray()) {
          if (cap.IsString()) view.capabilities_added.emplace_back(AsStringView(cap));
        }
      }
    }
  }
  if (const JsonValue* env = FindNonNull(c, "env"); env && env->IsArray()) {
    for (const JsonValue& e : env->GetArray()) {
      if (!e.IsObject()) continue;
      absl::string_view name = StringOr(e, "name");
      if (std::find(kDeviceEnv.begin(), kDeviceEnv.end(), name) == kDeviceEnv.end()) continue;
      view.env.push_back({std::string(name), std::string(StringOr(e, "value"))});
    }
  }
  return view;
}

void ParsePoolSelections(const JsonValue& spec, const topology::Policy& policy, PodView& view) {
  if (const JsonValue* selector = FindNonNull(spec, "nodeSelector"); selector) {
    absl::string_view pool = StringOr(*selector, policy.pool_label);
    if (!pool.empty()) view.pool_selections.push_back({std::string(pool), "nodeSelector"});
  }
  const JsonValue* affinity = FindNonNull(spec, "affinity");
  const JsonValue* node = affinity ? FindNonNull(*affinity, "nodeAffinity") : nullptr;
  const JsonValue* required =
      node ? FindNonNull(*node, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  const JsonValue* terms = required ? FindNonNull(*required, "nodeSelectorTerms") : nullptr;
  if (!terms || !terms->IsArray()) return;
  std::set<std::string> seen;
  for (const JsonValue& term : terms->GetArray()) {
    const JsonValue* exprs = FindNonNull(term, "matchExpressions");
    if (!exprs || !exprs->IsArray()) continue;
    for (const JsonValue& e : exprs->GetArray()) {
      if (StringOr(e, "key") != policy.pool_label || StringOr(e, "operator") != "In") continue;
      const JsonValue* values = FindNonNull(e, "values");
      if (!values || !values->IsArray()) continue;
      for (const JsonValue& v : values->GetArray()) {
        std::string pool(AsStringView(v));
        if (!pool.empty() && seen.insert(pool).second) {
          view.pool_selections.push_back({pool, "required node affinity"});
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shared phrases.

ModeSet Modes(std::initializer_list<SharingMode> modes) {
  ModeSet set;
  for (SharingMode m : modes) set.Add(m);
  return set;
}

// The modes under which a resource may be used; the tier needs at least one of them.
// Names the webhook does not classify are left to the extender.
std::optional<ModeSet> AcceptableModes(ResourceUse use) {
  switch (use) {
    case ResourceUse::kWholeGpu:
      return Modes(
          {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMps, SharingMode::kTimeslice});
    case ResourceUse::kMig:
      return Modes({SharingMode::kMig});
    case ResourceUse::kMigShared:
      return Modes({SharingMode::kMigShared});
    case ResourceUse::kShared:
      return Modes({SharingMode::kTimeslice, SharingMode::kMps});
    case ResourceUse::kMps:
      return Modes({SharingMode::kMps});
    case ResourceUse::kMemory:
      return Modes({SharingMode::kTimeslice, SharingMode::kMps, SharingMode::kMigShared});
    case ResourceUse::kNotGpu:
    case ResourceUse::kOtherGpu:
      break;
  }
  return std::nullopt;
}

bool TierAllowsAny(const topology::Tier& tier, const ModeSet& modes) {
  for (SharingMode m : {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMigShared,
                        SharingMode::kMps, SharingMode::kTimeslice}) {
    if (modes.Has(m) && tier.modes.Has(m)) return true;
  }
  return false;
}

std::string FirstMigProfile(const topology::TenantRef& tenant) {
  if (tenant.tenant && !tenant.tenant->limits.mig_profiles.empty()) {
    return tenant.tenant->limits.mig_profiles.front();
  }
  return "1g.10gb";
}

// What a tenant of this tier can ask for instead.
std::string UseInstead(const topology::TenantRef& tenant) {
  const topology::Tier& tier = *tenant.tier;
  if (tier.modes.Has(SharingMode::kMig)) {
    return absl::StrCat("request a MIG slice such as nvidia.com/mig-", FirstMigProfile(tenant));
  }
  if (tier.modes.Has(SharingMode::kExclusive)) return "request a whole GPU (nvidia.com/gpu)";
  if (tier.modes.Has(SharingMode::kTimeslice) || tier.modes.Has(SharingMode::kMps)) {
    return "request nvidia.com/gpu.shared";
  }
  if (tier.modes.Has(SharingMode::kMigShared)) {
    return absl::StrCat("request a shared MIG slice such as nvidia.com/mig-",
                        FirstMigProfile(tenant), ".shared");
  }
  return "ask the GPU platform team for a tier that allows it";
}

std::string MayUseOnly(const PodRuleContext& ctx) {
  return absl::StrCat(TenantPhrase(ctx.tenant, ctx.namespace_name), " may use only ",
                      ctx.tenant.tier->modes.ToString());
}

// Resource names a container asks for (requests or limits), with the larger of the two.
std::vector<std::pair<std::string, Quantity>> ContainerResources(const ContainerView& c) {
  topology::ResourceList merged = c.requests;
  for (const auto& [name, q] : c.limits) {
    auto [it, inserted] = merged.emplace(name, q);
    if (!inserted && q > it->second) it->second = q;
  }
  std::vector<std::pair<std::string, Quantity>> out;
  for (const auto& [name, q] : merged) {
    if (!q.IsZero()) out.emplace_back(name, q);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Device access findings, shared by device-access and unknown-tenant.

struct Finding {
  std::string what;    // `container "x" is privileged`
  std::string remedy;  // `remove securityContext.privileged`
};

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

constexpr std::array<absl::string_view, 5> kDevicePaths = {"/dev/nvidia", "/dev/dri", "/run/nvidia",
                                                           "/var/run/nvidia", "/tmp/nvidia-mps"};
constexpr absl::string_view kMpsPipeDirectory = "/tmp/nvidia-mps";

// Why a host path reaches GPU devices or the MPS pipe, or "".
std::string HostPathReach(absl::string_view raw) {
  std::string path = CleanPath(raw);
  if (absl::StrContains(path, "nvidia-mps")) return " (an MPS pipe directory)";
  for (absl::string_view device : kDevicePaths) {
    // /dev/nvidia0, /dev/nvidiactl, /run/nvidia-persistenced...; /dev/dri only as a directory.
    if (device == "/dev/dri" ? (path == device || absl::StartsWith(path, "/dev/dri/"))
                             : absl::StartsWith(path, device)) {
      return "";
    }
  }
  // A parent directory mounts everything below it.
  for (absl::string_view device : kDevicePaths) {
    if (path == "/" || absl::StartsWith(device, absl::StrCat(path, "/"))) {
      return absl::StrCat(", which contains ", device, device == kMpsPipeDirectory ? "" : "*");
    }
  }
  return "-";  // not a device path
}

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
      if (upper == "SYS_ADMIN" || upper == "CAP_SYS_ADMIN" || upper == "ALL") {
        out.push_back({absl::StrCat(c.Label(), " adds capability ", cap,
                                    upper == "ALL" ? " (which includes SYS_ADMIN)" : ""),
                       "remove it from securityContext.capabilities.add"});
      }
    }
    for (const EnvVar& e : c.env) {
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
  for (const HostPathVolume& v : pod.host_paths) {
    std::string reach = HostPathReach(v.path);
    if (reach == "-") continue;
    out.push_back({absl::StrCat("volume \"", v.volume, "\" mounts host path ", v.path, reach),
                   "request GPUs as resources (nvidia.com/gpu or a MIG slice) instead of "
                   "mounting host devices"});
  }
  if (pod.host_ipc) {
    out.push_back(
        {"pod sets hostIPC (the host IPC namespace, shared with MPS and other pods' "
         "GPU processes)",
         "remove hostIPC"});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The rules.

void CheckUnknownTenant(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (ctx.tenant.tier) return;
  std::string trigger;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (ClassifyPodResource(name, ctx.policy) != ResourceUse::kNotGpu) {
        trigger = absl::StrCat(c.Label(), " requests ", name);
        break;
      }
    }
    if (!trigger.empty()) break;
  }
  if (trigger.empty()) {
    std::vector<Finding> findings = DeviceAccessFindings(ctx.pod);
    if (!findings.empty()) trigger = findings.front().what;
  }
  if (trigger.empty() && ctx.pod.facts.annotations.count(ctx.policy.memory_annotation)) {
    trigger = absl::StrCat("the pod sets ", ctx.policy.memory_annotation);
  }
  if (trigger.empty()) return;  // a CPU-only pod of an unknown tenant is fine
  out.push_back(MakeViolation(
      "unknown-tenant",
      absl::StrCat("namespace \"", ctx.namespace_name,
                   "\" belongs to no tenant and the policy denies GPUs to unknown tenants, but ",
                   trigger, "; ask the GPU platform team to add the namespace to a tenant")));
}

void CheckTierShared(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier) return;
  const topology::Tier& tier = *ctx.tenant.tier;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      ResourceUse use = ClassifyPodResource(name, ctx.policy);
      std::optional<ModeSet> acceptable = AcceptableModes(use);
      if (!acceptable || TierAllowsAny(tier, *acceptable)) continue;
      out.push_back(MakeViolation(
          "tier-shared",
          absl::StrCat(c.Label(), " requests ", name,
                       use == ResourceUse::kMemory
                           ? " (GPU memory without a whole device shares a GPU with other pods)"
                           : "",
                       ", but ", MayUseOnly(ctx), "; ", UseInstead(ctx.tenant))));
    }
  }
  std::vector<std::string> allowed_pools;
  for (const topology::Pool& p : ctx.policy.pools) {
    if (tier.modes.Has(p.mode)) allowed_pools.push_back(p.name);
  }
  for (const PoolSelection& s : ctx.pod.pool_selections) {
    const topology::Pool* pool = ctx.policy.FindPool(s.pool);
    if (!pool || tier.modes.Has(pool->mode)) continue;  // unknown names are the extender's call
    std::string instead = allowed_pools.empty()
                              ? "drop the selector"
                              : absl::StrCat("select ", absl::StrJoin(allowed_pools, " or "),
                                             ", or drop the selector");
    out.push_back(MakeViolation(
        "tier-shared",
        absl::StrCat("pod selects pool \"", s.pool, "\" (", topology::ModeName(pool->mode),
                     ") through ", s.how, " on ", ctx.policy.pool_label, ", but ", MayUseOnly(ctx),
                     "; ", instead)));
  }
}

void CheckFailRequestsGreaterThanOne(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.policy.fail_requests_greater_than_one) return;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (!IsSharedReplica(ClassifyPodResource(name, ctx.policy))) continue;
      if (q <= Quantity::FromUnits(1)) continue;
      out.push_back(MakeViolation(
          "fail-requests-greater-than-one",
          absl::StrCat(c.Label(), " requests ", q.ToString(), " ", name,
                       ", but a shared GPU resource allows at most 1 per container (the device "
                       "plugin would only fail the pod later at kubelet with "
                       "UnexpectedAdmissionError); request 1, or split the work across "
                       "containers")));
    }
  }
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

std::string TenantName(const PodRuleContext& ctx) {
  return absl::StrCat("tenant \"", ctx.tenant.name, "\"");
}

// Limits on what cannot change after creation: MIG profiles and shared replicas.
void CheckTenantLimits(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier || !ctx.tenant.tenant) return;
  const topology::TenantLimits& limits = ctx.tenant.tenant->limits;
  if (!limits.mig_profiles.empty()) {
    for (const ContainerView& c : ctx.pod.containers) {
      for (const auto& [name, q] : ContainerResources(c)) {
        std::string profile = MigProfileOf(name);
        if (profile.empty() || std::find(limits.mig_profiles.begin(), limits.mig_profiles.end(),
                                         profile) != limits.mig_profiles.end()) {
          continue;
        }
        out.push_back(MakeViolation(
            "tenant-limits",
            absl::StrCat(c.Label(), " requests ", name, ", but ", TenantName(ctx),
                         " may use only MIG profiles ", absl::StrJoin(limits.mig_profiles, ", "),
                         "; request one of those instead")));
      }
    }
  }
  if (limits.shared_replicas_per_pod && ctx.pod.demand.ok()) {
    int64_t replicas = 0;
    std::vector<std::string> names;
    for (const auto& [name, count] : ctx.pod.demand->devices) {
      if (!IsSharedReplica(ClassifyPodResource(name, ctx.policy))) continue;
      replicas += count;
      names.push_back(name);
    }
    if (replicas > *limits.shared_replicas_per_pod) {
      out.push_back(MakeViolation(
          "tenant-limits",
          absl::StrCat("pod requests ", replicas, " shared GPU replicas (",
                       absl::StrJoin(names, ", "), "), but ", TenantName(ctx), " allows at most ",
                       *limits.shared_replicas_per_pod,
                       " per pod; request fewer (more replicas of one GPU add no compute)")));
    }
  }
}

bool MemoryAnnotationChanged(const PodRuleContext& ctx) {
  if (!ctx.old_pod) return true;
  auto value = [&](const PodView& p) -> std::string {
    auto it = p.facts.annotations.find(ctx.policy.memory_annotation);
    return it == p.facts.annotations.end() ? "" : it->second;
  };
  return value(ctx.pod) != value(*ctx.old_pod);
}

// GPU memory per pod: the annotation may change on UPDATE, so this runs then too.
void CheckTenantMemory(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.tenant.tier || !ctx.tenant.tenant || !ctx.pod.demand.ok()) return;
  const std::optional<int64_t>& limit = ctx.tenant.tenant->limits.gpu_memory_mib_per_pod;
  if (!limit || ctx.pod.demand->memory_mib <= *limit || !MemoryAnnotationChanged(ctx)) return;
  std::vector<std::string> sources;
  for (const ContainerView& c : ctx.pod.containers) {
    for (const auto& [name, q] : ContainerResources(c)) {
      if (ctx.policy.IsMemoryResource(name) &&
          std::find(sources.begin(), sources.end(), name) == sources.end()) {
        sources.push_back(name);
      }
    }
  }
  if (ctx.pod.facts.annotations.count(ctx.policy.memory_annotation)) {
    sources.push_back(ctx.policy.memory_annotation);
  }
  out.push_back(MakeViolation(
      "tenant-limits",
      absl::StrCat("pod requests ", ctx.pod.demand->memory_mib, "Mi of GPU memory (",
                   absl::StrJoin(sources, ", "), "), but ", TenantName(ctx), " allows at most ",
                   *limit, "Mi per pod; request less, or split the work across pods")));
}

void CheckInvalidGpuRequest(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (ctx.pod.demand.ok() || !MemoryAnnotationChanged(ctx)) return;
  out.push_back(MakeViolation("invalid-gpu-request",
                              absl::StrCat(ctx.pod.demand.status().message(),
                                           "; fix the value so the scheduler can account it")));
}

constexpr PodRule kPodRules[] = {
    {"unknown-tenant", false, &CheckUnknownTenant},
    {"tier-shared", false, &CheckTierShared},
    {"fail-requests-greater-than-one", false, &CheckFailRequestsGreaterThanOne},
    {"device-access", false, &CheckDeviceAccess},
    {"tenant-limits", false, &CheckTenantLimits},
    {"tenant-limits", true, &CheckTenantMemory},
    {"invalid-gpu-request", true, &CheckInvalidGpuRequest},
};

// Warnings: advice that does not block the pod.
void AddWarnings(const PodRuleContext& ctx, std::vector<std::string>& warnings) {
  if (!ctx.tenant.tier || !ctx.pod.demand.ok() || ctx.pod.demand->memory_mib > 0) return;
  const topology::Tier& tier = *ctx.tenant.tier;
  for (const auto& [name, count] : ctx.pod.demand->devices) {
    ResourceUse use = ClassifyPodResource(name, ctx.policy);
    const bool timesliced =
        (use == ResourceUse::kShared && tier.modes.Has(SharingMode::kTimeslice)) ||
        (use == ResourceUse::kMigShared && tier.modes.Has(SharingMode::kMigShared));
    if (timesliced) {
      warnings.push_back(absl::StrCat("no memory isolation on time-sliced GPUs; set ",
                                      ctx.policy.memory_annotation,
                                      " so the scheduler keeps headroom"));
      return;
    }
  }
}

}  // namespace

std::string ContainerView::Label() const {
  switch (list) {
    case ContainerList::kInit:
      return absl::StrCat("init container \"", name, "\"");
    case ContainerList::kEphemeral:
      return absl::StrCat("ephemeral container \"", name, "\"");
    case ContainerList::kContainer:
      break;
  }
  return absl::StrCat("container \"", name, "\"");
}

bool PodView::HasGpuRequests() const {
  if (demand.ok() && !demand->empty()) return true;
  if (!demand.ok()) return true;  // an unreadable GPU request is still a GPU request
  return false;
}

ResourceUse ClassifyPodResource(absl::string_view resource, const topology::Policy& policy) {
  if (policy.IsMemoryResource(resource)) return ResourceUse::kMemory;
  if (resource == topology::kGpuResource) return ResourceUse::kWholeGpu;
  if (absl::StartsWith(resource, topology::kMigResourcePrefix)) {
    return absl::EndsWith(resource, topology::kSharedSuffix) ? ResourceUse::kMigShared
                                                             : ResourceUse::kMig;
  }
  if (resource == absl::StrCat(topology::kGpuResource, topology::kSharedSuffix) ||
      policy.IsConfiguredShared(resource)) {
    return ResourceUse::kShared;
  }
  if (absl::StartsWith(resource, topology::kNvidiaResourcePrefix)) {
    return absl::StrContains(absl::AsciiStrToLower(resource), "mps") ? ResourceUse::kMps
                                                                     : ResourceUse::kOtherGpu;
  }
  return ResourceUse::kNotGpu;
}

bool IsSharedReplica(ResourceUse use) {
  return use == ResourceUse::kMigShared || use == ResourceUse::kShared || use == ResourceUse::kMps;
}

std::string MigProfileOf(absl::string_view resource) {
  if (!absl::StartsWith(resource, topology::kMigResourcePrefix)) return "";
  absl::string_view profile = resource.substr(topology::kMigResourcePrefix.size());
  if (absl::EndsWith(profile, topology::kSharedSuffix)) {
    profile.remove_suffix(topology::kSharedSuffix.size());
  }
  return std::string(profile);
}

absl::StatusOr<PodView> ParsePodView(const JsonValue& pod, const topology::Policy& policy,
                                     absl::string_view namespace_name, absl::string_view path) {
  PodView view;
  // A pod may carry dozens of labels and annotations; the rules read one annotation.
  common::PodMetadataFilter keep;
  keep.all_labels = false;
  keep.all_annotations = false;
  keep.annotations = {policy.memory_annotation};
  ASSIGN_OR_RETURN(view.facts, common::ParsePod(pod, path, keep));
  if (view.facts.namespace_name.empty()) view.facts.namespace_name = std::string(namespace_name);
  const JsonValue* spec = FindNonNull(pod, "spec");  // ParsePod required it
  std::string spec_path = common::JoinPath(path, "spec");
  const std::pair<absl::string_view, ContainerList> lists[] = {
      {"containers", ContainerList::kContainer},
      {"initContainers", ContainerList::kInit},
      {"ephemeralContainers", ContainerList::kEphemeral}};
  for (const auto& [key, list] : lists) {
    ASSIGN_OR_RETURN(const JsonValue* array, common::OptionalArray(*spec, key, spec_path));
    if (!array) continue;
    for (rapidjson::SizeType i = 0; i < array->Size(); ++i) {
      ASSIGN_OR_RETURN(ContainerView c,
                       ParseContainer((*array)[i], list,
                                      common::IndexPath(common::JoinPath(spec_path, key), i)));
      view.containers.push_back(std::move(c));
    }
  }
  if (const JsonValue* volumes = FindNonNull(*spec, "volumes"); volumes && volumes->IsArray()) {
    for (const JsonValue& v : volumes->GetArray()) {
      const JsonValue* host_path = FindNonNull(v, "hostPath");
      if (!host_path) continue;
      view.host_paths.push_back(
          {std::string(StringOr(v, "name")), std::string(StringOr(*host_path, "path"))});
    }
  }
  const JsonValue* host_ipc = FindNonNull(*spec, "hostIPC");
  view.host_ipc = host_ipc && host_ipc->IsBool() && host_ipc->GetBool();
  ParsePoolSelections(*spec, policy, view);
  view.demand = topology::ComputeDemand(view.facts, policy);
  return view;
}

absl::Span<const PodRule> PodRules() { return kPodRules; }

PodValidation ValidatePod(const PodView& pod, const PodView* old_pod,
                          const topology::Policy& policy, const topology::TenantRef& tenant,
                          absl::string_view namespace_name, bool ephemeral_only) {
  PodValidation result;
  if (ephemeral_only) {
    // Only the ephemeral containers are new; everything else was checked at creation and is
    // immutable. They carry no resources, so only device access can trip.
    PodView ephemeral;
    ephemeral.facts.namespace_name = pod.facts.namespace_name;
    ephemeral.facts.name = pod.facts.name;
    for (const ContainerView& c : pod.containers) {
      if (c.list == ContainerList::kEphemeral) ephemeral.containers.push_back(c);
    }
    PodRuleContext ctx{ephemeral, nullptr, policy, tenant, namespace_name};
    for (const PodRule& rule : kPodRules) rule.check(ctx, result.violations);
    return result;
  }
  PodRuleContext ctx{pod, old_pod, policy, tenant, namespace_name};
  for (const PodRule& rule : kPodRules) {
    if (old_pod && !rule.mutable_inputs) continue;
    rule.check(ctx, result.violations);
  }
  if (!old_pod) AddWarnings(ctx, result.warnings);
  return result;
}

}  // namespace webhook
