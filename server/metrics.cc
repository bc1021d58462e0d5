#include "server/metrics.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/prometheus_text.h"

namespace server {

size_t RequestMetrics::AddRoute(absl::string_view route) {
  auto r = std::make_unique<Route>();
  r->name = std::string(route);
  routes_.push_back(std::move(r));
  return routes_.size() - 1;
}

void RequestMetrics::Record(size_t route, int http_code, double seconds) {
  Route& r = *routes_[route];
  size_t code_index = kCodes.size();
  for (size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i] == http_code) code_index = i;
  }
  r.by_code[code_index].fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) r.buckets[i].fetch_add(1, std::memory_order_relaxed);
  }
  r.count.fetch_add(1, std::memory_order_relaxed);
  r.sum_nanos.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void RequestMetrics::AppendPrometheus(std::string& out) const {
  absl::StrAppend(
      &out,
      "# HELP gpu_tenancy_http_requests_total HTTP requests served, by route and code.\n"
      "# TYPE gpu_tenancy_http_requests_total counter\n");
  for (const auto& r : routes_) {
    for (size_t i = 0; i <= kCodes.size(); ++i) {
      uint64_t n = r->by_code[i].load(std::memory_order_relaxed);
      if (n == 0) continue;
      std::string code = i < kCodes.size() ? absl::StrCat(kCodes[i]) : "other";
      absl::StrAppend(&out, "gpu_tenancy_http_requests_total{route=\"", r->name, "\",code=\"", code,
                      "\"} ", n, "\n");
    }
  }
  absl::StrAppend(&out,
                  "# HELP gpu_tenancy_http_request_duration_seconds Time from request read to "
                  "reply, by route.\n"
                  "# TYPE gpu_tenancy_http_request_duration_seconds histogram\n");
  for (const auto& r : routes_) {
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      absl::StrAppend(&out, "gpu_tenancy_http_request_duration_seconds_bucket{route=\"", r->name,
                      "\",le=\"", kBuckets[i], "\"} ",
                      r->buckets[i].load(std::memory_order_relaxed), "\n");
    }
    uint64_t count = r->count.load(std::memory_order_relaxed);
    absl::StrAppend(&out, "gpu_tenancy_http_request_duration_seconds_bucket{route=\"", r->name,
                    "\",le=\"+Inf\"} ", count, "\n",
                    "gpu_tenancy_http_request_duration_seconds_sum{route=\"", r->name, "\"} ",
                    static_cast<double>(r->sum_nanos.load(std::memory_order_relaxed)) / 1e9, "\n",
                    "gpu_tenancy_http_request_duration_seconds_count{route=\"", r->name, "\"} ",
                    count, "\n");
  }
}

void LabeledCounter::Add(const std::vector<absl::string_view>& label_values, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(label_values);
  if (it == values_.end()) {
    it = values_.emplace(std::vector<std::string>(label_values.begin(), label_values.end()), 0)
             .first;
  }
  it->second += n;
}

void LabeledCounter::AppendPrometheus(std::string& out) const {
  absl::StrAppend(&out, "# HELP ", name_, " ", help_, "\n# TYPE ", name_, " counter\n");
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, n] : values_) {
    absl::StrAppend(&out, name_, "{");
    for (size_t i = 0; i < values.size() && i < label_names_.size(); ++i) {
      absl::StrAppend(&out, i ? "," : "", label_names_[i], "=\"",
                      common::EscapeLabelValue(values[i]), "\"");
    }
    absl::StrAppend(&out, "} ", n, "\n");
  }
}

}  // namespace server
