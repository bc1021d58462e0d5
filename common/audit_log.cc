#include "common/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {

std::string AuditLine(const AuditRecord& r, absl::Time at) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto field = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  };
  w.StartObject();
  field("time", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", at, absl::UTCTimeZone()));
  field("action", r.action);
  field("decision", r.decision);
  field("kind", r.kind);
  field("webhook", r.webhook);
  field("namespace", r.namespace_name);
  field("pod", r.name);
  field("claim", r.claim);
  field("uid", r.uid);
  field("tenant", r.tenant);
  field("tier", r.tier);
  field("node", r.node);
  field("pool", r.pool);
  field("migProfile", r.mig_profile);
  if (r.gpu_index) {
    w.Key("gpuIndex");
    w.Int(*r.gpu_index);
  }
  if (!r.devices.empty()) {
    w.Key("devices");
    w.StartArray();
    for (const AuditDevice& d : r.devices) {
      w.StartObject();
      field("device", d.device);
      field("type", d.type);
      field("uuid", d.uuid);
      field("migProfile", d.mig_profile);
      w.EndObject();
    }
    w.EndArray();
  }
  auto list = [&](const char* key, const std::vector<std::string>& items) {
    if (items.empty()) return;
    w.Key(key);
    w.StartArray();
    for (const std::string& item : items) {
      w.String(item.data(), static_cast<rapidjson::SizeType>(item.size()));
    }
    w.EndArray();
  };
  list("reservedFor", r.reserved_for);
  list("proposedVictims", r.proposed_victims);
  list("victims", r.victims);
  field("step", r.step);
  field("migConfig", r.mig_config);
  if (r.duration_ms) {
    w.Key("durationMs");
    w.Int64(*r.duration_ms);
  }
  field("rule", r.rule);
  field("reason", r.reason);
  w.EndObject();
  return absl::StrCat(absl::string_view(buffer.GetString(), buffer.GetSize()), "\n");
}

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

void AuditLog::Write(const AuditRecord& record) {
  std::string line = AuditLine(record, absl::Now());
  ssize_t n;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
