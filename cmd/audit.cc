// gpu-tenancy audit: each tenant's isolation deal and the go-live checklist (views/audit.h),
// from a cluster file, the demo, or a live cluster listed once. What the snapshot does not carry
// is read here: the pods' and claims' escape hatches (with the webhook's device-access rule) and
// the webhook configurations from a cluster file, the extender's managedResources from
// --scheduler-config, the mig-parted config from --mig-parted-config.
#include "views/audit.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "common/k8s_codec.h"
#include "topology/status_macros.h"
#include "views/audit_render.h"
#include "webhook/claim_rules.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"

namespace cmd {
namespace {

const common::FlagTable kAuditFlags{
    {"gpu-tenancy audit (--cluster-file FILE | --demo | [--kubeconfig FILE [--context N]])\n"
     "                         [--policy FILE] [--mig-parted-config FILE]\n"
     "                         [--scheduler-config FILE] [-o text|json|html|markdown]"},
    "Each tenant's isolation deal and the go-live checklist. Without a cluster file (or --demo)\n"
    "the cluster is listed once from kube-apiserver. Exit 1 if any item fails.",
    {{"cluster-file", "FILE",
      "kubectl get namespaces,nodes,pods,resourceclaims,resourceslices,\n"
      "deviceclasses,validatingwebhookconfigurations,\n"
      "mutatingwebhookconfigurations -A -o json"},
     {"demo", "", "the embedded demo cluster and policy"},
     {"kubeconfig", "FILE",
      "read the cluster from this kubeconfig's API server (default:\n"
      "in-cluster service account)"},
     {"context", "NAME", "the kubeconfig context (default: its current-context)"},
     {"policy", "FILE", "the tenancy policy (default: allow everything; --demo: the demo's)"},
     {"mig-parted-config", "FILE", "the mig-parted config the MIG geometries are compared with"},
     {"scheduler-config", "FILE", "the KubeSchedulerConfiguration holding the extender entry"},
     {"output", "FORMAT", "text, json, html or markdown (default text)", 'o'}}};

const common::JsonValue* Items(const common::JsonValue& doc) {
  const common::JsonValue* items = common::FindMember(doc, "items");
  return items != nullptr && items->IsArray() ? items : nullptr;
}

std::string StringAt(const common::JsonValue& object, absl::string_view section,
                     absl::string_view key) {
  const common::JsonValue* s = common::FindMember(object, section);
  const common::JsonValue* v =
      s != nullptr && s->IsObject() ? common::FindMember(*s, key) : nullptr;
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

// The device-access findings of every pod and the admin-access requests of every claim.
std::vector<views::EscapeHatch> EscapeHatches(const common::JsonValue& items,
                                              const topology::Policy& policy) {
  std::vector<views::EscapeHatch> out;
  for (const common::JsonValue& item : items.GetArray()) {
    if (!item.IsObject()) continue;
    const common::JsonValue* kind = common::FindMember(item, "kind");
    if (kind == nullptr || !kind->IsString()) continue;
    const std::string k = kind->GetString();
    const std::string ns = StringAt(item, "metadata", "namespace");
    const std::string name = StringAt(item, "metadata", "name");
    if (k == "Pod") {
      absl::StatusOr<webhook::PodView> pod = webhook::ParsePodView(item, policy, ns, "pod");
      if (!pod.ok()) continue;  // the snapshot skipped it too
      for (const auto& f : webhook::pod_rules_internal::DeviceAccessFindings(*pod)) {
        out.push_back({ns, absl::StrCat("pod/", ns, "/", name), f.what});
      }
    } else if (k == "ResourceClaim" || k == "ResourceClaimTemplate") {
      webhook::ClaimView claim = webhook::ParseClaimView(item, k);
      for (const webhook::ClaimRequest& r : claim.requests) {
        if (!r.admin_access) continue;
        out.push_back(
            {ns,
             absl::StrCat(k == "ResourceClaim" ? "resourceclaim/" : "resourceclaimtemplate/", ns,
                          "/", name),
             absl::StrCat("request \"", r.name, "\" asks for DRA admin access to ",
                          r.all_devices ? "all" : "any", " matching devices of class ",
                          r.device_class)});
      }
    }
  }
  return out;
}

// Whether the listed webhook configurations hold a webhook named `webhook`.
bool HasWebhook(const common::JsonValue& items, absl::string_view kind, absl::string_view webhook) {
  for (const common::JsonValue& item : items.GetArray()) {
    if (!item.IsObject()) continue;
    const common::JsonValue* k = common::FindMember(item, "kind");
    if (k == nullptr || !k->IsString() || k->GetString() != kind) continue;
    const common::JsonValue* hooks = common::FindMember(item, "webhooks");
    if (hooks == nullptr || !hooks->IsArray()) continue;
    for (const common::JsonValue& h : hooks->GetArray()) {
      const common::JsonValue* n = h.IsObject() ? common::FindMember(h, "name") : nullptr;
      if (n != nullptr && n->IsString() && n->GetString() == webhook) return true;
    }
  }
  return false;
}

bool ListsKind(const common::JsonValue& items, absl::string_view kind) {
  for (const common::JsonValue& item : items.GetArray()) {
    const common::JsonValue* k = item.IsObject() ? common::FindMember(item, "kind") : nullptr;
    if (k != nullptr && k->IsString() && k->GetString() == kind) return true;
  }
  return false;
}

}  // namespace

int RunAudit(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  if (std::optional<int> exit_code = kAuditFlags.ParseOrExit(args, parsed)) return *exit_code;
  const ParsedFlags* flags = &parsed;
  if (!flags->positional.empty()) {
    return kAuditFlags.Refuse(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", flags->positional[0], "\"")));
  }
  absl::StatusOr<std::string> format = OutputFormat(*flags, {"text", "json", "html", "markdown"});
  if (!format.ok()) return kAuditFlags.Refuse(format.status());
  absl::StatusOr<topology::Policy> policy = LoadPolicyFlag(*flags);
  if (!policy.ok()) return Fail(policy.status());

  views::AuditInputs in;
  absl::StatusOr<AuditSources> sources = LoadAuditSources(*flags);
  if (!sources.ok()) return Fail(sources.status());
  in.mig_parted = sources->mig_parted.get();
  in.wiring.managed_resources = sources->managed_resources;
  std::shared_ptr<const topology::ModelState> state;
  if (flags->Has("cluster-file") || flags->Has("demo")) {
    absl::StatusOr<topology::ClusterData> cluster = LoadClusterFlag(*flags);
    if (!cluster.ok()) return Fail(cluster.status());
    // The same text again, for what the snapshot does not keep of pods, claims and webhooks.
    absl::StatusOr<std::string> text =
        flags->Has("cluster-file") ? ReadFile(flags->Get("cluster-file"))
                                   : absl::StatusOr<std::string>(std::string(DemoClusterText()));
    absl::StatusOr<rapidjson::Document> doc =
        text.ok() ? common::ParseObjectText(*text)
                  : absl::StatusOr<rapidjson::Document>(text.status());
    if (!doc.ok()) return Fail(doc.status());
    if (const common::JsonValue* items = Items(*doc)) {
      in.escape_hatches = EscapeHatches(*items, *policy);
      // Listed at all: then a missing one is a finding, not an unknown.
      if (ListsKind(*items, "ValidatingWebhookConfiguration") ||
          ListsKind(*items, "MutatingWebhookConfiguration")) {
        in.wiring.validating_webhook =
            HasWebhook(*items, "ValidatingWebhookConfiguration", "validate.gpu-tenancy.io");
        in.wiring.mutating_webhook =
            HasWebhook(*items, "MutatingWebhookConfiguration", "mutate.gpu-tenancy.io");
      }
    }
    auto model = std::make_shared<topology::ModelState>();
    model->policy = std::make_shared<const topology::Policy>(*policy);
    model->catalog = &common::BuiltinCatalog();
    model->snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*cluster, common::BuiltinCatalog(), *policy));
    state = std::move(model);
  } else {
    absl::StatusOr<std::shared_ptr<const topology::ModelState>> live = ListLive(*flags, *policy);
    if (!live.ok()) return Fail(live.status());
    state = *std::move(live);
  }
  in.state = state.get();
  views::AuditReport report = views::BuildAuditReport(in);
  if (*format == "json") {
    std::cout << views::AuditJson(report) << "\n";
  } else if (*format == "html") {
    std::cout << views::AuditHtml(report);
  } else if (*format == "markdown") {
    std::cout << views::AuditMarkdown(report);
  } else {
    std::cout << views::AuditText(report);
  }
  return report.failed > 0 ? 1 : 0;
}

}  // namespace cmd
