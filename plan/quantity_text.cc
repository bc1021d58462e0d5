#include "plan/quantity_text.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace plan {

std::string NumberText(double v) { return absl::StrCat(v); }

std::string CountText(int64_t n) {
  struct Unit {
    int64_t scale;
    const char* suffix;
  };
  for (Unit u : {Unit{1'000'000'000'000, "T"}, Unit{1'000'000'000, "B"}, Unit{1'000'000, "M"},
                 Unit{1'000, "K"}}) {
    if (n >= u.scale) {
      double v = std::round(static_cast<double>(n) / static_cast<double>(u.scale) * 100) / 100;
      return absl::StrCat(NumberText(v), u.suffix);
    }
  }
  return absl::StrCat(n);
}

std::string Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

std::string GiBText(int64_t bytes, bool round_up) {
  int64_t whole = bytes / kGiB;
  int64_t rest = bytes % kGiB;  // < 2^30, so rest * 100 cannot overflow
  int64_t centi = rest * 100 / kGiB;
  if (round_up && centi * kGiB < rest * 100) ++centi;
  if (centi == 100) {
    ++whole;
    centi = 0;
  }
  return absl::StrCat(whole, ".", centi < 10 ? "0" : "", centi, " GiB");
}

std::string MibText(int64_t mib, bool round_up) { return GiBText(mib * kMiB, round_up); }

std::string MiQuantity(int64_t mib) { return absl::StrCat(mib, "Mi"); }

}  // namespace plan
