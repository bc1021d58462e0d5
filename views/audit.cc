// The audit report: each tenant's deal and every checklist item's result, counted, with what
// the audit cannot see said plainly. The deals are tenant_deals.cc's, the items audit_checks.cc's.
#include "views/audit.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace views {

absl::string_view StatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
  }
  return "fail";
}

AuditReport BuildAuditReport(const AuditInputs& in) {
  AuditReport report;
  report.tenants = TenantDeals(*in.state);
  for (const AuditCheck& check : AuditChecks()) {
    CheckResult r = check.run(in);
    r.id = std::string(check.id);
    r.title = std::string(check.title);
    (r.status == CheckStatus::kPass   ? report.passed
     : r.status == CheckStatus::kWarn ? report.warned
                                      : report.failed)++;
    report.checklist.push_back(std::move(r));
  }
  report.not_checked = {
      {"host patch level",
       "kernel, NVIDIA driver and container runtime versions and their "
       "security fixes are not visible in the Kubernetes API"},
      {"confidential computing", "whether GPUs run in confidential-computing mode is not checked"},
      {"side channels across MIG instances",
       "MIG partitions compute, cache and memory; timing side channels between instances are "
       "not assessed"},
      {"which physical GPU a pod got, without the node agent",
       "the device plugin does not say which GPU (UUID) a pod's containers got; where the node "
       "agent has not reported it, co-tenants of a time-sliced GPU are named by the GPU bind "
       "promised, or per node, and those of a MIG GPU per node. DRA claims name their devices"},
  };
  if (!in.escape_hatches) {
    report.not_checked.push_back(
        {"pod and claim specs",
         absl::StrCat("privileged containers, device host paths and admin access were not "
                      "inspected in this run",
                      in.escape_hatches_unseen.empty() ? "" : ": ", in.escape_hatches_unseen)});
  }
  return report;
}

}  // namespace views
