#include "topology/quantity.h"

#include <cstdlib>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace topology {
namespace {

using Int128 = __int128;

constexpr int kMaxSignificantDigits = 30;  // keeps the mantissa well inside 128 bits
constexpr Int128 kInt64Max = std::numeric_limits<int64_t>::max();
// Bound for intermediate products: one more *10 or *2 still fits in 128 bits. A binary suffix is
// applied before the fraction is divided out, so "1.0000000000000000Ki" passes through values
// far above int64 on its way to 1024.
constexpr Int128 kIntermediateMax = static_cast<Int128>(1'000'000'000'000'000'000) *
                                    static_cast<Int128>(1'000'000'000'000'000'000) * 10;

absl::Status Junk(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("quantity \"", text, "\" is not a valid Kubernetes quantity: ", why));
}

// Suffix → (power of two, power of ten).
bool ParseSuffix(absl::string_view suffix, int& pow2, int& pow10) {
  pow2 = 0;
  pow10 = 0;
  if (suffix.empty()) return true;
  if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr absl::string_view kBinary = "KMGTPE";
    size_t at = kBinary.find(suffix[0]);
    if (at == absl::string_view::npos) return false;
    pow2 = 10 * static_cast<int>(at + 1);
    return true;
  }
  if (suffix.size() != 1) return false;
  switch (suffix[0]) {
    case 'n':
      pow10 = -9;
      return true;
    case 'u':
      pow10 = -6;
      return true;
    case 'm':
      pow10 = -3;
      return true;
    case 'k':
      pow10 = 3;
      return true;
    case 'M':
      pow10 = 6;
      return true;
    case 'G':
      pow10 = 9;
      return true;
    case 'T':
      pow10 = 12;
      return true;
    case 'P':
      pow10 = 15;
      return true;
    case 'E':
      pow10 = 18;
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(absl::string_view text) {
  if (text.empty()) return Junk(text, "empty");
  size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') {
    negative = text[i] == '-';
    ++i;
  }
  absl::string_view whole, fraction;
  size_t start = i;
  while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
  whole = text.substr(start, i - start);
  if (i < text.size() && text[i] == '.') {
    ++i;
    start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    fraction = text.substr(start, i - start);
  }
  if (whole.empty() && fraction.empty()) return Junk(text, "no digits");

  int pow2 = 0, pow10 = 0;
  absl::string_view suffix = text.substr(i);
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    // "E" alone is exa; "e3"/"E-2" is an exponent.
    int exponent = 0;
    absl::string_view digits = suffix.substr(1);
    size_t d = (digits[0] == '+' || digits[0] == '-') ? 1 : 0;
    if (d == digits.size()) return Junk(text, "exponent has no digits");
    for (size_t k = d; k < digits.size(); ++k) {
      if (!absl::ascii_isdigit(digits[k])) return Junk(text, "bad exponent");
    }
    if (!absl::SimpleAtoi(digits, &exponent) || exponent > 1000 || exponent < -1000) {
      return Junk(text, "exponent out of range");
    }
    pow10 = exponent;
  } else if (!ParseSuffix(suffix, pow2, pow10)) {
    return Junk(text, absl::StrCat("unknown suffix \"", suffix, "\""));
  }

  // mantissa = whole||fraction as an integer; value = mantissa * 2^pow2 * 10^(pow10 - |fraction|).
  Int128 mantissa = 0;
  int significant = 0;
  int dropped_fraction_digits = 0;
  bool dropped_nonzero = false;
  auto take = [&](char c, bool is_fraction) {
    if (significant >= kMaxSignificantDigits) {
      if (!is_fraction) return false;  // integer part too long: too large either way
      ++dropped_fraction_digits;
      dropped_nonzero |= c != '0';
      return true;
    }
    mantissa = mantissa * 10 + (c - '0');
    if (mantissa != 0) ++significant;
    return true;
  };
  for (char c : whole) {
    if (!take(c, false)) return Junk(text, "too large");
  }
  for (char c : fraction) take(c, true);
  int exp10 = pow10 + 3 - static_cast<int>(fraction.size()) + dropped_fraction_digits;

  Int128 milli = mantissa;
  bool inexact = dropped_nonzero;
  // Trailing zeros of the fraction are exact: drop them before scaling.
  while (exp10 < 0 && milli != 0 && milli % 10 == 0) {
    milli /= 10;
    ++exp10;
  }
  for (int k = 0; k < pow2; ++k) {
    milli *= 2;
    if (milli > kIntermediateMax) return Junk(text, "too large");
  }
  if (milli == 0) return Quantity(0);
  for (; exp10 > 0; --exp10) {
    milli *= 10;
    if (milli > kInt64Max) return Junk(text, "too large");
  }
  for (; exp10 < 0; ++exp10) {
    if (milli % 10 != 0) inexact = true;
    milli /= 10;
    if (milli == 0) break;
  }
  if (inexact) milli += 1;  // round away from zero, as resource.Quantity does
  if (milli > kInt64Max) return Junk(text, "too large");
  int64_t result = static_cast<int64_t>(milli);
  return Quantity(negative ? -result : result);
}

int64_t Quantity::Value() const {
  int64_t units = milli_ / 1000;
  if (milli_ % 1000 != 0) units += milli_ > 0 ? 1 : -1;
  return units;
}

int64_t Quantity::ValueMiB() const {
  constexpr int64_t kMiB = int64_t{1} << 20;
  int64_t bytes = Value();
  if (bytes <= 0) return bytes / kMiB;
  return (bytes + kMiB - 1) / kMiB;
}

std::string Quantity::ToString() const {
  if (milli_ % 1000 == 0) return absl::StrCat(milli_ / 1000);
  return absl::StrCat(milli_, "m");
}

}  // namespace topology
