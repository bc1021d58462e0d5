#include "cel/semver.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace cel {
namespace {

bool AllDigits(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

// An identifier of [0-9A-Za-z-], non-empty.
bool IsIdentifier(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isalnum(c) || c == '-'; });
}

// A numeric part: digits, no leading zero unless it is "0", fits in 64 bits.
std::optional<uint64_t> Numeric(absl::string_view s) {
  if (!AllDigits(s) || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  for (char c : s) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

int ComparePreReleaseIdentifier(const std::string& a, const std::string& b) {
  const bool a_num = AllDigits(a), b_num = AllDigits(b);
  if (a_num && b_num) {
    // Both are free of leading zeros, so the longer one is larger.
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    return a == b ? 0 : (a < b ? -1 : 1);
  }
  if (a_num != b_num) return a_num ? -1 : 1;  // numeric identifiers sort first
  return a == b ? 0 : (a < b ? -1 : 1);
}

}  // namespace

std::optional<Semver> Semver::Parse(absl::string_view text) {
  Semver out;
  if (const size_t plus = text.find('+'); plus != absl::string_view::npos) {
    const absl::string_view build = text.substr(plus + 1);
    for (absl::string_view id : absl::StrSplit(build, '.')) {
      if (!IsIdentifier(id)) return std::nullopt;
    }
    out.build = std::string(build);
    text = text.substr(0, plus);
  }
  if (const size_t dash = text.find('-'); dash != absl::string_view::npos) {
    for (absl::string_view id : absl::StrSplit(text.substr(dash + 1), '.')) {
      if (!IsIdentifier(id)) return std::nullopt;
      if (AllDigits(id) && id.size() > 1 && id[0] == '0') return std::nullopt;
      out.pre_release.emplace_back(id);
    }
    text = text.substr(0, dash);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  if (parts.size() != 3) return std::nullopt;
  std::optional<uint64_t> major = Numeric(parts[0]), minor = Numeric(parts[1]),
                          patch = Numeric(parts[2]);
  if (!major || !minor || !patch) return std::nullopt;
  out.major = *major;
  out.minor = *minor;
  out.patch = *patch;
  return out;
}

int Semver::Compare(const Semver& a, const Semver& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  // A version without a pre-release is newer than any of its pre-releases.
  if (a.pre_release.empty() || b.pre_release.empty()) {
    if (a.pre_release.empty() == b.pre_release.empty()) return 0;
    return a.pre_release.empty() ? 1 : -1;
  }
  const size_t n = std::min(a.pre_release.size(), b.pre_release.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = ComparePreReleaseIdentifier(a.pre_release[i], b.pre_release[i]); c != 0) return c;
  }
  if (a.pre_release.size() == b.pre_release.size()) return 0;
  return a.pre_release.size() < b.pre_release.size() ? -1 : 1;
}

std::string Semver::ToString() const {
  std::string out = absl::StrCat(major, ".", minor, ".", patch);
  if (!pre_release.empty()) absl::StrAppend(&out, "-", absl::StrJoin(pre_release, "."));
  if (!build.empty()) absl::StrAppend(&out, "+", build);
  return out;
}

}  // namespace cel
