// The audit trail's events, one type per thing that happened, and the one function that writes
// any of them as a line (the format: common/audit_log.h). The code that saw an event fills in
// what it knows; which action and decision the line names follows from the type and its
// outcome, so no caller spells them.
#ifndef GPU_TENANCY_COMMON_AUDIT_EVENTS_H_
#define GPU_TENANCY_COMMON_AUDIT_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/time/time.h"

namespace common {

// The tenant an object belongs to, resolved from its namespace; empty when unknown.
struct AuditTenant {
  std::string name;
  std::string tier;
};

// kube-scheduler's bind call: the pod placed (where), or not (why).
struct BindAudit {
  bool bound = false;
  std::string namespace_name, pod, uid, node;
  AuditTenant tenant;
  std::string pool, mig_profile;  // bound: the pool and MIG profile it got
  std::optional<int> gpu_index;   // bound: the GPU, when one is named
  std::string error;              // not bound: why
};

// An admission webhook refused an object.
struct AdmissionDenialAudit {
  enum class Webhook { kValidate, kMutate };
  Webhook webhook = Webhook::kValidate;
  std::string kind;  // "Pod", "ResourceClaim", ...
  std::string namespace_name, name;
  AuditTenant tenant;
  std::string rule;     // the denying rule's id
  std::string message;  // what kubectl showed the user
};

// One device a DRA claim holds.
struct AuditDevice {
  std::string device;  // the DRA device ID, "<driver>/<pool>/<device>"
  std::string type;    // "gpu", "mig"; "" when its slice is not (or no longer) published
  std::string uuid;
  std::string mig_profile;
};

// A ResourceClaim got devices, or let them go.
struct ClaimAudit {
  enum class Change { kAllocated, kAllocationRemoved, kClaimDeleted };
  Change change = Change::kAllocated;
  std::string namespace_name, claim, uid, node;
  AuditTenant tenant;
  std::vector<AuditDevice> devices;
  std::vector<std::string> reserved_for;  // the pods it is reserved for
};

// A preempt answer that changed or dropped one node's victims.
struct PreemptAudit {
  enum class Outcome { kChanged, kDropped };
  Outcome outcome = Outcome::kChanged;
  std::string namespace_name, pod, uid, node;
  AuditTenant tenant;
  std::vector<std::string> proposed_victims;  // what kube-scheduler proposed
  std::vector<std::string> victims;           // what we answered
  std::string reason;
};

// One step of a MIG reconfiguration, or its result (step "result").
struct ReconfigureAudit {
  enum class Outcome { kOk, kFailed, kPlanned };  // kPlanned: a dry run
  Outcome outcome = Outcome::kOk;
  std::string node, step, mig_config;
  std::optional<int64_t> duration_ms;
  std::string reason;
};

using AuditEvent =
    std::variant<BindAudit, AdmissionDenialAudit, ClaimAudit, PreemptAudit, ReconfigureAudit>;

// The event as one JSON line, newline included; fields it does not have are left out.
std::string AuditLine(const AuditEvent& event, absl::Time at);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_AUDIT_EVENTS_H_
