// The checklist item for fair sharing's promise ("fair-share-guarantees-fit"): the guarantees
// of the top level of tenants and groups fit in what the cluster offers now. The policy checks
// them at load only against a stated fairSharing.capacity; here the cluster is at hand, so a
// fleet that shrank (or was never as large as the guarantees) fails, naming the members whose
// guarantees overcommit it. Internal to views/ (callers use audit.h).
#ifndef GPU_TENANCY_VIEWS_AUDIT_FAIR_SHARE_H_
#define GPU_TENANCY_VIEWS_AUDIT_FAIR_SHARE_H_

#include "views/audit.h"

namespace views {

CheckResult FairShareGuaranteesFit(const AuditInputs& in);

}  // namespace views

#endif  // GPU_TENANCY_VIEWS_AUDIT_FAIR_SHARE_H_
