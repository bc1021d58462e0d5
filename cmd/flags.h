// What the subcommands share around their flag tables (common/flag_table.h): reading files
// and addresses named by flags, and the shutdown signals. The typed options they share are in
// cmd/options.h.
#ifndef GPU_TENANCY_CMD_FLAGS_H_
#define GPU_TENANCY_CMD_FLAGS_H_

#include <signal.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flag_table.h"

namespace cmd {

using common::ParsedFlags;

absl::StatusOr<std::string> ReadFile(const std::string& path);

// Prints "error: ..." to stderr; returns 2, a command's exit code for a failure it explains.
// (Usage errors: each command's FlagTable::Refuse.)
int Fail(const absl::Status& status);

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
