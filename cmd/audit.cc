// gpu-tenancy audit: each tenant's isolation deal and the go-live checklist (views/audit.h),
// from a cluster file, the demo, or a live cluster listed once. What the snapshot does not carry
// is read beside it (cmd/audit_inputs.h): the pods' and claims' escape hatches (with the
// webhook's device-access rule) and the webhook configurations, from the cluster file or listed
// live; the extender entries from --scheduler-config; the mig-parted config from
// --mig-parted-config.
#include "cmd/audit.h"

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
#include "views/audit.h"
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

const common::FlagTable& AuditFlags() { return kAuditFlags; }

absl::StatusOr<AuditOptions> ParseAuditOptions(const ParsedFlags& flags) {
  AuditOptions out;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  ASSIGN_OR_RETURN(out.output,
                   ParseOutputFormat(flags, {OutputFormat::kText, OutputFormat::kJson,
                                             OutputFormat::kHtml, OutputFormat::kMarkdown}));
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  RETURN_IF_ERROR(CheckOneClusterSource(flags));
  ASSIGN_OR_RETURN(out.api_server, ParseKubeOptions(flags));
  ASSIGN_OR_RETURN(out.sources, ParseAuditSourceFiles(flags));
  return out;
}

int RunAudit(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kAuditFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<AuditOptions> options = ParseAuditOptions(flags);
  if (!options.ok()) return kAuditFlags.Refuse(options.status());
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());

  views::AuditInputs in;
  absl::StatusOr<AuditSources> sources = LoadAuditSources(options->sources);
  if (!sources.ok()) return Fail(sources.status());
  in.wiring.extenders = sources->extenders;
  // The geometry check and the contract's mig-drift findings read node configs through it.
  const topology::Catalog catalog = common::BuiltinCatalog().WithMigParted(sources->mig_parted);
  std::shared_ptr<const topology::ModelState> state;
  if (options->inputs.has_cluster()) {
    absl::StatusOr<topology::ClusterData> cluster = ReadCluster(options->inputs);
    if (!cluster.ok()) return Fail(cluster.status());
    // The same text again, for what the snapshot does not keep of pods, claims and webhooks.
    absl::StatusOr<std::string> text =
        !options->inputs.cluster_file.empty()
            ? ReadFile(options->inputs.cluster_file)
            : absl::StatusOr<std::string>(std::string(DemoClusterText()));
    absl::StatusOr<rapidjson::Document> doc =
        text.ok() ? wire::ParseObjectText(*text)
                  : absl::StatusOr<rapidjson::Document>(text.status());
    if (!doc.ok()) return Fail(doc.status());
    if (const common::JsonValue* items = Items(*doc)) FileAuditInputs(*items, *policy, in);
    auto model = std::make_shared<topology::ModelState>();
    model->policy = std::make_shared<const topology::Policy>(*policy);
    model->catalog = &catalog;
    model->snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*cluster, catalog, *policy));
    state = std::move(model);
  } else {
    absl::StatusOr<std::shared_ptr<const topology::ModelState>> live =
        ListLive(options->api_server, *policy, nullptr, &catalog);
    if (!live.ok()) return Fail(live.status());
    state = *std::move(live);
    // What the model keeps no trace of is listed again: pod and claim specs, the webhooks.
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> api = LiveApiClient(options->api_server);
    if (!api.ok()) return Fail(api.status());
    LiveAuditInputs(**api, *policy, in);
  }
  in.state = state.get();
  in.contract = ContractFindings(guard::CheckAll(*state->snapshot, *state->policy));
  views::AuditReport report = views::BuildAuditReport(in);
  switch (options->output) {
    case OutputFormat::kJson:
      std::cout << views::AuditJson(report) << "\n";
      break;
    case OutputFormat::kHtml:
      std::cout << views::AuditHtml(report);
      break;
    case OutputFormat::kMarkdown:
      std::cout << views::AuditMarkdown(report);
      break;
    default:
      std::cout << views::AuditText(report);
  }
  return report.failed > 0 ? 1 : 0;
}

}  // namespace cmd
