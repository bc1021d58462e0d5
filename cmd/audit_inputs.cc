#include "cmd/audit_inputs.h"

#include <functional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "webhook/claim_rules.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"
#include "wire/k8s_codec.h"

namespace cmd {
namespace {

std::string StringAt(const common::JsonValue& object, absl::string_view section,
                     absl::string_view key) {
  const common::JsonValue* s = common::FindMember(object, section);
  const common::JsonValue* v =
      s != nullptr && s->IsObject() ? common::FindMember(*s, key) : nullptr;
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

// A continue token in a query: base64 may carry '+', '/' and '='.
std::string QueryEscape(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
  }
  return out;
}

// GETs `path` page by page, handing each page's items to `on_items`. The error says what could
// not be listed and why, as kube-apiserver put it.
absl::Status ListPages(kube::Api& api, const std::string& path, absl::string_view what,
                       const std::function<void(const common::JsonValue& items)>& on_items) {
  std::string continue_token;
  do {
    std::string url = absl::StrCat(path, "?limit=500");
    if (!continue_token.empty()) absl::StrAppend(&url, "&continue=", QueryEscape(continue_token));
    absl::StatusOr<kube::ApiResponse> r = api.Get(url);
    if (!r.ok())
      return absl::UnavailableError(absl::StrCat("listing ", what, ": ", r.status().message()));
    if (r->status != 200) {
      return absl::Status(
          r->status == 404 ? absl::StatusCode::kNotFound : absl::StatusCode::kPermissionDenied,
          absl::StrCat("listing ", what, ": ", kube::DescribeError(*r)));
    }
    absl::StatusOr<rapidjson::Document> doc = wire::ParseObjectText(r->body);
    if (!doc.ok()) {
      return absl::InternalError(absl::StrCat("listing ", what, ": ", doc.status().message()));
    }
    const common::JsonValue* items = common::FindNonNull(*doc, "items");
    if (items != nullptr && items->IsArray()) on_items(*items);
    const common::JsonValue* meta = common::FindMember(*doc, "metadata");
    continue_token = meta ? std::string(common::StringOr(*meta, "continue")) : std::string();
  } while (!continue_token.empty());
  return absl::OkStatus();
}

std::vector<const common::JsonValue*> Pointers(const common::JsonValue& items) {
  std::vector<const common::JsonValue*> out;
  for (const common::JsonValue& item : items.GetArray()) out.push_back(&item);
  return out;
}

}  // namespace

void AddEscapeHatches(const common::JsonValue& item, absl::string_view kind,
                      const topology::Policy& policy, std::vector<views::EscapeHatch>& out) {
  if (!item.IsObject()) return;
  const std::string ns = StringAt(item, "metadata", "namespace");
  const std::string name = StringAt(item, "metadata", "name");
  if (kind == "Pod") {
    absl::StatusOr<webhook::PodView> pod = webhook::ParsePodView(item, policy, ns, "pod");
    if (!pod.ok()) return;  // the snapshot skipped it too
    for (const auto& f : webhook::pod_rules_internal::DeviceAccessFindings(*pod)) {
      out.push_back({ns, absl::StrCat("pod/", ns, "/", name), f.what});
    }
  } else if (kind == "ResourceClaim" || kind == "ResourceClaimTemplate") {
    webhook::ClaimView claim = webhook::ParseClaimView(item, std::string(kind));
    for (const webhook::ClaimRequest& r : claim.requests) {
      if (!r.admin_access) continue;
      out.push_back(
          {ns,
           absl::StrCat(kind == "ResourceClaim" ? "resourceclaim/" : "resourceclaimtemplate/", ns,
                        "/", name),
           absl::StrCat("request \"", r.name, "\" asks for DRA admin access to ",
                        r.all_devices ? "all" : "any", " matching devices of class ",
                        r.device_class)});
    }
  }
}

bool HoldsWebhook(const std::vector<const common::JsonValue*>& configs, absl::string_view webhook) {
  for (const common::JsonValue* config : configs) {
    const common::JsonValue* hooks =
        config->IsObject() ? common::FindMember(*config, "webhooks") : nullptr;
    if (hooks == nullptr || !hooks->IsArray()) continue;
    for (const common::JsonValue& h : hooks->GetArray()) {
      const common::JsonValue* n = h.IsObject() ? common::FindMember(h, "name") : nullptr;
      if (n != nullptr && n->IsString() && n->GetString() == webhook) return true;
    }
  }
  return false;
}

void FileAuditInputs(const common::JsonValue& items, const topology::Policy& policy,
                     views::AuditInputs& in) {
  std::vector<views::EscapeHatch> hatches;
  std::vector<const common::JsonValue*> validating, mutating;
  for (const common::JsonValue& item : items.GetArray()) {
    if (!item.IsObject()) continue;
    const std::string kind(common::StringOr(item, "kind"));
    AddEscapeHatches(item, kind, policy, hatches);
    if (kind == "ValidatingWebhookConfiguration") validating.push_back(&item);
    if (kind == "MutatingWebhookConfiguration") mutating.push_back(&item);
  }
  in.escape_hatches = std::move(hatches);
  // Listed at all: then a missing one is a finding, not an unknown.
  if (!validating.empty() || !mutating.empty()) {
    in.wiring.validating_webhook = HoldsWebhook(validating, kValidatingWebhookName);
    in.wiring.mutating_webhook = HoldsWebhook(mutating, kMutatingWebhookName);
  } else {
    in.wiring.webhooks_unseen = "the cluster file lists no webhook configurations";
  }
}

void LiveAuditInputs(kube::Api& api, const topology::Policy& policy, views::AuditInputs& in) {
  std::vector<views::EscapeHatch> hatches;
  absl::Status pods = ListPages(api, "/api/v1/pods", "pods", [&](const common::JsonValue& items) {
    for (const common::JsonValue& item : items.GetArray()) {
      AddEscapeHatches(item, "Pod", policy, hatches);
    }
  });
  absl::Status claims = absl::OkStatus();
  if (pods.ok()) {
    // The newest resource.k8s.io version served; none at all is a cluster without DRA.
    for (const char* version : {"v1", "v1beta2", "v1beta1"}) {
      const std::string base = absl::StrCat("/apis/resource.k8s.io/", version, "/");
      absl::Status listed = ListPages(api, base + "resourceclaims", "resourceclaims",
                                      [&](const common::JsonValue& items) {
                                        for (const common::JsonValue& item : items.GetArray()) {
                                          AddEscapeHatches(item, "ResourceClaim", policy, hatches);
                                        }
                                      });
      if (absl::IsNotFound(listed)) continue;
      claims = listed.ok()
                   ? ListPages(api, base + "resourceclaimtemplates", "resourceclaimtemplates",
                               [&](const common::JsonValue& items) {
                                 for (const common::JsonValue& item : items.GetArray()) {
                                   AddEscapeHatches(item, "ResourceClaimTemplate", policy, hatches);
                                 }
                               })
                   : listed;
      break;
    }
  }
  if (!pods.ok() || !claims.ok()) {
    in.escape_hatches_unseen = std::string((pods.ok() ? claims : pods).message());
  } else {
    in.escape_hatches = std::move(hatches);
  }

  const std::string group = "/apis/admissionregistration.k8s.io/v1/";
  std::optional<bool> found[2];
  std::string unseen;
  const std::pair<const char*, absl::string_view> kinds[2] = {
      {"validatingwebhookconfigurations", kValidatingWebhookName},
      {"mutatingwebhookconfigurations", kMutatingWebhookName}};
  for (int k = 0; k < 2; ++k) {
    bool holds = false;
    absl::Status listed =
        ListPages(api, group + kinds[k].first, kinds[k].first, [&](const common::JsonValue& items) {
          holds |= HoldsWebhook(Pointers(items), kinds[k].second);
        });
    if (listed.ok()) {
      found[k] = holds;
    } else if (unseen.empty()) {
      unseen = std::string(listed.message());
    }
  }
  if (found[0] && found[1]) {
    in.wiring.validating_webhook = found[0];
    in.wiring.mutating_webhook = found[1];
  } else {
    in.wiring.webhooks_unseen = unseen;
  }
}

std::vector<views::ContractFinding> ContractFindings(
    const std::vector<guard::ContractViolation>& violations) {
  std::vector<views::ContractFinding> out;
  for (const guard::ContractViolation& v : violations) {
    // "pod/acme/train-0"; a node has no namespace: "node/mig-a".
    out.push_back({absl::StrCat(absl::AsciiStrToLower(guard::KindName(v.kind)), "/",
                                v.namespace_name, v.namespace_name.empty() ? "" : "/", v.name),
                   v.tenant, v.rule, v.message});
  }
  return out;
}

}  // namespace cmd
