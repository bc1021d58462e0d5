// Minimal flag parsing for the subcommands: "--name value", "--name=value", "-o value" and
// positional arguments. Unknown flags are errors, so a typo never silently changes behaviour.
#ifndef GPU_TENANCY_CMD_FLAGS_H_
#define GPU_TENANCY_CMD_FLAGS_H_

#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cmd {

struct ParsedFlags {
  std::map<std::string, std::vector<std::string>> values;  // repeated flags keep every value
  std::set<std::string> switches;                          // boolean flags that were given
  std::vector<std::string> positional;

  bool Has(const std::string& name) const { return values.count(name) || switches.count(name); }
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second.back();
  }
};

// `with_value` names flags that take a value; `switches` names boolean flags.
absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::set<std::string>& with_value,
                                       const std::set<std::string>& switches);

absl::StatusOr<std::string> ReadFile(const std::string& path);

// The -o / --output value, "text" when neither is given; InvalidArgument ("-o must be text or
// json") when it is not one of `formats`.
absl::StatusOr<std::string> OutputFormat(const ParsedFlags& flags,
                                         const std::vector<std::string>& formats);

// Ignores SIGPIPE (a peer that hangs up turns a write into EPIPE: OpenSSL's socket BIO sends
// without MSG_NOSIGNAL) and blocks SIGTERM and SIGINT in the calling thread, and so in every
// thread started after it, so that only a sigwait() on the returned set sees them. Call before
// any thread starts.
sigset_t BlockShutdownSignals();

// HOST:PORT (IPv6 hosts in brackets; an empty host is 0.0.0.0; port 0 picks a free one) into
// `host` and `port`; `flag` names the flag in errors, since a command may have two addresses.
absl::Status SplitHostPort(absl::string_view flag, const std::string& text, std::string& host,
                           int& port);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_FLAGS_H_
