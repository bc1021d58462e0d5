// gpu-tenancy audit: each tenant's isolation deal and the go-live checklist (views/audit.h),
// from a cluster file, the demo, or a live cluster listed once. What the snapshot does not carry
// is read beside it (cmd/audit_inputs.h): the pods' and claims' escape hatches (with the
// webhook's device-access rule) and the webhook configurations, from the cluster file or listed
// live; the extender entries from --scheduler-config; the mig-parted config from
// --mig-parted-config.
#include "views/audit.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cmd/audit_inputs.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "kube/api_client.h"
#include "views/audit_render.h"
#include "wire/k8s_codec.h"

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
  in.wiring.extenders = sources->extenders;
  std::shared_ptr<const topology::ModelState> state;
  if (flags->Has("cluster-file") || flags->Has("demo")) {
    absl::StatusOr<topology::ClusterData> cluster = LoadClusterFlag(*flags);
    if (!cluster.ok()) return Fail(cluster.status());
    // The same text again, for what the snapshot does not keep of pods, claims and webhooks.
    absl::StatusOr<std::string> text =
        flags->Has("cluster-file") ? ReadFile(flags->Get("cluster-file"))
                                   : absl::StatusOr<std::string>(std::string(DemoClusterText()));
    absl::StatusOr<rapidjson::Document> doc =
        text.ok() ? wire::ParseObjectText(*text)
                  : absl::StatusOr<rapidjson::Document>(text.status());
    if (!doc.ok()) return Fail(doc.status());
    if (const common::JsonValue* items = Items(*doc)) FileAuditInputs(*items, *policy, in);
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
    // What the model keeps no trace of is listed again: pod and claim specs, the webhooks.
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> api = LiveApiClient(*flags);
    if (!api.ok()) return Fail(api.status());
    LiveAuditInputs(**api, *policy, in);
  }
  in.state = state.get();
  in.contract = ContractFindings(guard::CheckAll(*state->snapshot, *state->policy));
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
