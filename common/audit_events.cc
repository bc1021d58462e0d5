#include "common/audit_events.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {
namespace {

// Every field a line may carry, in the order lines list them; "" (or empty, or unset) is left
// out. Views into the event, which outlives the line being written.
struct AuditFields {
  absl::string_view action, decision, kind, webhook, namespace_name, pod, claim, uid;
  absl::string_view tenant, tier;
  absl::string_view node, pool, mig_profile;
  std::optional<int> gpu_index;
  const std::vector<AuditDevice>* devices = nullptr;
  const std::vector<std::string>* reserved_for = nullptr;
  const std::vector<std::string>* proposed_victims = nullptr;
  const std::vector<std::string>* victims = nullptr;
  absl::string_view step, mig_config;
  std::optional<int64_t> duration_ms;
  absl::string_view rule, reason;
};

// The pod an event is about, where it went and whose it is: binds and preempt answers.
void SetPod(AuditFields& f, const std::string& namespace_name, const std::string& pod,
            const std::string& uid, const AuditTenant& tenant, const std::string& node) {
  f.namespace_name = namespace_name;
  f.pod = pod;
  f.uid = uid;
  f.tenant = tenant.name;
  f.tier = tenant.tier;
  f.node = node;
}

AuditFields Of(const BindAudit& e) {
  AuditFields f;
  f.action = "bind";
  f.decision = e.bound ? "bound" : "failed";
  SetPod(f, e.namespace_name, e.pod, e.uid, e.tenant, e.node);
  f.pool = e.pool;
  f.mig_profile = e.mig_profile;
  f.gpu_index = e.gpu_index;
  f.reason = e.error;
  return f;
}

AuditFields Of(const AdmissionDenialAudit& e) {
  AuditFields f;
  f.action = "admission";
  f.decision = "denied";
  f.kind = e.kind;
  f.webhook = e.webhook == AdmissionDenialAudit::Webhook::kValidate ? "validate" : "mutate";
  f.namespace_name = e.namespace_name;
  f.pod = e.name;
  f.tenant = e.tenant.name;
  f.tier = e.tenant.tier;
  f.rule = e.rule;
  f.reason = e.message;
  return f;
}

AuditFields Of(const ClaimAudit& e) {
  const bool allocated = e.change == ClaimAudit::Change::kAllocated;
  AuditFields f;
  f.action = "claim";
  f.decision = allocated ? "allocated" : "released";
  f.kind = "ResourceClaim";
  f.namespace_name = e.namespace_name;
  f.claim = e.claim;
  f.uid = e.uid;
  f.tenant = e.tenant.name;
  f.tier = e.tenant.tier;
  f.node = e.node;
  f.devices = &e.devices;
  f.reserved_for = &e.reserved_for;
  if (!allocated) {
    f.reason =
        e.change == ClaimAudit::Change::kClaimDeleted ? "claim deleted" : "allocation removed";
  }
  return f;
}

AuditFields Of(const PreemptAudit& e) {
  AuditFields f;
  f.action = "preempt";
  f.decision = e.outcome == PreemptAudit::Outcome::kChanged ? "changed" : "dropped";
  SetPod(f, e.namespace_name, e.pod, e.uid, e.tenant, e.node);
  f.proposed_victims = &e.proposed_victims;
  f.victims = &e.victims;
  f.reason = e.reason;
  return f;
}

AuditFields Of(const ReconfigureAudit& e) {
  AuditFields f;
  f.action = "reconfigure";
  switch (e.outcome) {
    case ReconfigureAudit::Outcome::kOk:
      f.decision = "ok";
      break;
    case ReconfigureAudit::Outcome::kFailed:
      f.decision = "failed";
      break;
    case ReconfigureAudit::Outcome::kPlanned:
      f.decision = "planned";
      break;
  }
  f.node = e.node;
  f.step = e.step;
  f.mig_config = e.mig_config;
  f.duration_ms = e.duration_ms;
  f.reason = e.reason;
  return f;
}

}  // namespace

std::string AuditLine(const AuditEvent& event, absl::Time at) {
  const AuditFields r = std::visit([](const auto& e) { return Of(e); }, event);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto field = [&](const char* key, absl::string_view value) {
    if (value.empty()) return;
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  };
  auto list = [&](const char* key, const std::vector<std::string>* items) {
    if (!items || items->empty()) return;
    w.Key(key);
    w.StartArray();
    for (const std::string& item : *items) {
      w.String(item.data(), static_cast<rapidjson::SizeType>(item.size()));
    }
    w.EndArray();
  };
  w.StartObject();
  const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", at, absl::UTCTimeZone());
  field("time", time);
  field("action", r.action);
  field("decision", r.decision);
  field("kind", r.kind);
  field("webhook", r.webhook);
  field("namespace", r.namespace_name);
  field("pod", r.pod);
  field("claim", r.claim);
  field("uid", r.uid);
  field("tenant", r.tenant);
  field("tier", r.tier);
  field("node", r.node);
  field("pool", r.pool);
  field("migProfile", r.mig_profile);
  if (r.gpu_index) {
    w.Key("gpuIndex");
    w.Int(*r.gpu_index);
  }
  if (r.devices && !r.devices->empty()) {
    w.Key("devices");
    w.StartArray();
    for (const AuditDevice& d : *r.devices) {
      w.StartObject();
      field("device", d.device);
      field("type", d.type);
      field("uuid", d.uuid);
      field("migProfile", d.mig_profile);
      w.EndObject();
    }
    w.EndArray();
  }
  list("reservedFor", r.reserved_for);
  list("proposedVictims", r.proposed_victims);
  list("victims", r.victims);
  field("step", r.step);
  field("migConfig", r.mig_config);
  if (r.duration_ms) {
    w.Key("durationMs");
    w.Int64(*r.duration_ms);
  }
  field("rule", r.rule);
  field("reason", r.reason);
  w.EndObject();
  return absl::StrCat(absl::string_view(buffer.GetString(), buffer.GetSize()), "\n");
}

}  // namespace common
