#include "topology/policy.h"

#include <algorithm>
#include <array>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "topology/fair_share.h"

namespace topology {
namespace {

constexpr std::array<std::pair<SharingMode, absl::string_view>, 5> kModeNames = {{
    {SharingMode::kExclusive, "exclusive"},
    {SharingMode::kMig, "mig"},
    {SharingMode::kMigShared, "mig-shared"},
    {SharingMode::kMps, "mps"},
    {SharingMode::kTimeslice, "timeslice"},
}};

bool SelectorMatches(const Labels& selector, const Labels& labels) {
  if (selector.empty()) return false;
  for (const auto& [key, value] : selector) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

}  // namespace

absl::string_view ModeName(SharingMode mode) {
  for (const auto& [m, name] : kModeNames) {
    if (m == mode) return name;
  }
  return "unknown";
}

std::optional<SharingMode> ParseMode(absl::string_view name) {
  for (const auto& [m, text] : kModeNames) {
    if (text == name) return m;
  }
  return std::nullopt;
}

std::string ModeSet::ToString() const {
  std::vector<absl::string_view> names;
  for (const auto& [m, name] : kModeNames) {
    if (Has(m)) names.push_back(name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

bool Policy::FairSharing() const {
  return std::any_of(tenants.begin(), tenants.end(),
                     [](const Tenant& t) { return t.fair_share.has_value(); });
}

const TenantGroup* Policy::FindGroup(absl::string_view name) const {
  for (const TenantGroup& g : groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const Tier* Policy::FindTier(absl::string_view name) const {
  for (const Tier& t : tiers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const Pool* Policy::FindPool(absl::string_view name) const {
  for (const Pool& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const Tenant* Policy::FindTenant(absl::string_view name) const {
  for (const Tenant& t : tenants) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool Policy::IsMemoryResource(absl::string_view resource) const {
  return std::find(memory_resources.begin(), memory_resources.end(), resource) !=
         memory_resources.end();
}

bool Policy::IsConfiguredShared(absl::string_view resource) const {
  return std::find(shared_resources.begin(), shared_resources.end(), resource) !=
         shared_resources.end();
}

bool MatchesPattern(absl::string_view pattern, absl::string_view text) {
  const size_t star = pattern.find('*');
  if (star == absl::string_view::npos) return pattern == text;
  const absl::string_view prefix = pattern.substr(0, star);
  const absl::string_view suffix = pattern.substr(star + 1);
  return text.size() >= prefix.size() + suffix.size() && absl::StartsWith(text, prefix) &&
         absl::EndsWith(text, suffix);
}

namespace {

bool MatchesAny(const std::vector<std::string>& patterns, absl::string_view text) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return MatchesPattern(p, text); });
}

}  // namespace

bool AdmissionAllowList::IsSchedulerUser(absl::string_view username) const {
  return !username.empty() && std::find(scheduler_users.begin(), scheduler_users.end(), username) !=
                                  scheduler_users.end();
}

DeviceClassKind AdmissionAllowList::ClassifyDeviceClass(absl::string_view device_class) const {
  if (MatchesAny(gpu_device_classes, device_class)) return DeviceClassKind::kGpu;
  if (MatchesAny(other_device_classes, device_class)) return DeviceClassKind::kOther;
  return DeviceClassKind::kUnknown;
}

bool AdmissionAllowList::IsOtherResource(absl::string_view resource) const {
  return MatchesAny(other_resources, resource);
}

absl::Status Policy::Validate() const {
  // Messages name the YAML path of the offending entry ("tenants[2].tier"), as the loader's own
  // errors do, so a reader can find it in the file.
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < tiers.size(); ++i) {
    const Tier& t = tiers[i];
    if (t.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("tiers[", i, "].name: empty"));
    }
    if (!seen.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tiers[", i, "].name: duplicate tier \"", t.name, "\""));
    }
  }
  if (unknown_tenant_tier && !FindTier(*unknown_tenant_tier)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknownTenant: tier \"", *unknown_tenant_tier, "\" is not defined"));
  }
  seen.clear();
  std::map<std::string, std::string, std::less<>> namespace_owner;
  for (size_t i = 0; i < tenants.size(); ++i) {
    const Tenant& t = tenants[i];
    const std::string path = absl::StrCat("tenants[", i, "]");
    if (t.name.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ".name: empty"));
    if (!seen.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".name: duplicate tenant \"", t.name, "\""));
    }
    if (!FindTier(t.tier)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".tier: tier \"", t.tier, "\" of tenant \"", t.name, "\" is not defined"));
    }
    if (t.namespaces.empty() && t.namespace_selector.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tenant \"", t.name, "\" needs namespaces or namespaceSelector"));
    }
    for (const std::string& ns : t.namespaces) {
      auto [it, inserted] = namespace_owner.emplace(ns, t.name);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ".namespaces: \"", ns, "\" already belongs to tenant \"", it->second, "\""));
      }
    }
  }
  seen.clear();
  for (size_t i = 0; i < pools.size(); ++i) {
    const Pool& p = pools[i];
    if (p.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("pools[", i, "].name: empty"));
    }
    if (!seen.insert(p.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pools[", i, "].name: duplicate pool \"", p.name, "\""));
    }
  }
  if (canary && canary->reserve < 0) {
    return absl::InvalidArgumentError("canary.reserve: must not be negative");
  }
  for (size_t i = 0; i < preemption.across_tenants.size(); ++i) {
    const CrossTenantPreemption& rule = preemption.across_tenants[i];
    const std::string path = absl::StrCat("preemption.acrossTenants[", i, "]");
    if (rule.victims.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".victims: name at least one tenant or tier"));
    }
    for (const auto& [side, match] :
         {std::pair<absl::string_view, const TenantMatch*>{"preemptors", &rule.preemptors},
          {"victims", &rule.victims}}) {
      for (const std::string& name : match->tenants) {
        if (!FindTenant(name)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ".", side, ".tenants: tenant \"", name, "\" is not defined"));
        }
      }
      for (const std::string& name : match->tiers) {
        if (!FindTier(name)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ".", side, ".tiers: tier \"", name, "\" is not defined"));
        }
      }
    }
  }
  RETURN_IF_ERROR(ValidateFairShare(*this));
  for (const auto& [key, patterns] :
       {std::pair<absl::string_view, const std::vector<std::string>*>{
            "admission.deviceClasses.gpu", &admission.gpu_device_classes},
        {"admission.deviceClasses.other", &admission.other_device_classes},
        {"admission.otherResources", &admission.other_resources}}) {
    for (size_t i = 0; i < patterns->size(); ++i) {
      const std::string& p = (*patterns)[i];
      if (p.empty() || std::count(p.begin(), p.end(), '*') > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, "[", i, "]: \"", p, "\" must be a name, or a pattern with one '*'"));
      }
    }
  }
  for (const std::string& gpu : admission.gpu_device_classes) {
    for (const std::string& other : admission.other_device_classes) {
      if (gpu == other) {
        return absl::InvalidArgumentError(
            absl::StrCat("admission.deviceClasses: \"", gpu, "\" is listed as both gpu and other"));
      }
    }
  }
  return absl::OkStatus();
}

Policy Policy::AllowAll() {
  Policy policy;
  Tier tier;
  tier.name = "default";
  for (const auto& [mode, name] : kModeNames) tier.modes.Add(mode);
  policy.tiers.push_back(std::move(tier));
  policy.unknown_tenant_tier = "default";
  return policy;
}

TenantRef ResolveTenant(const Policy& policy, absl::string_view namespace_name,
                        const Labels& namespace_labels) {
  const Tenant* found = nullptr;
  for (const Tenant& t : policy.tenants) {
    if (std::find(t.namespaces.begin(), t.namespaces.end(), namespace_name) != t.namespaces.end()) {
      found = &t;
      break;
    }
  }
  if (!found) {
    for (const Tenant& t : policy.tenants) {
      if (SelectorMatches(t.namespace_selector, namespace_labels)) {
        found = &t;
        break;
      }
    }
  }
  return found ? TenantRefOf(policy, *found) : UnknownTenantRef(policy);
}

TenantRef TenantRefOf(const Policy& policy, const Tenant& tenant) {
  return TenantRef{tenant.name, &tenant, policy.FindTier(tenant.tier)};
}

TenantRef UnknownTenantRef(const Policy& policy) {
  TenantRef ref;
  ref.name = "unknown";
  if (policy.unknown_tenant_tier) ref.tier = policy.FindTier(*policy.unknown_tenant_tier);
  return ref;
}

}  // namespace topology
