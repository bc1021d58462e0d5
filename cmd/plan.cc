// gpu-tenancy plan: which isolation each workload gets and how to cut each card, written out as
// the configuration that does it (nvidia-smi commands, a mig-parted config and node labels, a
// device-plugin sharing config, pod resources, ResourceClaims and the policy's tenants).
//
// With --from-cluster it proposes MIG re-cuts for the pending MIG pods of a cluster instead
// (plan/mig_recut.h), as mig-parted configs and the `reconfigure` commands that apply them.
//
// The decisions and their renderings are plan/'s; this file parses its options, reads the
// input and prints.
#include "cmd/plan.h"

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/plan_input.h"
#include "plan/document.h"
#include "plan/mig_recut.h"
#include "plan/plan.h"
#include "plan/recut_document.h"
#include "plan/recut_input.h"
#include "plan/render.h"

namespace cmd {
namespace {

const common::FlagTable kPlanFlags{
    {"gpu-tenancy plan --input FILE [--policy FILE] [-o text|yaml|json]",
     "gpu-tenancy plan --from-cluster (--cluster-file FILE | --demo |\n"
     "                 [--kubeconfig FILE [--context N]]) [--policy FILE] [-o text|yaml|json]"},
    "Sizes each workload's GPU memory, picks its isolation (MIG, whole GPU, time-slicing, MPS),\n"
    "packs MIG instances onto the fleet with valid placements only and writes the configuration.\n"
    "With --from-cluster: proposes the MIG re-cuts that serve the cluster's pending MIG pods\n"
    "with the least disruption (fewest GPU pods, then tenants drained), as mig-parted configs\n"
    "and the `gpu-tenancy reconfigure` commands that apply them. It changes nothing.\n"
    "Exit codes: 0 a plan (every pending MIG pod served), 1 the workloads do not fit the fleet\n"
    "(some pending MIG pod stays unserved), 2 bad usage or input.",
    {{"input", "FILE",
      "the workloads and the fleet (schema and a worked example:\n"
      "cmd/demo/plan-example.yaml)"},
     {"from-cluster", "", "propose re-cuts for the pending MIG pods of a cluster"},
     {"cluster-file", "FILE", "with --from-cluster: kubectl get namespaces,nodes,pods -A -o json"},
     {"demo", "", "with --from-cluster: the embedded demo cluster and policy"},
     {"kubeconfig", "FILE",
      "with --from-cluster: list the cluster from this kubeconfig's API\n"
      "server (default: in-cluster service account)"},
     {"context", "NAME", "the kubeconfig context (default: its current-context)"},
     {"policy", "FILE",
      "the policy whose memoryAnnotation the pod snippets use\n(default "
      "gpu-tenancy.io/gpu-memory)"},
     {"output", "FORMAT", "text, yaml or json (default text)", 'o'}}};

int PrintRecuts(const PlanOptions& options) {
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options.inputs);
  if (!policy.ok()) return Fail(policy.status());
  std::shared_ptr<const topology::ClusterSnapshot> snapshot;
  std::vector<topology::PodFacts> pods;
  if (options.inputs.has_cluster()) {
    absl::StatusOr<topology::ClusterData> cluster = ReadCluster(options.inputs);
    if (!cluster.ok()) return kPlanFlags.Refuse(cluster.status());
    std::vector<std::string> skipped;
    snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*cluster, common::BuiltinCatalog(), *policy, &skipped));
    for (const std::string& why : skipped) std::cerr << "warning: pod skipped: " << why << "\n";
    pods = std::move(cluster->pods);
  } else {
    absl::StatusOr<std::shared_ptr<const topology::ModelState>> live =
        ListLive(options.api_server, *policy, &pods);
    if (!live.ok()) return Fail(live.status());
    snapshot = (*live)->snapshot;
  }
  plan::RecutInput input = plan::RecutInputFromCluster(*snapshot, *policy, pods);
  plan::RecutProposal proposal = plan::ProposeRecuts(input.problem);
  const int exit_code = proposal.unserved.empty() ? 0 : 1;
  if (options.output == OutputFormat::kJson) {
    std::cout << plan::RenderJsonTree(plan::RecutTree(input, proposal)) << "\n";
    return exit_code;
  }
  const bool yaml = options.output == OutputFormat::kYaml;
  absl::StatusOr<std::string> out = yaml ? plan::RenderYamlTree(plan::RecutTree(input, proposal))
                                         : plan::RecutText(input, proposal);
  if (!out.ok()) return Fail(out.status());
  if (yaml) std::cout << "# gpu-tenancy plan --from-cluster\n";
  std::cout << *out;
  return exit_code;
}

}  // namespace

const common::FlagTable& PlanFlags() { return kPlanFlags; }

absl::StatusOr<PlanOptions> ParsePlanOptions(const ParsedFlags& flags) {
  PlanOptions out;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  ASSIGN_OR_RETURN(out.output, ParseOutputFormat(flags, {OutputFormat::kText, OutputFormat::kYaml,
                                                         OutputFormat::kJson}));
  ASSIGN_OR_RETURN(out.input, NonEmptyFlag(flags, "input", "a file"));
  out.from_cluster = flags.Has("from-cluster");
  if (out.from_cluster && flags.Has("input")) {
    return absl::InvalidArgumentError("--input and --from-cluster are two different plans");
  }
  if (!out.from_cluster) {
    for (const char* flag : {"cluster-file", "demo", "kubeconfig", "context"}) {
      if (flags.Has(flag)) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --from-cluster"));
      }
    }
    if (out.input.empty()) {
      return absl::InvalidArgumentError("--input or --from-cluster is required");
    }
  }
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  RETURN_IF_ERROR(CheckOneClusterSource(flags));
  ASSIGN_OR_RETURN(out.api_server, ParseKubeOptions(flags));
  return out;
}

int RunPlan(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kPlanFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<PlanOptions> options = ParsePlanOptions(flags);
  if (!options.ok()) return kPlanFlags.Refuse(options.status());
  if (options->from_cluster) return PrintRecuts(*options);
  const std::string& path = options->input;
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return Fail(text.status());
  absl::StatusOr<plan::PlanInput> input = common::ParsePlanInput(*text);
  if (!input.ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(path, ": ", input.status().message())));
  }
  // Without --policy this is Policy::AllowAll(), whose annotation is the default one.
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());
  input->memory_annotation = policy->memory_annotation;

  absl::StatusOr<plan::Plan> made = plan::MakePlan(*input, common::BuiltinCatalog());
  if (!made.ok()) {
    std::cerr << "error: " << made.status().message() << "\n";
    return made.status().code() == absl::StatusCode::kResourceExhausted ? 1 : 2;
  }
  plan::PlanDocument doc = plan::BuildDocument(*std::move(made));
  if (options->output == OutputFormat::kJson) {
    std::cout << plan::RenderJson(doc) << "\n";
    return 0;
  }
  const bool yaml = options->output == OutputFormat::kYaml;
  absl::StatusOr<std::string> out = yaml ? plan::RenderYaml(doc) : plan::RenderText(doc);
  if (!out.ok()) return Fail(out.status());
  if (yaml) std::cout << "# gpu-tenancy plan of " << path << "\n";
  std::cout << *out;
  return 0;
}

}  // namespace cmd
