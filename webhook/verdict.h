// What a webhook rule produces, and the few text helpers every rule shares so that denials read
// the same everywhere: one line, the rule id in brackets first, then what was asked, the limit,
// and what to do instead.
#ifndef GPU_TENANCY_WEBHOOK_VERDICT_H_
#define GPU_TENANCY_WEBHOOK_VERDICT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/policy.h"

namespace webhook {

struct Violation {
  std::string rule;     // "tier-shared"
  std::string message;  // "[tier-shared] container \"engine\" requests ..."
};

// Builds a violation; the message gets the "[rule] " prefix and is forced onto one line.
Violation MakeViolation(absl::string_view rule, absl::string_view text);

// The denial text: the first violation, plus " (and N more)" when there are several.
// Empty for no violations.
std::string DenialMessage(const std::vector<Violation>& violations);

// Control characters (newlines from a hand-written manifest, say) become spaces, so a message
// is always one line in kubectl and in events.
std::string OneLine(absl::string_view text);

// `tenant "acme" (tier untrusted)`, or for an unknown tenant admitted with the default tier
// `namespace "x" (no tenant, tier default)`.
std::string TenantPhrase(const topology::TenantRef& tenant, absl::string_view namespace_name);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_VERDICT_H_
