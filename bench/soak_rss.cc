#include "bench/soak_rss.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace soak {
namespace {

double Median(std::vector<long> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2])
               : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

}  // namespace

long RssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      long kib = 0;
      std::string digits;
      for (char c : line) {
        if (c >= '0' && c <= '9') digits += c;
      }
      return absl::SimpleAtoi(digits, &kib) ? kib : -1;
    }
  }
  return -1;
}

RssGrowth MeasureGrowth(const RssSamples& samples, double warmup) {
  RssGrowth g;
  std::vector<long> steady;
  for (const auto& [t, kib] : samples) {
    if (t >= warmup) steady.push_back(kib);
  }
  g.steady_samples = steady.size();
  g.first_kib = samples.empty() ? 0 : samples.front().second;
  for (const auto& [t, kib] : samples) g.max_kib = std::max(g.max_kib, kib);
  if (steady.size() < 4) return g;
  size_t w = std::min<size_t>(10, steady.size() / 2);
  g.start_kib = Median(std::vector<long>(steady.begin(), steady.begin() + static_cast<long>(w)));
  g.end_kib = Median(std::vector<long>(steady.end() - static_cast<long>(w), steady.end()));
  g.percent = 100.0 * (g.end_kib - g.start_kib) / g.start_kib;
  return g;
}

void WriteRssCsv(const std::string& path, const RssSamples& samples) {
  std::ofstream csv(path);
  csv << "seconds,rss_kib\n";
  for (const auto& [t, kib] : samples) csv << absl::StrFormat("%.1f,%d\n", t, kib);
}

}  // namespace soak
