// A small structured logger: one logfmt line per event on stderr.
//
//   common::Log(common::LogLevel::kWarn, "policy reload rejected", {{"reason", status.message()}});
// prints  ts=2026-11-30T18:00:00.123Z level=warn msg="policy reload rejected" reason="..."
// Thread-safe; lines from different threads never interleave.
#ifndef GPU_TENANCY_COMMON_LOG_H_
#define GPU_TENANCY_COMMON_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace common {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

using LogField = std::pair<absl::string_view, absl::string_view>;

void SetLogLevel(LogLevel level);
[[nodiscard]] absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, absl::string_view message, std::initializer_list<LogField> fields = {});

}  // namespace common

#endif  // GPU_TENANCY_COMMON_LOG_H_
