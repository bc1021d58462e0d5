#include "common/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace common {

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  if (path == "-") return std::unique_ptr<AuditLog>(new AuditLog(STDOUT_FILENO, false, path));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("audit log ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<AuditLog>(new AuditLog(fd, true, path));
}

AuditLog::AuditLog(int fd, bool owned, std::string path)
    : fd_(fd), owned_(owned), path_(std::move(path)) {}

AuditLog::~AuditLog() {
  if (owned_) ::close(fd_);
}

void AuditLog::Write(const AuditEvent& event) {
  std::string line = AuditLine(event, absl::Now());
  ssize_t n;
  {
    MutexLock lock(&mu_);
    do {
      n = ::write(fd_, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
  }
  if (n == static_cast<ssize_t>(line.size())) {
    ++records_;
    return;
  }
  ++write_errors_;
  Log(LogLevel::kError, "audit log write failed",
      {{"file", path_}, {"error", n < 0 ? std::strerror(errno) : "short write"}});
}

}  // namespace common
