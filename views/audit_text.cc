// The audit as plain text, Markdown and HTML: one walk over the report, three ways of marking
// up headings, items and emphasis.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "views/audit_render.h"

namespace views {
namespace {

enum class Markup { kText, kMarkdown, kHtml };

std::string Escape(Markup m, absl::string_view s) {
  if (m != Markup::kHtml) return std::string(s);
  return absl::StrReplaceAll(
      s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&#39;"}});
}

std::string QuotaText(const std::vector<topology::QuotaLine>& quota) {
  std::vector<std::string> parts;
  for (const topology::QuotaLine& q : quota) {
    parts.push_back(absl::StrCat(q.resource, " ", q.used, " of ", q.quota));
  }
  return absl::StrCat(absl::StrJoin(parts, ", "), " used");
}

// What one tenant's deal says, as lines of (indent, text).
// Built in place (emplace_back): moving a temporary Line of a short literal into the vector
// trips GCC 12's -Warray-bounds false positive.
struct Line {
  Line(int indent, std::string text) : indent(indent), text(std::move(text)) {}
  int indent;
  std::string text;
};

std::vector<Line> DealLines(const TenantDeal& t) {
  std::vector<Line> out;
  out.emplace_back(0, t.tier.empty() ? "tier: none (the policy gives this tenant no GPUs)"
                                     : absl::StrCat("tier: ", t.tier, " (may use ", t.modes,
                                                    t.device_access ? "; device access" : "", ")"));
  if (t.devices.empty()) out.emplace_back(0, "devices: none held");
  for (const HeldDevice& d : t.devices) {
    out.emplace_back(
        0, absl::StrCat(d.kind, " ", d.namespace_name, "/", d.name, " on ", d.node, ": ", d.count,
                        " x ", d.resource, d.gpu.empty() ? "" : absl::StrCat(" (", d.gpu, ")")));
    out.emplace_back(1, d.isolation);
  }
  for (const NodeNeighbours& n : t.nodes) {
    out.emplace_back(
        0, absl::StrCat("node ", n.node, ": shares ", absl::StrJoin(n.shared, ", "),
                        n.other_tenants.empty()
                            ? "; no other tenant holds GPUs here"
                            : absl::StrCat(" with ", absl::StrJoin(n.other_tenants, ", "))));
  }
  out.emplace_back(
      0, absl::StrCat("limits: ", t.limits.empty() ? "none" : absl::StrJoin(t.limits, "; ")));
  out.emplace_back(0, absl::StrCat("quota: ", t.quota.empty() ? "none" : QuotaText(t.quota)));
  for (const ClaimSelectors& c : t.claim_selectors) {
    out.emplace_back(0, absl::StrCat("claim ", c.claim, " request ", c.request, ": ",
                                     c.selectors.empty() ? "no selectors (any device of its class)"
                                                         : "selectors the allocator enforces"));
    for (const std::string& s : c.selectors) out.emplace_back(1, s);
  }
  return out;
}

std::string Render(const AuditReport& report, Markup m) {
  std::string out;
  auto heading = [&](int level, absl::string_view text, absl::string_view id = "") {
    if (m == Markup::kText) {
      absl::StrAppend(&out, level == 1 ? "" : "\n", text, "\n");
    } else if (m == Markup::kMarkdown) {
      absl::StrAppend(&out, level == 1 ? "" : "\n", std::string(level, '#'), " ", text, "\n\n");
    } else {
      absl::StrAppend(&out, "<h", level, id.empty() ? "" : absl::StrCat(" id=\"", id, "\""), ">",
                      Escape(m, text), "</h", level, ">\n");
    }
  };
  heading(1, "GPU isolation audit");
  const std::string summary = absl::StrCat("checklist: ", report.passed, " pass, ", report.warned,
                                           " warn, ", report.failed, " fail");
  if (m == Markup::kHtml) {
    absl::StrAppend(&out, "<p id=\"summary\">", summary, "</p>\n");
  } else {
    absl::StrAppend(&out, summary, "\n");
  }

  heading(2, "Each tenant's deal");
  for (const TenantDeal& t : report.tenants) {
    std::vector<Line> lines = DealLines(t);
    if (m == Markup::kText) {
      absl::StrAppend(&out, "\ntenant ", t.tenant, "\n");
      for (const Line& l : lines)
        absl::StrAppend(&out, std::string(2 + 2 * l.indent, ' '), l.text, "\n");
    } else if (m == Markup::kMarkdown) {
      absl::StrAppend(&out, "### ", t.tenant, "\n\n");
      for (const Line& l : lines) {
        absl::StrAppend(&out, std::string(2 * l.indent, ' '), "- ",
                        l.indent > 0 && absl::StrContains(l.text, "device.")
                            ? absl::StrCat("`", l.text, "`")
                            : l.text,
                        "\n");
      }
      absl::StrAppend(&out, "\n");
    } else {
      absl::StrAppend(&out, "<section class=\"tenant\" data-tenant=\"", Escape(m, t.tenant),
                      "\">\n<h3>", Escape(m, t.tenant), "</h3>\n<ul>\n");
      for (size_t i = 0; i < lines.size(); ++i) {
        absl::StrAppend(&out, "<li", lines[i].indent > 0 ? " class=\"sub\"" : "", ">",
                        Escape(m, lines[i].text), "</li>\n");
      }
      absl::StrAppend(&out, "</ul>\n</section>\n");
    }
  }

  heading(2, "Go-live checklist");
  for (const CheckResult& c : report.checklist) {
    const std::string status = std::string(StatusName(c.status));
    if (m == Markup::kHtml) {
      absl::StrAppend(&out, "<section class=\"check ", status, "\" data-check=\"", c.id,
                      "\" data-status=\"", status, "\">\n<h3><span class=\"status\">", status,
                      "</span> ", Escape(m, c.title), " <code>", c.id, "</code></h3>\n");
      if (!c.detail.empty()) absl::StrAppend(&out, "<p>", Escape(m, c.detail), "</p>\n");
      if (!c.findings.empty()) {
        absl::StrAppend(&out, "<ul>\n");
        for (const CheckFinding& f : c.findings) {
          absl::StrAppend(&out, "<li data-object=\"", Escape(m, f.object), "\"><code>",
                          Escape(m, f.object), "</code> ", Escape(m, f.problem), "</li>\n");
        }
        absl::StrAppend(&out, "</ul>\n");
      }
      if (!c.fix.empty())
        absl::StrAppend(&out, "<p class=\"fix\">Fix: ", Escape(m, c.fix), "</p>\n");
      absl::StrAppend(&out, "</section>\n");
      continue;
    }
    const std::string tag = m == Markup::kMarkdown ? absl::StrCat("**", status, "**") : status;
    absl::StrAppend(
        &out, m == Markup::kMarkdown ? "- " : "", tag,
        std::string(m == Markup::kText ? 6 - status.size() : 1, ' '), c.title,
        m == Markup::kMarkdown ? absl::StrCat(" (`", c.id, "`)") : absl::StrCat(" [", c.id, "]"),
        "\n");
    const std::string pad = m == Markup::kMarkdown ? "  - " : "      ";
    if (!c.detail.empty()) absl::StrAppend(&out, pad, c.detail, "\n");
    for (const CheckFinding& f : c.findings) {
      absl::StrAppend(&out, pad,
                      m == Markup::kMarkdown ? absl::StrCat("`", f.object, "`") : f.object, ": ",
                      f.problem, "\n");
    }
    if (!c.fix.empty()) absl::StrAppend(&out, pad, "fix: ", c.fix, "\n");
  }

  heading(2, "Not checked");
  if (m == Markup::kHtml) absl::StrAppend(&out, "<ul id=\"not-checked\">\n");
  for (const NotChecked& n : report.not_checked) {
    if (m == Markup::kHtml) {
      absl::StrAppend(&out, "<li><b>", Escape(m, n.item), "</b>: ", Escape(m, n.why), "</li>\n");
    } else {
      absl::StrAppend(&out, m == Markup::kMarkdown ? "- " : "  ", n.item, ": ", n.why, "\n");
    }
  }
  if (m == Markup::kHtml) absl::StrAppend(&out, "</ul>\n");
  return out;
}

constexpr char kStyle[] = R"(<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:1rem;color:#1d2430}
h1{font-size:1.5rem}h2{margin-top:2rem;border-bottom:1px solid #ccd}h3{font-size:1.05rem;margin:.4rem 0}
section{border:1px solid #d5d9e0;border-radius:6px;padding:.5rem .9rem;margin:.6rem 0;overflow-wrap:anywhere}
li.sub{list-style:none;color:#3b4758}code{font-size:.9em}
.status{display:inline-block;min-width:3em;text-align:center;border-radius:4px;padding:0 .3em;color:#fff;font-size:.85em;text-transform:uppercase}
.pass .status{background:#2e7d32}.warn .status{background:#b26a00}.fail .status{background:#c62828}
.check.fail{border-color:#c62828}.fix{color:#3b4758;font-style:italic}
nav a{margin-right:1rem}
</style>
)";

}  // namespace

std::string AuditText(const AuditReport& report) { return Render(report, Markup::kText); }
std::string AuditMarkdown(const AuditReport& report) { return Render(report, Markup::kMarkdown); }

std::string AuditHtml(const AuditReport& report, bool served) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>GPU isolation audit</title>\n<link rel=\"icon\" href=\"data:,\">\n",
      kStyle, "</head>\n<body>\n",
      served ? "<nav aria-label=\"Pages\"><a href=\"./\">Home</a><a href=\"picker.html\">"
               "Sharing-mode picker</a><a href=\"map.html\">GPU map</a>"
               "<a href=\"audit\" aria-current=\"page\">Isolation audit</a></nav>\n"
             : "",
      "<main>\n", Render(report, Markup::kHtml), "</main>\n</body>\n</html>\n");
}

}  // namespace views
