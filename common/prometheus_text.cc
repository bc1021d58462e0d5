#include "common/prometheus_text.h"

#include <utility>

namespace common {

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void MetricsText::Family(absl::string_view name, Type type, absl::string_view help) {
  const char* type_name = type == kCounter ? "counter" : type == kGauge ? "gauge" : "histogram";
  absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type_name, "\n");
}

template <typename Labels>
void MetricsText::Write(absl::string_view name, const Labels& labels, const absl::AlphaNum& value) {
  absl::StrAppend(&out_, name);
  if (labels.size() > 0) {
    out_.push_back('{');
    bool first = true;
    for (const MetricLabel& label : labels) {
      absl::StrAppend(&out_, first ? "" : ",", label.name, "=\"", EscapeLabelValue(label.value),
                      "\"");
      first = false;
    }
    out_.push_back('}');
  }
  absl::StrAppend(&out_, " ", value, "\n");
}

void MetricsText::Sample(absl::string_view name, std::initializer_list<MetricLabel> labels,
                         const absl::AlphaNum& value) {
  Write(name, labels, value);
}

void MetricsText::Sample(absl::string_view name, const std::vector<MetricLabel>& labels,
                         const absl::AlphaNum& value) {
  Write(name, labels, value);
}

void MetricsRegistry::Add(Collector collector) {
  common::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() const {
  std::string out;
  MetricsText text(out);
  common::MutexLock lock(&mu_);
  for (const Collector& collect : collectors_) collect(text);
  return out;
}

}  // namespace common
