#include "webhook/verdict.h"

#include "absl/strings/str_cat.h"

namespace webhook {

std::string OneLine(absl::string_view text) {
  std::string out(text.data(), text.size());
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

Violation MakeViolation(absl::string_view rule, absl::string_view text) {
  return Violation{std::string(rule), OneLine(absl::StrCat("[", rule, "] ", text))};
}

std::string DenialMessage(const std::vector<Violation>& violations) {
  if (violations.empty()) return "";
  if (violations.size() == 1) return violations.front().message;
  return absl::StrCat(violations.front().message, " (and ", violations.size() - 1, " more)");
}

std::string TenantPhrase(const topology::TenantRef& tenant, absl::string_view namespace_name) {
  absl::string_view tier = tenant.tier ? absl::string_view(tenant.tier->name) : "none";
  if (tenant.tenant) return absl::StrCat("tenant \"", tenant.name, "\" (tier ", tier, ")");
  return absl::StrCat("namespace \"", namespace_name, "\" (no tenant, tier ", tier, ")");
}

}  // namespace webhook
