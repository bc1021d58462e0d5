#include "webhook/claim_rules.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "webhook/claim_rule_checks.h"
#include "webhook/claim_selectors.h"
#include "webhook/device_class_rules.h"
#include "wire/dra_codec.h"
#include "wire/k8s_codec.h"

namespace webhook {
namespace {

using common::AsStringView;
using common::FindNonNull;
using common::JsonValue;
using common::StringOr;
using topology::SharingMode;

constexpr absl::string_view kPercentKey = "defaultActiveThreadPercentage";
constexpr absl::string_view kPinnedKey = "defaultPinnedDeviceMemoryLimit";
constexpr absl::string_view kPerDeviceKey = "defaultPerDevicePinnedMemoryLimit";

void NoteRequest(const JsonValue& holder, std::string pointer, std::string name,
                 const topology::AdmissionAllowList& allow, ClaimView& view) {
  absl::string_view device_class = StringOr(holder, "deviceClassName");
  if (device_class.empty()) return;
  const topology::DeviceClassKind class_kind = allow.ClassifyDeviceClass(device_class);
  if (view.gpu_use.empty() && class_kind == topology::DeviceClassKind::kGpu) {
    view.gpu_use = absl::StrCat("device class ", device_class);
  }
  view.requests.push_back(
      {std::move(name), std::string(device_class), &holder, std::move(pointer)});
  ClaimRequest& request = view.requests.back();
  // Read on every holder, subrequests too: the API server refuses adminAccess there today, and
  // reading it costs nothing if that changes.
  const JsonValue* admin = FindNonNull(holder, "adminAccess");
  request.admin_access = admin && admin->IsBool() && admin->GetBool();
  request.all_devices = StringOr(holder, "allocationMode") == "All";
  request.class_kind = class_kind;
  if (const JsonValue* capacity = FindNonNull(holder, "capacity")) {
    const JsonValue* asked = FindNonNull(*capacity, "requests");
    request.asks_capacity = asked && asked->IsObject() && asked->MemberCount() > 0;
  }
  if (const JsonValue* count = FindNonNull(holder, "count"); count && count->IsInt64()) {
    request.count = count->GetInt64();
  }
}

SharingMode ModeOf(const SharingConfig& c) {
  if (c.strategy == "MPS") return SharingMode::kMps;
  return c.parameters_kind == "MigDeviceConfig" ? SharingMode::kMigShared : SharingMode::kTimeslice;
}

std::string Subject(const ClaimView& claim, const SharingConfig& c) {
  return absl::StrCat(claim.kind, " \"", claim.name, "\" config[", c.index, "] (",
                      c.parameters_kind, ")");
}

std::string MiB(int64_t mib) { return absl::StrCat(mib, "Mi"); }

// Reads a quantity-valued member as MiB (rounded up); nullopt with `error` ("<what>: ...") set
// when unreadable.
std::optional<int64_t> QuantityMiB(const JsonValue& value, absl::string_view what,
                                   std::string& error) {
  absl::StatusOr<topology::Quantity> q = wire::ParseQuantityValue(value, what);
  if (!q.ok() || q->IsNegative()) {
    error =
        q.ok() ? absl::StrCat(what, ": must not be negative") : std::string(q.status().message());
    return std::nullopt;
  }
  return q->ValueMiB();
}

void CheckMps(const ClaimView& claim, const SharingConfig& c, const topology::TenantRef& tenant,
              std::vector<Violation>& violations, std::vector<std::string>& warnings) {
  const topology::MpsLimits limits =
      tenant.tenant ? tenant.tenant->limits.mps : topology::MpsLimits{};
  const JsonValue* mps = c.mps_config && c.mps_config->IsObject() ? c.mps_config : nullptr;
  const std::string who = absl::StrCat("tenant \"", tenant.name, "\"");

  const JsonValue* percent = mps ? FindNonNull(*mps, kPercentKey) : nullptr;
  if (percent) {
    if (!percent->IsInt64()) {
      violations.push_back(MakeViolation(
          "claim-mps-limits", absl::StrCat(Subject(claim, c), " sets ", kPercentKey,
                                           " to a value that is not a whole number; set a "
                                           "percentage from 1 to 100")));
    } else if (limits.max_active_thread_percentage &&
               percent->GetInt64() > *limits.max_active_thread_percentage) {
      violations.push_back(MakeViolation(
          "claim-mps-limits",
          absl::StrCat(Subject(claim, c), " sets ", kPercentKey, " ", percent->GetInt64(), ", but ",
                       who, " allows at most ", *limits.max_active_thread_percentage,
                       "; set it to ", *limits.max_active_thread_percentage, " or less")));
    }
  } else if (limits.max_active_thread_percentage) {
    violations.push_back(MakeViolation(
        "claim-mps-limits",
        absl::StrCat(Subject(claim, c), " sets no ", kPercentKey, ", but ", who, " caps it at ",
                     *limits.max_active_thread_percentage, "; set ", kPercentKey, ": ",
                     *limits.max_active_thread_percentage, " or less")));
  } else {
    warnings.push_back(absl::StrCat("MPS claim relies on the driver default for ", kPercentKey,
                                    ": every client may use all SMs"));
  }

  const JsonValue* pinned = mps ? FindNonNull(*mps, kPinnedKey) : nullptr;
  if (pinned) {
    std::string error;
    std::optional<int64_t> mib = QuantityMiB(*pinned, kPinnedKey, error);
    if (!mib) {
      violations.push_back(MakeViolation(
          "claim-mps-limits",
          absl::StrCat(Subject(claim, c), " ", error, "; write a quantity such as 8Gi")));
    } else if (limits.max_pinned_memory_mib && *mib > *limits.max_pinned_memory_mib) {
      violations.push_back(MakeViolation(
          "claim-mps-limits",
          absl::StrCat(Subject(claim, c), " sets ", kPinnedKey, " ", MiB(*mib), ", but ", who,
                       " allows at most ", MiB(*limits.max_pinned_memory_mib), "; set it to ",
                       MiB(*limits.max_pinned_memory_mib), " or less")));
    }
  } else if (limits.max_pinned_memory_mib) {
    violations.push_back(MakeViolation(
        "claim-mps-limits",
        absl::StrCat(Subject(claim, c), " sets no ", kPinnedKey, ", but ", who, " caps it at ",
                     MiB(*limits.max_pinned_memory_mib), "; set ", kPinnedKey, ": ",
                     MiB(*limits.max_pinned_memory_mib), " or less")));
  } else {
    warnings.push_back(absl::StrCat("MPS claim relies on the driver default for ", kPinnedKey,
                                    ": no cap on a client's GPU memory"));
  }

  const JsonValue* per_device = mps ? FindNonNull(*mps, kPerDeviceKey) : nullptr;
  if (per_device && per_device->IsObject()) {
    for (auto it = per_device->MemberBegin(); it != per_device->MemberEnd(); ++it) {
      std::string error;
      absl::string_view device = AsStringView(it->name);
      std::optional<int64_t> mib =
          QuantityMiB(it->value, absl::StrCat(kPerDeviceKey, "[", device, "]"), error);
      if (!mib) {
        violations.push_back(MakeViolation(
            "claim-mps-limits",
            absl::StrCat(Subject(claim, c), " ", error, "; write a quantity such as 8Gi")));
      } else if (limits.max_pinned_memory_mib && *mib > *limits.max_pinned_memory_mib) {
        violations.push_back(MakeViolation(
            "claim-mps-limits",
            absl::StrCat(Subject(claim, c), " sets ", kPerDeviceKey, "[", device, "] ", MiB(*mib),
                         ", but ", who, " allows at most ", MiB(*limits.max_pinned_memory_mib),
                         "; set it to ", MiB(*limits.max_pinned_memory_mib), " or less")));
      }
    }
  }
}

void AddUnique(std::vector<std::string>& list, std::string text) {
  if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(std::move(text));
}

}  // namespace

ClaimView ParseClaimView(const JsonValue& object, absl::string_view kind,
                         const topology::AdmissionAllowList& allow) {
  ClaimView view;
  view.kind = std::string(kind);
  if (const JsonValue* meta = FindNonNull(object, "metadata")) {
    view.name = std::string(StringOr(*meta, "name", StringOr(*meta, "generateName")));
    if (const JsonValue* annotations = FindNonNull(*meta, "annotations")) {
      view.extended_resource_annotation =
          StringOr(*annotations, wire::kExtendedResourceClaimAnnotation) == "true";
    }
  }
  const JsonValue* spec = FindNonNull(object, "spec");
  std::string spec_pointer = "/spec";
  if (spec && kind == "ResourceClaimTemplate") {
    spec = FindNonNull(*spec, "spec");
    spec_pointer = "/spec/spec";
  }
  if (!spec || !spec->IsObject()) return view;

  // v1alpha2: a resource class instead of device requests.
  absl::string_view resource_class = StringOr(*spec, "resourceClassName");
  if (absl::StrContains(absl::AsciiStrToLower(resource_class), "nvidia")) {
    view.gpu_use = absl::StrCat("resource class ", resource_class);
  }
  const JsonValue* devices = FindNonNull(*spec, "devices");
  if (!devices || !devices->IsObject()) return view;
  if (const JsonValue* requests = FindNonNull(*devices, "requests");
      requests && requests->IsArray()) {
    const std::string requests_pointer = absl::StrCat(spec_pointer, "/devices/requests");
    for (rapidjson::SizeType i = 0; i < requests->Size(); ++i) {
      const JsonValue& r = (*requests)[i];
      if (!r.IsObject()) continue;
      const std::string pointer = PointerJoin(requests_pointer, i);
      const std::string name(StringOr(r, "name"));
      NoteRequest(r, pointer, name, allow, view);  // v1beta1
      if (const JsonValue* exactly = FindNonNull(r, "exactly"); exactly && exactly->IsObject()) {
        NoteRequest(*exactly, absl::StrCat(pointer, "/exactly"), name, allow, view);  // v1, v1beta2
      }
      if (const JsonValue* first = FindNonNull(r, "firstAvailable"); first && first->IsArray()) {
        for (rapidjson::SizeType j = 0; j < first->Size(); ++j) {
          const JsonValue& sub = (*first)[j];
          if (!sub.IsObject()) continue;
          NoteRequest(sub, PointerJoin(absl::StrCat(pointer, "/firstAvailable"), j),
                      absl::StrCat(name, "/", StringOr(sub, "name")), allow, view);
        }
      }
    }
  }
  const JsonValue* configs = FindNonNull(*devices, "config");
  if (!configs || !configs->IsArray()) return view;
  for (rapidjson::SizeType i = 0; i < configs->Size(); ++i) {
    const JsonValue* opaque = FindNonNull((*configs)[i], "opaque");
    if (!opaque || StringOr(*opaque, "driver") != kNvidiaDraDriver) continue;
    if (view.gpu_use.empty()) view.gpu_use = absl::StrCat("driver ", kNvidiaDraDriver);
    const JsonValue* parameters = FindNonNull(*opaque, "parameters");
    const JsonValue* sharing = parameters ? FindNonNull(*parameters, "sharing") : nullptr;
    if (!sharing) continue;
    absl::string_view strategy = StringOr(*sharing, "strategy");
    if (strategy != "TimeSlicing" && strategy != "MPS") continue;
    SharingConfig c;
    c.index = i;
    c.parameters_kind = std::string(StringOr(*parameters, "kind"));
    c.strategy = std::string(strategy);
    c.mps_config = FindNonNull(*sharing, "mpsConfig");
    c.sharing_pointer =
        absl::StrCat(spec_pointer, "/devices/config/", i, "/opaque/parameters/sharing");
    view.sharing.push_back(std::move(c));
  }
  return view;
}

namespace claim_rules_internal {
namespace {

std::string RequestSubject(const ClaimView& claim, const ClaimRequest& r) {
  return absl::StrCat(claim.kind, " \"", claim.name, "\" request \"", r.name, "\"");
}

}  // namespace

void CheckUnknownTenant(const ClaimRuleContext& ctx, Findings& out) {
  if (ctx.tenant.tier) return;
  const ClaimView& claim = ctx.claim;
  std::string use = claim.gpu_use;
  for (const ClaimRequest& r : claim.requests) {
    if (use.empty() && r.class_kind == topology::DeviceClassKind::kUnknown) {
      use = absl::StrCat("device class ", r.device_class, " (which the policy does not map)");
    }
  }
  if (use.empty()) return;
  out.violations.push_back(MakeViolation(
      "unknown-tenant",
      absl::StrCat("namespace \"", ctx.namespace_name,
                   "\" belongs to no tenant and the policy denies GPUs to unknown tenants, but ",
                   claim.kind, " \"", claim.name, "\" uses ", use,
                   "; ask the GPU platform team to add the namespace to a tenant")));
}

void CheckLiterals(const ClaimRuleContext& ctx, Findings& out) {
  std::vector<Violation> found = CheckClaimLiterals(ctx.claim, ctx.tenant, ctx.namespace_name);
  out.violations.insert(out.violations.end(), found.begin(), found.end());
}

void CheckAdminAccess(const ClaimRuleContext& ctx, Findings& out) {
  if (!ctx.tenant.tier) return;
  CheckClaimDeviceAccess(ctx.claim, ctx.tenant, ctx.namespace_name, out.violations);
}

void CheckUnknownDemand(const ClaimRuleContext& ctx, Findings& out) {
  if (!ctx.tenant.tier) return;
  constexpr absl::string_view kWhy =
      "the policy maps no such device class (admission.deviceClasses)";
  for (const ClaimRequest& r : ctx.claim.requests) {
    if (r.class_kind != topology::DeviceClassKind::kUnknown) continue;
    const std::string what =
        absl::StrCat(RequestSubject(ctx.claim, r), " asks for device class ", r.device_class);
    if (DeniesUnknownDemand(ctx.tenant)) {
      out.violations.push_back(UnknownDemandViolation(what, kWhy, ctx.tenant, ctx.namespace_name));
    } else {
      out.warnings.push_back(UnknownDemandWarning(what, kWhy));
    }
  }
}

void CheckSchedulersClaim(const ClaimRuleContext& ctx, Findings& out) {
  // Made by kube-scheduler for a pod's extended resource: no selector of the tenant's is in it,
  // so the class itself is judged.
  if (!ctx.tenant.tier || !ctx.claim.extended_resource_claim) return;
  for (const ClaimRequest& r : ctx.claim.requests) {
    if (r.class_kind != topology::DeviceClassKind::kGpu) continue;
    CheckClassOffer({absl::StrCat(RequestSubject(ctx.claim, r),
                                  ", made by kube-scheduler for a pod's extended resource, asks "
                                  "for device class ",
                                  r.device_class),
                     r.device_class, ""},
                    ctx.dra, ctx.tenant, ctx.namespace_name, out.violations);
  }
}

void CheckSharedCapacity(const ClaimRuleContext& ctx, Findings& out) {
  if (!ctx.tenant.tier || ctx.tenant.tier->modes.HasShared()) return;
  for (const ClaimRequest& r : ctx.claim.requests) {
    if (!r.asks_capacity || r.class_kind != topology::DeviceClassKind::kGpu) continue;
    out.violations.push_back(MakeViolation(
        "claim-shared-capacity",
        absl::StrCat(RequestSubject(ctx.claim, r),
                     " asks for capacity.requests, a share of a device other claims may hold at "
                     "the same time (one fault domain and one memory heap), but ",
                     TenantPhrase(ctx.tenant, ctx.namespace_name), " may use only ",
                     ctx.tenant.tier->modes.ToString(),
                     "; remove capacity.requests to get a dedicated device")));
  }
}

void CheckSharing(const ClaimRuleContext& ctx, Findings& out) {
  if (!ctx.tenant.tier) return;
  const ClaimView& claim = ctx.claim;
  const topology::TenantRef& tenant = ctx.tenant;
  for (const SharingConfig& c : claim.sharing) {
    if (!tenant.tier->modes.Has(ModeOf(c))) {
      out.violations.push_back(MakeViolation(
          "claim-sharing",
          absl::StrCat(
              Subject(claim, c), " asks for ", c.strategy, " sharing, but ",
              TenantPhrase(tenant, ctx.namespace_name), " may use only ",
              tenant.tier->modes.ToString(),
              "; remove the sharing settings to get a dedicated device",
              tenant.tier->modes.Has(SharingMode::kMig) ? ", or claim a MIG device" : "")));
      continue;
    }
    if (c.strategy == "MPS") {
      std::vector<std::string> warnings;
      CheckMps(claim, c, tenant, out.violations, warnings);
      for (std::string& w : warnings) AddUnique(out.warnings, std::move(w));
    }
  }
}

}  // namespace claim_rules_internal

void MutateClaim(const JsonValue& object, const ClaimView& claim, const topology::TenantRef& tenant,
                 const TenantSelectorPlan* selectors, const topology::DraDeviceSet* devices,
                 JsonPatch& patch, std::vector<std::string>& changed,
                 std::vector<std::string>& warnings) {
  // Only claims for NVIDIA devices: the webhook's matchConditions send no others.
  if (!tenant.tier || claim.gpu_use.empty()) return;
  const JsonValue* metadata = FindNonNull(object, "metadata");
  if (!metadata || !metadata->IsObject()) return;
  size_t before = patch.size();
  EnsureMapEntries(*metadata, "/metadata", "labels",
                   {{std::string(topology::kTenantLabel), tenant.name},
                    {std::string(topology::kTierLabel), tenant.tier->name}},
                   patch);
  if (patch.size() != before) changed.push_back("labels");
  if (!selectors) return;  // an UPDATE: a claim's spec is immutable
  if (InjectTenantSelectors(object, claim, *selectors, devices, patch)) {
    changed.push_back("selectors");
  }
  if (!tenant.tenant || !tenant.tier->modes.Has(SharingMode::kMps)) return;

  const topology::MpsLimits& limits = tenant.tenant->limits.mps;
  before = patch.size();
  auto& alloc = patch.allocator();
  for (const SharingConfig& c : claim.sharing) {
    if (c.strategy != "MPS") continue;
    if (c.mps_config && !c.mps_config->IsObject()) continue;  // not ours to repair
    const JsonValue* mps = c.mps_config;
    const bool need_percent =
        limits.max_active_thread_percentage && !(mps && FindNonNull(*mps, kPercentKey));
    const bool need_pinned =
        limits.max_pinned_memory_mib && !(mps && FindNonNull(*mps, kPinnedKey));
    if (!need_percent && !need_pinned) continue;
    const std::string mps_pointer = absl::StrCat(c.sharing_pointer, "/mpsConfig");
    rapidjson::Value percent(need_percent ? *limits.max_active_thread_percentage : 0);
    std::string pinned_text = need_pinned ? MiB(*limits.max_pinned_memory_mib) : "";
    rapidjson::Value pinned(pinned_text.data(),
                            static_cast<rapidjson::SizeType>(pinned_text.size()), alloc);
    if (!mps) {
      rapidjson::Value whole(rapidjson::kObjectType);
      if (need_percent)
        whole.AddMember(rapidjson::StringRef(kPercentKey.data(), kPercentKey.size()), percent,
                        alloc);
      if (need_pinned)
        whole.AddMember(rapidjson::StringRef(kPinnedKey.data(), kPinnedKey.size()), pinned, alloc);
      patch.Add(mps_pointer, whole);
    } else {
      if (need_percent) patch.Add(PointerJoin(mps_pointer, kPercentKey), percent);
      if (need_pinned) patch.Add(PointerJoin(mps_pointer, kPinnedKey), pinned);
    }
    const std::string who = absl::StrCat("the limit of tenant \"", tenant.name, "\"");
    if (need_percent) {
      AddUnique(warnings, absl::StrCat("MPS claim had no ", kPercentKey, "; set to ",
                                       *limits.max_active_thread_percentage, ", ", who));
    }
    if (need_pinned) {
      AddUnique(warnings,
                absl::StrCat("MPS claim had no ", kPinnedKey, "; set to ", pinned_text, ", ", who));
    }
  }
  if (patch.size() != before) changed.push_back("mps-limits");
}

}  // namespace webhook
