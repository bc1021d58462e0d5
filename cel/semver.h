// Semantic versions (semver 2.0.0) as DRA `version` attributes and CEL's `semver()` read them:
// strict MAJOR.MINOR.PATCH with numeric parts compared as numbers, an optional pre-release
// that sorts before the release, and build metadata that never affects ordering.
//
//   std::optional<Semver> a = Semver::Parse("9.0.0"), b = Semver::Parse("9.0.0-rc.1");
//   Semver::Compare(*a, *b);   // 1: a release is newer than its pre-releases
#ifndef GPU_TENANCY_CEL_SEMVER_H_
#define GPU_TENANCY_CEL_SEMVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cel {

struct Semver {
  uint64_t major = 0, minor = 0, patch = 0;
  std::vector<std::string> pre_release;  // dot-separated identifiers, e.g. {"rc", "1"}
  std::string build;                     // after '+', kept for printing only

  // nullopt unless `text` is a semver 2.0.0 version: no leading "v", three numeric parts
  // without leading zeros, non-empty [0-9A-Za-z-] identifiers, numeric pre-release
  // identifiers without leading zeros, and parts that fit in 64 bits.
  static std::optional<Semver> Parse(absl::string_view text);
  // -1, 0 or 1 by semver precedence (section 11); build metadata is ignored.
  static int Compare(const Semver& a, const Semver& b);
  std::string ToString() const;
};

}  // namespace cel

#endif  // GPU_TENANCY_CEL_SEMVER_H_
