// Test support: runs a bash command line and keeps its exit code, stdout and stderr apart.
#ifndef GPU_TENANCY_TEST_SUPPORT_SHELL_H_
#define GPU_TENANCY_TEST_SUPPORT_SHELL_H_

#include <string>

namespace testing_support {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not run or was killed by a signal
  std::string out;     // stdout
  std::string err;     // stderr
};

// One shell word, whatever `s` holds.
std::string ShellQuote(const std::string& s);

// Runs `command` with `bash -c` under `set -o pipefail`.
CommandResult RunShell(const std::string& command);

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_SHELL_H_
