// The isolation audit (views/audit.h) for people and tools: plain text for a terminal, Markdown
// for a ticket, a self-contained HTML page (also served under /ui/audit), and JSON whose shape
// is stable for tooling:
//
// {"summary":{"pass","warn","fail"},
//  "tenants":[{"tenant","tier","modes","deviceAccess",
//    "devices":[{"kind":"pod"|"claim","namespace","name","node","resource","count",
//                "boundary","gpu","coTenants":[...],"coTenantsCertain","isolation"}],
//    "nodes":[{"node","shared":[...],"otherTenants":[...]}],
//    "limits":[...],"quota":[{"resource","quota","used"}],
//    "claimSelectors":[{"claim","request","selectors":[...]}]}],
//  "checklist":[{"id","title","status":"pass"|"warn"|"fail","detail",
//                "findings":[{"object","problem"}],"fix"}],
//  "notChecked":[{"item","why"}]}
#ifndef GPU_TENANCY_VIEWS_AUDIT_RENDER_H_
#define GPU_TENANCY_VIEWS_AUDIT_RENDER_H_

#include <string>

#include "views/audit.h"

namespace views {

std::string AuditJson(const AuditReport& report);
std::string AuditText(const AuditReport& report);
std::string AuditMarkdown(const AuditReport& report);
// `served`: the page under /ui/audit, with links to the other pages beside it.
std::string AuditHtml(const AuditReport& report, bool served = false);

}  // namespace views

#endif  // GPU_TENANCY_VIEWS_AUDIT_RENDER_H_
