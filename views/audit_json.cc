// The audit as JSON (shape in views/audit_render.h).
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "views/audit_render.h"

namespace views {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, absl::string_view key, absl::string_view value) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void List(Writer& w, absl::string_view key, const std::vector<std::string>& items) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.StartArray();
  for (const std::string& s : items) w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  w.EndArray();
}

void WriteDevice(Writer& w, const HeldDevice& d) {
  w.StartObject();
  Str(w, "kind", d.kind);
  Str(w, "namespace", d.namespace_name);
  Str(w, "name", d.name);
  Str(w, "node", d.node);
  Str(w, "resource", d.resource);
  w.Key("count");
  w.Int64(d.count);
  Str(w, "boundary", BoundaryName(d.boundary));
  Str(w, "gpu", d.gpu);
  List(w, "coTenants", d.co_tenants);
  w.Key("coTenantsCertain");
  w.Bool(d.co_tenants_certain);
  Str(w, "isolation", d.isolation);
  w.EndObject();
}

void WriteTenant(Writer& w, const TenantDeal& t) {
  w.StartObject();
  Str(w, "tenant", t.tenant);
  Str(w, "tier", t.tier);
  Str(w, "modes", t.modes);
  w.Key("deviceAccess");
  w.Bool(t.device_access);
  w.Key("devices");
  w.StartArray();
  for (const HeldDevice& d : t.devices) WriteDevice(w, d);
  w.EndArray();
  w.Key("nodes");
  w.StartArray();
  for (const NodeNeighbours& n : t.nodes) {
    w.StartObject();
    Str(w, "node", n.node);
    List(w, "shared", n.shared);
    List(w, "otherTenants", n.other_tenants);
    w.EndObject();
  }
  w.EndArray();
  List(w, "limits", t.limits);
  w.Key("quota");
  w.StartArray();
  for (const topology::QuotaLine& q : t.quota) {
    w.StartObject();
    Str(w, "resource", q.resource);
    w.Key("quota");
    w.Int64(q.quota);
    w.Key("used");
    w.Int64(q.used);
    w.EndObject();
  }
  w.EndArray();
  w.Key("claimSelectors");
  w.StartArray();
  for (const ClaimSelectors& c : t.claim_selectors) {
    w.StartObject();
    Str(w, "claim", c.claim);
    Str(w, "request", c.request);
    List(w, "selectors", c.selectors);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

std::string AuditJson(const AuditReport& report) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("summary");
  w.StartObject();
  w.Key("pass");
  w.Int(report.passed);
  w.Key("warn");
  w.Int(report.warned);
  w.Key("fail");
  w.Int(report.failed);
  w.EndObject();
  w.Key("tenants");
  w.StartArray();
  for (const TenantDeal& t : report.tenants) WriteTenant(w, t);
  w.EndArray();
  w.Key("checklist");
  w.StartArray();
  for (const CheckResult& c : report.checklist) {
    w.StartObject();
    Str(w, "id", c.id);
    Str(w, "title", c.title);
    Str(w, "status", StatusName(c.status));
    Str(w, "detail", c.detail);
    w.Key("findings");
    w.StartArray();
    for (const CheckFinding& f : c.findings) {
      w.StartObject();
      Str(w, "object", f.object);
      Str(w, "problem", f.problem);
      w.EndObject();
    }
    w.EndArray();
    Str(w, "fix", c.fix);
    w.EndObject();
  }
  w.EndArray();
  w.Key("notChecked");
  w.StartArray();
  for (const NotChecked& n : report.not_checked) {
    w.StartObject();
    Str(w, "item", n.item);
    Str(w, "why", n.why);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace views
