#include "webhook/device_class_rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/dra/class_offer.h"

namespace webhook {
namespace {

using topology::SharingMode;

std::string Advice(const ClassUse& use) {
  if (!use.instead.empty()) return use.instead;
  return absl::StrCat("ask for a ResourceClaim of class ", use.device_class,
                      " instead (the tenant's limits are written into it as selectors)");
}

constexpr absl::string_view kNoSelector =
    "an extended resource carries no selector, so every device its class selects must be one "
    "the tenant may use";

}  // namespace

void CheckClassOffer(const ClassUse& use, const topology::DraState* dra,
                     const topology::TenantRef& tenant, absl::string_view namespace_name,
                     std::vector<Violation>& violations) {
  if (!tenant.tier) return;  // unknown-tenant has judged it
  topology::DraClassOffer offer;
  if (dra) offer = topology::OfferOfClass(*dra, use.device_class);
  bool profiles_known = offer.devices > 0;
  if (offer.devices == 0) {
    const absl::string_view type = topology::WellKnownClassDeviceType(use.device_class);
    if (type.empty()) {
      violations.push_back(MakeViolation(
          kDraExtendedRule,
          absl::StrCat(use.subject, ", but device class ", use.device_class,
                       offer.class_exists ? " selects no device the cluster publishes now"
                                          : " does not exist",
                       ", so what it would hand out cannot be checked; ", Advice(use))));
      return;
    }
    offer.modes.Add(type == "mig" ? SharingMode::kMig : SharingMode::kExclusive);
  }
  const topology::Tier& tier = *tenant.tier;
  for (SharingMode mode : {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMigShared,
                           SharingMode::kMps, SharingMode::kTimeslice}) {
    if (!offer.modes.Has(mode) || tier.modes.Has(mode)) continue;
    std::string example;
    for (const auto& [m, id] : offer.examples) {
      if (m == mode) example = absl::StrCat(" such as ", id);
    }
    violations.push_back(MakeViolation(
        kDraExtendedRule,
        absl::StrCat(use.subject, ", but device class ", use.device_class, " selects ",
                     topology::DraModeWords(mode), example, " (", topology::ModeName(mode),
                     "), and ", TenantPhrase(tenant, namespace_name), " may use only ",
                     tier.modes.ToString(), "; ", kNoSelector, ": ", Advice(use))));
    return;
  }
  if (!tenant.tenant || tenant.tenant->limits.mig_profiles.empty()) return;
  if (!offer.modes.Has(SharingMode::kMig) && !offer.modes.Has(SharingMode::kMigShared)) return;
  const std::vector<std::string>& allowed = tenant.tenant->limits.mig_profiles;
  std::vector<std::string> outside;
  for (const std::string& p : offer.mig_profiles) {
    if (std::find(allowed.begin(), allowed.end(), p) == allowed.end()) outside.push_back(p);
  }
  if (profiles_known && outside.empty()) return;
  violations.push_back(MakeViolation(
      kDraExtendedRule,
      absl::StrCat(use.subject, ", but device class ", use.device_class, " selects ",
                   profiles_known ? absl::StrCat("MIG profile ", absl::StrJoin(outside, ", "))
                                  : std::string("MIG devices of any profile"),
                   ", and ", TenantPhrase(tenant, namespace_name), " may use only ",
                   absl::StrJoin(allowed, ", "), "; ", kNoSelector, ": ", Advice(use))));
}

bool DeniesUnknownDemand(const topology::TenantRef& tenant) {
  return tenant.tier && tenant.tier->DeniesUnknownDemand();
}

Violation UnknownDemandViolation(absl::string_view what, absl::string_view why,
                                 const topology::TenantRef& tenant,
                                 absl::string_view namespace_name) {
  return MakeViolation(
      kUnknownDemandRule,
      absl::StrCat(what, ", but ", why, ", and ", TenantPhrase(tenant, namespace_name),
                   " gets no device gpu-tenancy cannot read; ask the GPU platform team to list "
                   "it in the policy's admission section"));
}

std::string UnknownDemandWarning(absl::string_view what, absl::string_view why) {
  return absl::StrCat(what, ": ", why,
                      "; gpu-tenancy does not check what it hands out (the policy's admission "
                      "section lists what it reads)");
}

}  // namespace webhook
