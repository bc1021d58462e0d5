// The checklist item for the contract after admission ("contract-held"): fails with one finding
// per placed pod or allocated claim the contract guard finds breaking the policy now. Internal
// to views/ (callers use audit.h).
#ifndef GPU_TENANCY_VIEWS_AUDIT_CONTRACT_H_
#define GPU_TENANCY_VIEWS_AUDIT_CONTRACT_H_

#include "views/audit.h"

namespace views {

CheckResult ContractHeld(const AuditInputs& in);

}  // namespace views

#endif  // GPU_TENANCY_VIEWS_AUDIT_CONTRACT_H_
