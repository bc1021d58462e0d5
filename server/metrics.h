// Request metrics for /metrics (written by common::MetricsText): counts per route and HTTP code,
// and a latency histogram per route. Routes are a fixed set, so label cardinality stays bounded.
// Recording is lock-free (atomics); rendering takes a consistent-enough read for a scrape.
#ifndef GPU_TENANCY_SERVER_METRICS_H_
#define GPU_TENANCY_SERVER_METRICS_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "common/prometheus_text.h"

namespace server {

class RequestMetrics {
 public:
  // Routes are registered before serving starts; Record() takes the index.
  size_t AddRoute(absl::string_view route);
  void Record(size_t route, int http_code, double seconds);
  void Collect(common::MetricsText& out) const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.5,    2.5};
  static constexpr std::array<int, 7> kCodes = {200, 400, 403, 404, 413, 415, 500};
  struct Route {
    std::string name;
    std::array<std::atomic<uint64_t>, kCodes.size() + 1> by_code{};  // last: other codes
    std::array<std::atomic<uint64_t>, kBuckets.size()> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_nanos{0};
  };
  std::vector<std::unique_ptr<Route>> routes_;
};

// A counter family with a few string labels (rule codes, verdicts): bounded by the code base,
// never by the cluster. Thread-safe.
class LabeledCounter {
 public:
  LabeledCounter(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  void Add(const std::vector<absl::string_view>& label_values, uint64_t n = 1);
  void Collect(common::MetricsText& out) const;

 private:
  // Orders label-value lists of std::string and of absl::string_view alike, so Add finds an
  // existing series without copying its values (only a new series allocates).
  struct ValuesLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(
          a.begin(), a.end(), b.begin(), b.end(),
          [](absl::string_view x, absl::string_view y) { return x < y; });
    }
  };
  std::string name_, help_;
  std::vector<std::string> label_names_;
  mutable common::Mutex mu_;
  std::map<std::vector<std::string>, uint64_t, ValuesLess> values_ ABSL_GUARDED_BY(mu_);
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_METRICS_H_
