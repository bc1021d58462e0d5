// Prometheus text exposition: the one writer every /metrics collector uses, and the registry
// the operator port renders. The writer puts each family's HELP and TYPE before its samples,
// escapes label values as the format says (exactly backslash, double quote and newline) and
// writes numbers as absl::StrCat does (integers exactly, doubles to six significant digits).
//
//   common::MetricsRegistry registry;
//   registry.Add([&](common::MetricsText& m) {
//     m.Family("gpu_tenancy_leader", common::MetricsText::kGauge, "1 while this replica leads.");
//     m.Sample("gpu_tenancy_leader", {}, leader ? 1 : 0);
//   });
//   std::string body = registry.Render();
#ifndef GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_
#define GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"

namespace common {

// `value` as it stands between the quotes of a label: \\, \" and \n escaped, nothing else.
std::string EscapeLabelValue(absl::string_view value);

struct MetricLabel {
  absl::string_view name;
  absl::string_view value;  // escaped when written
};

class MetricsText {
 public:
  enum Type { kCounter, kGauge, kHistogram };

  explicit MetricsText(std::string& out) : out_(out) {}

  // "# HELP name help" and "# TYPE name type": once per family, before its samples.
  void Family(absl::string_view name, Type type, absl::string_view help);
  // One sample line, "name{label="value",...} value". `name` is the family's, or one of a
  // histogram's _bucket, _sum and _count series.
  void Sample(absl::string_view name, std::initializer_list<MetricLabel> labels,
              const absl::AlphaNum& value);
  void Sample(absl::string_view name, const std::vector<MetricLabel>& labels,
              const absl::AlphaNum& value);

 private:
  template <typename Labels>
  void Write(absl::string_view name, const Labels& labels, const absl::AlphaNum& value);
  std::string& out_;
};

// What /metrics shows: every collector added, in the order added, written by one MetricsText.
// Thread-safe; collectors run on the scraping thread and read their own state.
class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsText&)>;
  void Add(Collector collector);
  std::string Render() const;

 private:
  mutable common::Mutex mu_;
  std::vector<Collector> collectors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace common

#endif  // GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_
