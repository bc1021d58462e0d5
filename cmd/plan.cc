// gpu-tenancy plan: which isolation each workload gets and how to cut each card, written out as
// the configuration that does it (nvidia-smi commands, a mig-parted config and node labels, a
// device-plugin sharing config, pod resources, ResourceClaims and the policy's tenants).
//
// The decisions and their renderings are plan/'s; this file parses flags, reads the input and
// prints.
#include "plan/plan.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/plan_input.h"
#include "plan/document.h"
#include "plan/render.h"

namespace cmd {
namespace {

const common::FlagTable kFlags{
    {"gpu-tenancy plan --input FILE [--policy FILE] [-o text|yaml|json]"},
    "Sizes each workload's GPU memory, picks its isolation (MIG, whole GPU, time-slicing, MPS),\n"
    "packs MIG instances onto the fleet with valid placements only and writes the configuration.\n"
    "Exit codes: 0 a plan, 1 the workloads do not fit the fleet, 2 bad usage or input.",
    {{"input", "FILE",
      "the workloads and the fleet (schema and a worked example:\n"
      "cmd/demo/plan-example.yaml)"},
     {"policy", "FILE",
      "the policy whose memoryAnnotation the pod snippets use\n(default "
      "gpu-tenancy.io/gpu-memory)"},
     {"output", "FORMAT", "text, yaml or json (default text)", 'o'}}};

}  // namespace

int RunPlan(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  if (std::optional<int> exit_code = kFlags.ParseOrExit(args, parsed)) return *exit_code;
  const ParsedFlags* flags = &parsed;
  absl::StatusOr<std::string> output = OutputFormat(*flags, {"text", "yaml", "json"});
  if (!output.ok()) return kFlags.Refuse(output.status());
  const std::string format = *output;
  if (!flags->positional.empty()) {
    return kFlags.Refuse(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", flags->positional.front(), "\"")));
  }
  if (!flags->Has("input")) return kFlags.Refuse(absl::InvalidArgumentError("--input is required"));
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
