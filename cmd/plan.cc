// gpu-tenancy plan: which isolation each workload gets and how to cut each card, written out as
// the configuration that does it (nvidia-smi commands, a mig-parted config and node labels, a
// device-plugin sharing config, pod resources, ResourceClaims and the policy's tenants).
//
// With --from-cluster it proposes MIG re-cuts for the pending MIG pods of a cluster instead
// (plan/mig_recut.h), as mig-parted configs and the `reconfigure` commands that apply them.
//
// The decisions and their renderings are plan/'s; this file parses flags, reads the input and
// prints.
#include "plan/plan.h"

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/plan_input.h"
#include "plan/document.h"
#include "plan/mig_recut.h"
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

int PrintRecuts(const ParsedFlags& flags, const std::string& format) {
  if (flags.Has("input")) {
    return kPlanFlags.Refuse(
        absl::InvalidArgumentError("--input and --from-cluster are two different plans"));
  }
  absl::StatusOr<topology::Policy> policy = LoadPolicyFlag(flags);
  if (!policy.ok()) return Fail(policy.status());
  std::shared_ptr<const topology::ClusterSnapshot> snapshot;
  std::vector<topology::PodFacts> pods;
  if (flags.Has("cluster-file") || flags.Has("demo")) {
    absl::StatusOr<topology::ClusterData> cluster = LoadClusterFlag(flags);
    if (!cluster.ok()) return kPlanFlags.Refuse(cluster.status());
    std::vector<std::string> skipped;
    snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(*cluster, common::BuiltinCatalog(), *policy, &skipped));
    for (const std::string& why : skipped) std::cerr << "warning: pod skipped: " << why << "\n";
    pods = std::move(cluster->pods);
  } else {
    absl::StatusOr<std::shared_ptr<const topology::ModelState>> live =
        ListLive(flags, *policy, &pods);
    if (!live.ok()) return Fail(live.status());
    snapshot = (*live)->snapshot;
  }
  plan::RecutInput input = plan::RecutInputFromCluster(*snapshot, *policy, pods);
  plan::RecutProposal proposal = plan::ProposeRecuts(input.problem);
  const int exit_code = proposal.unserved.empty() ? 0 : 1;
  if (format == "json") {
    std::cout << plan::RenderJsonTree(plan::RecutTree(input, proposal)) << "\n";
    return exit_code;
  }
  absl::StatusOr<std::string> out = format == "yaml"
                                        ? plan::RenderYamlTree(plan::RecutTree(input, proposal))
                                        : plan::RecutText(input, proposal);
  if (!out.ok()) return Fail(out.status());
  if (format == "yaml") std::cout << "# gpu-tenancy plan --from-cluster\n";
  std::cout << *out;
  return exit_code;
}

}  // namespace

int RunPlan(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  if (std::optional<int> exit_code = kPlanFlags.ParseOrExit(args, parsed)) return *exit_code;
  const ParsedFlags* flags = &parsed;
  absl::StatusOr<std::string> output = OutputFormat(*flags, {"text", "yaml", "json"});
  if (!output.ok()) return kPlanFlags.Refuse(output.status());
  const std::string format = *output;
  if (!flags->positional.empty()) {
    return kPlanFlags.Refuse(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", flags->positional.front(), "\"")));
  }
  if (flags->Has("from-cluster")) return PrintRecuts(*flags, format);
  for (const char* flag : {"cluster-file", "demo", "kubeconfig", "context"}) {
    if (flags->Has(flag)) {
      return kPlanFlags.Refuse(
          absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --from-cluster")));
    }
  }
  if (!flags->Has("input")) {
    return kPlanFlags.Refuse(absl::InvalidArgumentError("--input or --from-cluster is required"));
  }
  std::string path = flags->Get("input");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return Fail(text.status());
  absl::StatusOr<plan::PlanInput> input = common::ParsePlanInput(*text);
  if (!input.ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(path, ": ", input.status().message())));
  }
  // Without --policy this is Policy::AllowAll(), whose annotation is the default one.
  absl::StatusOr<topology::Policy> policy = LoadPolicyFlag(*flags);
  if (!policy.ok()) return Fail(policy.status());
  input->memory_annotation = policy->memory_annotation;

  absl::StatusOr<plan::Plan> made = plan::MakePlan(*input, common::BuiltinCatalog());
  if (!made.ok()) {
    std::cerr << "error: " << made.status().message() << "\n";
    return made.status().code() == absl::StatusCode::kResourceExhausted ? 1 : 2;
  }
  plan::PlanDocument doc = plan::BuildDocument(*std::move(made));
  if (format == "json") {
    std::cout << plan::RenderJson(doc) << "\n";
    return 0;
  }
  absl::StatusOr<std::string> out =
      format == "yaml" ? plan::RenderYaml(doc) : plan::RenderText(doc);
  if (!out.ok()) return Fail(out.status());
  if (format == "yaml") std::cout << "# gpu-tenancy plan of " << path << "\n";
  std::cout << *out;
  return 0;
}

}  // namespace cmd
