#include "views/audit_fair_share.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/fair_share.h"

namespace views {

CheckResult FairShareGuaranteesFit(const AuditInputs& in) {
  CheckResult r;
  const topology::FairShareLedger ledger =
      topology::MakeLedger(*in.state->snapshot, *in.state->policy);
  if (ledger.tenants.empty()) {
    r.detail = "no tenant is guaranteed capacity (no fair sharing in the policy)";
    return r;
  }
  const absl::Status fits = topology::CheckGuarantees(*in.state->policy, ledger.capacity);
  if (fits.ok()) {
    std::vector<std::string> items;
    for (const auto& [item, amount] : ledger.capacity) {
      items.push_back(topology::ItemAmountText(item, static_cast<double>(amount)));
    }
    r.detail =
        absl::StrCat("the guarantees fit in what the cluster offers (",
                     items.empty() ? "no governed item offered" : absl::StrJoin(items, ", "), ")");
    return r;
  }
  r.status = CheckStatus::kFail;
  r.findings.push_back({"policy", std::string(fits.message())});
  r.detail =
      "tenants are promised more than the cluster offers: a guaranteed pod may find "
      "nothing to reclaim";
  r.fix = "lower the guarantees (tenants[].guaranteed, groups[].guaranteed) or add the capacity";
  return r;
}

}  // namespace views
