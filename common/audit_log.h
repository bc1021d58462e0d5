// The audit trail: one JSON object per line for every bind (placed or failed), every
// admission denial, every preempt answer that changed or dropped a node's victims, every DRA
// ResourceClaim allocated or released and every step of a MIG reconfiguration, appended to a file
// (or stdout) that survives restarts and can be shipped as is. Fields a record does not have are
// left out. The events and their fields: common/audit_events.h.
//
//   {"time":"2026-12-01T10:00:00.123Z","action":"bind","decision":"bound","namespace":"acme",
//    "pod":"train-0","uid":"...","tenant":"acme","tier":"untrusted","node":"gpu-7",
//    "pool":"mig-a100","migProfile":"3g.40gb"}
//   {"time":"...","action":"claim","decision":"allocated","kind":"ResourceClaim",
//    "namespace":"team-a","claim":"inference-mig-7xk2p","uid":"...","tenant":"team-a",
//    "tier":"trusted","node":"node-a","devices":[{"device":"gpu.nvidia.com/node-a/gpu-0-mig-...",
//    "type":"mig","uuid":"MIG-...","migProfile":"1g.10gb"}],"reservedFor":["inference"]}
//   {"time":"...","action":"reconfigure","decision":"ok","node":"gpu-7","step":"drain",
//    "migConfig":"all-1g.10gb","durationMs":251,"reason":"evicted 1 GPU pod(s): acme/llm-0"}
#ifndef GPU_TENANCY_COMMON_AUDIT_LOG_H_
#define GPU_TENANCY_COMMON_AUDIT_LOG_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/audit_events.h"
#include "common/mutex.h"

namespace common {

class AuditLog {
 public:
  // Opens `path` for appending (created 0640 if missing); "-" writes to stdout.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one line with a single write(2), so lines from concurrent writers (and other
  // processes appending to the same file) never interleave. A failed write is counted and
  // logged, never fatal: the decision it records has already been made.
  void Write(const AuditEvent& event);

  uint64_t records() const { return records_.load(); }
  uint64_t write_errors() const { return write_errors_.load(); }

 private:
  AuditLog(int fd, bool owned, std::string path);
  // Serialises the writes on fd_ (a record is one write(2), and stdout is shared with whatever
  // else the process prints there). The counters are atomics, path_ and owned_ never change.
  Mutex mu_;
  const int fd_ ABSL_GUARDED_BY(mu_);
  const bool owned_;
  const std::string path_;
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> write_errors_{0};
};

}  // namespace common

#endif  // GPU_TENANCY_COMMON_AUDIT_LOG_H_
