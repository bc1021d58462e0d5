#include "test/support/shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace testing_support {

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

CommandResult RunShell(const std::string& command) {
  char err_template[] = "/tmp/gpu-tenancy-test-stderr-XXXXXX";
  int err_fd = mkstemp(err_template);
  CommandResult result;
  if (err_fd < 0) return result;
  close(err_fd);
  std::string full =
      absl::StrCat("bash -c ", ShellQuote(absl::StrCat("set -o pipefail; ", command)), " 2>",
                   ShellQuote(err_template));
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe) {
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.out.append(buf, n);
    int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_template, std::ios::binary);
    std::ostringstream err;
    err << in.rdbuf();
    result.err = err.str();
  }
  unlink(err_template);
  return result;
}

}  // namespace testing_support
