#include "cmd/flags.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cmd {

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 2;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  // A directory opens as a stream on Linux and then reads as nothing.
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::Status SplitHostPort(absl::string_view flag, const std::string& text, std::string& host,
                           int& port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " \"", text, "\" is not HOST:PORT"));
  }
  host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  // Digits only: SimpleAtoi would also take a sign and surrounding spaces.
  const std::string digits = text.substr(colon + 1);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(digits, &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " \"", text, "\" has no valid port"));
  }
  return absl::OkStatus();
}

sigset_t BlockShutdownSignals() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace cmd
