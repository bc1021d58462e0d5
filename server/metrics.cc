#include "server/metrics.h"

#include <memory>

#include "absl/strings/str_cat.h"

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

void RequestMetrics::Collect(common::MetricsText& out) const {
  out.Family("gpu_tenancy_http_requests_total", common::MetricsText::kCounter,
             "HTTP requests served, by route and code.");
  for (const auto& r : routes_) {
    for (size_t i = 0; i <= kCodes.size(); ++i) {
      uint64_t n = r->by_code[i].load(std::memory_order_relaxed);
      if (n == 0) continue;
      std::string code = i < kCodes.size() ? absl::StrCat(kCodes[i]) : "other";
      out.Sample("gpu_tenancy_http_requests_total", {{"route", r->name}, {"code", code}}, n);
    }
  }
  out.Family("gpu_tenancy_http_request_duration_seconds", common::MetricsText::kHistogram,
             "Time from request read to reply, by route.");
  for (const auto& r : routes_) {
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      out.Sample("gpu_tenancy_http_request_duration_seconds_bucket",
                 {{"route", r->name}, {"le", absl::StrCat(kBuckets[i])}},
                 r->buckets[i].load(std::memory_order_relaxed));
    }
    uint64_t count = r->count.load(std::memory_order_relaxed);
    out.Sample("gpu_tenancy_http_request_duration_seconds_bucket",
               {{"route", r->name}, {"le", "+Inf"}}, count);
    out.Sample("gpu_tenancy_http_request_duration_seconds_sum", {{"route", r->name}},
               static_cast<double>(r->sum_nanos.load(std::memory_order_relaxed)) / 1e9);
    out.Sample("gpu_tenancy_http_request_duration_seconds_count", {{"route", r->name}}, count);
  }
}

void LabeledCounter::Add(const std::vector<absl::string_view>& label_values, uint64_t n) {
  common::MutexLock lock(&mu_);
  auto it = values_.find(label_values);
  if (it == values_.end()) {
    it = values_.emplace(std::vector<std::string>(label_values.begin(), label_values.end()), 0)
             .first;
  }
  it->second += n;
}

void LabeledCounter::Collect(common::MetricsText& out) const {
  out.Family(name_, common::MetricsText::kCounter, help_);
  common::MutexLock lock(&mu_);
  std::vector<common::MetricLabel> labels;
  for (const auto& [values, n] : values_) {
    labels.clear();
    for (size_t i = 0; i < values.size() && i < label_names_.size(); ++i) {
      labels.push_back({label_names_[i], values[i]});
    }
    out.Sample(name_, labels, n);
  }
}

}  // namespace server
