#include "test/support/shell.h"

#include <stdio.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "test/support/serve_process.h"

namespace testing_support {

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

CommandResult RunShell(const std::string& command) {
  TempDir dir;  // holds the command's stderr until it is read
  const std::string err_path = dir.File("stderr");
  std::string full =
      absl::StrCat("bash -c ", ShellQuote(absl::StrCat("set -o pipefail; ", command)), " 2>",
                   ShellQuote(err_path));
  CommandResult result;
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return result;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.out.append(buf, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path, std::ios::binary);
  std::ostringstream err;
  err << in.rdbuf();
  result.err = err.str();
  return result;
}

}  // namespace testing_support
