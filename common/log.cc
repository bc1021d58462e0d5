#include "common/log.h"

#include <atomic>
#include <cstdio>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace common {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
// Guards no variable: it keeps two threads' lines on stderr from interleaving (one fwrite is not
// atomic against another's). Constant-initialised, so logging works during static init too.
ABSL_CONST_INIT common::Mutex g_write_mutex;  // qualified: .ci/thread-safety greps for it

absl::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void AppendValue(std::string& out, absl::string_view value) {
  bool plain = !value.empty();
  for (char c : value) plain &= c > ' ' && c != '"' && c != '=' && c != '\\';
  if (plain) {
    out.append(value.data(), value.size());
    return;
  }
  out.push_back('"');
  for (char c : value) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (static_cast<unsigned char>(c) < ' ') {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LevelName(l) == name) return l;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("log level must be debug, info, warn or error, got \"", name, "\""));
}

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void Log(LogLevel level, absl::string_view message, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", LevelName(level), " msg=");
  AppendValue(line, message);
  for (const auto& [key, value] : fields) {
    line.push_back(' ');
    line.append(key.data(), key.size());
    line.push_back('=');
    AppendValue(line, value);
  }
  line.push_back('\n');
  MutexLock lock(&g_write_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace common
