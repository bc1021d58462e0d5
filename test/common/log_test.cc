// The structured logger: level names and the threshold, one logfmt line per event with a UTC
// timestamp, quoting and escaping of values, and whole lines from concurrent writers.
#include "common/log.h"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Every test starts and ends at the default threshold, whatever it set meanwhile.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kInfo); }
  void TearDown() override { SetLogLevel(LogLevel::kInfo); }

  // What one Log() call wrote to stderr.
  static std::string Captured(LogLevel level, absl::string_view message,
                              std::initializer_list<LogField> fields = {}) {
    ::testing::internal::CaptureStderr();
    Log(level, message, fields);
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(LogTest, ParseLogLevelAcceptsTheFourNamesOnly) {
  struct Row {
    const char* name;
    const char* text;
    std::optional<LogLevel> level;  // nullopt: refused
  };
  const Row rows[] = {
      {"debug", "debug", LogLevel::kDebug}, {"info", "info", LogLevel::kInfo},
      {"warn", "warn", LogLevel::kWarn},    {"error", "error", LogLevel::kError},
      {"upper case", "INFO", std::nullopt}, {"long form", "warning", std::nullopt},
      {"padded", " info", std::nullopt},    {"empty", "", std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<LogLevel> level = ParseLogLevel(row.text);
    if (row.level) {
      ASSERT_TRUE(level.ok()) << level.status();
      EXPECT_EQ(*level, *row.level);
      continue;
    }
    ASSERT_FALSE(level.ok());
    EXPECT_EQ(level.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(level.status().message(),
              absl::StrCat("log level must be debug, info, warn or error, got \"", row.text, "\""));
  }
}

TEST_F(LogTest, TheThresholdEnablesItsLevelAndTheOnesAbove) {
  const LogLevel all[] = {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError};
  for (LogLevel threshold : all) {
    SCOPED_TRACE(static_cast<int>(threshold));
    SetLogLevel(threshold);
    for (LogLevel level : all) {
      EXPECT_EQ(LogEnabled(level), static_cast<int>(level) >= static_cast<int>(threshold))
          << "level " << static_cast<int>(level);
    }
  }
}

TEST_F(LogTest, ADisabledLevelWritesNothing) {
  SetLogLevel(LogLevel::kWarn);
  EXPECT_EQ(Captured(LogLevel::kInfo, "quiet", {{"k", "v"}}), "");
  EXPECT_EQ(Captured(LogLevel::kDebug, "quieter"), "");
  EXPECT_THAT(Captured(LogLevel::kError, "loud"), HasSubstr("level=error msg=loud"));
}

TEST_F(LogTest, OneLogfmtLineWithATimestampLevelMessageAndFieldsInOrder) {
  absl::Time before = absl::Now();
  std::string line =
      Captured(LogLevel::kWarn, "policy reload rejected", {{"reason", "bad"}, {"file", "p.yaml"}});
  absl::Time after = absl::Now();
  EXPECT_THAT(line, MatchesRegex("ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                                 "\\.[0-9]{3}Z level=warn msg=\"policy reload rejected\" "
                                 "reason=bad file=p.yaml\n"));
  // The timestamp is UTC and the time of the call, to the millisecond.
  std::string ts = line.substr(3, line.find(' ') - 3);
  absl::Time at;
  std::string error;
  ASSERT_TRUE(absl::ParseTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone(), &at, &error))
      << error;
  EXPECT_GE(at, absl::FromUnixMillis(absl::ToUnixMillis(before)));
  EXPECT_LE(at, after);
}

TEST_F(LogTest, EachLevelIsNamedOnTheLine) {
  SetLogLevel(LogLevel::kDebug);
  const std::pair<LogLevel, const char*> rows[] = {{LogLevel::kDebug, " level=debug "},
                                                   {LogLevel::kInfo, " level=info "},
                                                   {LogLevel::kWarn, " level=warn "},
                                                   {LogLevel::kError, " level=error "}};
  for (const auto& [level, text] : rows) {
    SCOPED_TRACE(text);
    EXPECT_THAT(Captured(level, "m"), HasSubstr(text));
  }
}

TEST_F(LogTest, ValuesAreQuotedAndEscapedOnlyWhenTheyNeedIt) {
  struct Row {
    const char* name;
    std::string value;
    std::string written;  // as it appears after "k="
  };
  const Row rows[] = {
      {"plain word", "ready", "ready"},
      {"punctuation stays plain", "a/b:c,d.e-f", "a/b:c,d.e-f"},
      {"empty is quoted", "", "\"\""},
      {"space", "two words", "\"two words\""},
      {"equals sign", "a=b", "\"a=b\""},
      {"double quote", "say \"hi\"", "\"say \\\"hi\\\"\""},
      {"backslash", "C:\\x", "\"C:\\\\x\""},
      {"newline stays on one line", "line1\nline2", "\"line1\\nline2\""},
      {"other control characters become spaces", "a\tb\rc", "\"a b c\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::string line = Captured(LogLevel::kInfo, "m", {{"k", row.value}});
    EXPECT_THAT(line, ::testing::EndsWith(absl::StrCat(" k=", row.written, "\n")));
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  }
}

TEST_F(LogTest, TheMessageIsQuotedLikeAValue) {
  EXPECT_THAT(Captured(LogLevel::kInfo, "started"), ::testing::EndsWith(" msg=started\n"));
  EXPECT_THAT(Captured(LogLevel::kInfo, "two\nlines"),
              ::testing::EndsWith(" msg=\"two\\nlines\"\n"));
  EXPECT_THAT(Captured(LogLevel::kInfo, ""), ::testing::EndsWith(" msg=\"\"\n"));
}

TEST_F(LogTest, NonAsciiBytesAreKeptAsTheyAre) {
  std::string line = Captured(LogLevel::kInfo, "m", {{"node", "gpu-\xc3\xa9t\xc3\xa9"}});
  EXPECT_THAT(line, HasSubstr("gpu-\xc3\xa9t\xc3\xa9"));
}

TEST_F(LogTest, LinesFromConcurrentThreadsNeverInterleave) {
  constexpr int kThreads = 8;
  constexpr int kLines = 200;
  const std::string payload(300, 'x');  // long lines make a torn write likely if unguarded
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string id = absl::StrCat(t);
      for (int i = 0; i < kLines; ++i) {
        Log(LogLevel::kInfo, "tick", {{"thread", id}, {"payload", payload}});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::string out = ::testing::internal::GetCapturedStderr();
  std::vector<absl::string_view> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  std::vector<int> per_thread(kThreads);
  for (absl::string_view line : lines) {
    ASSERT_THAT(
        std::string(line),
        MatchesRegex(absl::StrCat("ts=[^ ]+ level=info msg=tick thread=[0-7] payload=", payload)));
    ++per_thread[line[line.find("thread=") + 7] - '0'];
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread[t], kLines) << "thread " << t;
}

}  // namespace
}  // namespace common
