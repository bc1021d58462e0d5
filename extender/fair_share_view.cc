#include "extender/fair_share_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace extender {

std::vector<ShareLine> ShareLines(const topology::TenantShare& share,
                                  const std::set<std::string, std::less<>>& items) {
  std::vector<ShareLine> out;
  for (const std::string& item : items) {
    ShareLine line;
    line.resource = item;
    line.guaranteed = share.Guaranteed(item);
    if (auto it = share.limit.find(item); it != share.limit.end()) line.limit = it->second;
    line.held = share.Held(item);
    if (auto it = share.pending.find(item); it != share.pending.end()) line.pending = it->second;
    if (auto it = share.borrowed.find(item); it != share.borrowed.end()) {
      line.borrowed = it->second;
    }
    if (auto it = share.lent.find(item); it != share.lent.end()) line.lent = it->second;
    if (auto it = share.fair_share.find(item); it != share.fair_share.end()) {
      line.fair_share = it->second;
    }
    out.push_back(std::move(line));
  }
  return out;
}

void AppendShareMetrics(const topology::FairShareLedger& ledger, common::MetricsText& out) {
  using common::MetricsText;
  struct Family {
    absl::string_view name, help;
    std::optional<double> (*value)(const ShareLine&);
  };
  const Family families[] = {
      {"gpu_tenancy_tenant_guaranteed",
       "Fair sharing: what a tenant is guaranteed of a quota item (policy tenants[].guaranteed).",
       [](const ShareLine& l) -> std::optional<double> { return l.guaranteed; }},
      {"gpu_tenancy_tenant_held",
       "Fair sharing: what a tenant's pods and allocated claims hold of a quota item.",
       [](const ShareLine& l) -> std::optional<double> { return l.held; }},
      {"gpu_tenancy_tenant_borrowed",
       "Fair sharing: what a tenant holds beyond its guarantee, from capacity others leave idle.",
       [](const ShareLine& l) -> std::optional<double> { return l.borrowed; }},
      {"gpu_tenancy_tenant_lent",
       "Fair sharing: the part of a tenant's unused guarantee other tenants' borrowing occupies.",
       [](const ShareLine& l) -> std::optional<double> { return l.lent; }},
      {"gpu_tenancy_tenant_fair_share",
       "Fair sharing: a tenant's weighted fair share of a quota item, given what every tenant "
       "holds and waits for.",
       [](const ShareLine& l) { return l.fair_share; }},
  };
  for (const Family& family : families) {
    out.Family(family.name, MetricsText::kGauge, family.help);
    for (const topology::TenantShare& share : ledger.tenants) {
      for (const ShareLine& line : ShareLines(share, ledger.items)) {
        if (std::optional<double> v = family.value(line)) {
          out.Sample(family.name, {{"tenant", share.name}, {"resource", line.resource}}, *v);
        }
      }
    }
  }
}

std::string ShareText(const topology::TenantShare& share,
                      const std::set<std::string, std::less<>>& items) {
  std::vector<std::string> parts;
  for (const ShareLine& line : ShareLines(share, items)) {
    auto n = [&](double amount) { return topology::ItemAmountText(line.resource, amount); };
    std::string text = absl::StrCat(line.resource, ": guaranteed ", n(line.guaranteed));
    if (line.limit) absl::StrAppend(&text, ", limit ", n(*line.limit));
    absl::StrAppend(&text, ", holds ", n(line.held));
    if (line.borrowed > 0) absl::StrAppend(&text, " (borrows ", n(line.borrowed), ")");
    if (line.pending > 0) absl::StrAppend(&text, ", waits for ", n(line.pending));
    if (line.lent > 0) absl::StrAppend(&text, ", lends ", n(line.lent));
    if (line.fair_share) absl::StrAppend(&text, ", fair share ", n(*line.fair_share));
    parts.push_back(std::move(text));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace extender
