#include "views/audit_contract.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace views {

CheckResult ContractHeld(const AuditInputs& in) {
  CheckResult r;
  if (!in.contract) {
    r.status = CheckStatus::kWarn;
    r.detail = absl::StrCat("not inspected: ", in.contract_unseen.empty()
                                                   ? "no contract findings were given"
                                                   : in.contract_unseen);
    return r;
  }
  if (in.contract->empty()) {
    r.detail = "every placed GPU pod and allocated claim keeps the policy";
    return r;
  }
  r.status = CheckStatus::kFail;
  r.detail =
      absl::StrCat(in.contract->size(), in.contract->size() == 1 ? " violation" : " violations",
                   " of the policy by objects that got past admission or that a policy "
                   "change left behind");
  for (const ContractFinding& f : *in.contract) {
    // A MIG node about to be re-cut is the platform's, no tenant's.
    r.findings.push_back({f.object, f.tenant.empty()
                                        ? f.message
                                        : absl::StrCat("tenant ", f.tenant, ": ", f.message)});
  }
  r.fix =
      "delete or fix each object as its message says (kubectl get events -A --field-selector "
      "reason=ContractViolation lists them), or let the service evict them: policy "
      "guard.actions: {<rule>: evict}";
  return r;
}

}  // namespace views
