// Prometheus text exposition, the one piece every writer of /metrics shares: how a label value
// is written. The format escapes exactly backslash, double quote and newline.
#ifndef GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_
#define GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace common {

// `value` as it stands between the quotes of a label: \\, \" and \n escaped, nothing else.
std::string EscapeLabelValue(absl::string_view value);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_PROMETHEUS_TEXT_H_
