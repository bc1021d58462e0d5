#include "plan/recut_document.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "plan/render.h"
#include "topology/mig_parted.h"

namespace plan {
namespace {

using topology::PlacedInstance;

std::string Plural(int n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// Profile name -> instances on one GPU, as mig-parted configs list them.
std::vector<std::pair<std::string, int>> Counts(const std::vector<PlacedInstance>& layout) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [profile, n] : topology::CountProfiles(layout))
    out.emplace_back(profile->name, n);
  return out;
}

std::string Command(const RecutInput& input, const NodeRecut& recut) {
  const std::string& node = input.problem.nodes[recut.node].name;
  return absl::StrCat("gpu-tenancy reconfigure ", node, " --to ", RecutConfigName(node),
                      " --mig-parted-config ", kRecutConfigFile);
}

int ServedByRecuts(const RecutProposal& proposal) {
  int served = 0;
  for (const NodeRecut& r : proposal.recuts) served += static_cast<int>(r.pods.size());
  return served;
}

std::string UnservedReason(const RecutPod& pod) {
  return pod.nodes.empty()
             ? "no MIG node its tier and quota let it use could offer it"
             : "no node it may use can hold it beside the instances that node's pods hold";
}

}  // namespace

std::string RecutConfigName(absl::string_view node) {
  return absl::StrCat("gpu-tenancy-recut-", node);
}

std::vector<MigPartedConfig> RecutMigPartedConfigs(const RecutInput& input,
                                                   const RecutProposal& proposal) {
  std::vector<MigPartedConfig> out;
  for (const NodeRecut& r : proposal.recuts) {
    MigPartedConfig config{RecutConfigName(input.problem.nodes[r.node].name), {}};
    for (size_t g = 0; g < r.gpus.size(); ++g) {
      MigPartedEntry entry{{static_cast<int>(g)}, true, Counts(r.gpus[g])};
      if (!config.entries.empty() && config.entries.back().mig_devices == entry.mig_devices) {
        config.entries.back().devices.push_back(static_cast<int>(g));
      } else {
        config.entries.push_back(std::move(entry));
      }
    }
    out.push_back(std::move(config));
  }
  return out;
}

std::vector<std::string> DescribeRecut(const NodeRecut& recut) {
  topology::NodeGeometry geometry;
  for (size_t g = 0; g < recut.gpus.size(); ++g) {
    geometry.gpus.push_back({static_cast<int>(g), true, recut.gpus[g]});
  }
  return topology::DescribeGeometry(geometry);
}

std::string DrainText(const RecutNode& node) {
  if (node.drained_pods == 0) return "no GPU pods";
  return absl::StrCat(Plural(node.drained_pods, "GPU pod", "GPU pods"), " of ",
                      Plural(static_cast<int>(node.drained_tenants.size()), "tenant", "tenants"));
}

Tree RecutTree(const RecutInput& input, const RecutProposal& proposal) {
  const RecutProblem& problem = input.problem;
  const int by_recuts = ServedByRecuts(proposal);
  Tree summary = Tree::Map();
  summary.SetInt("pendingGpuPods", input.pending_pods)
      .SetInt("pendingMigPods", static_cast<int64_t>(problem.pods.size()))
      .SetInt("fitNow", static_cast<int64_t>(proposal.fits_now.size()))
      .SetInt("servedByRecuts", by_recuts)
      .SetInt("unserved", static_cast<int64_t>(proposal.unserved.size()))
      .SetInt("recutNodes", proposal.cost.recut_nodes)
      .SetInt("drainedPods", proposal.cost.drained_pods)
      .SetInt("drainedTenants", proposal.cost.drained_tenants)
      .SetBool("exhaustive", proposal.exhaustive);
  Tree recuts = Tree::List();
  for (const NodeRecut& r : proposal.recuts) {
    const RecutNode& node = problem.nodes[r.node];
    std::vector<std::string> served;
    for (size_t p : r.pods) served.push_back(problem.pods[p].name);
    Tree drains = Tree::Map();
    drains.SetInt("pods", node.drained_pods).Set("tenants", Tree::Strings(node.drained_tenants));
    Tree item = Tree::Map();
    item.SetString("node", node.name)
        .SetString("from", input.current_config[r.node])
        .SetString("to", RecutConfigName(node.name))
        .Set("gpus", Tree::Strings(DescribeRecut(r)))
        .Set("serves", Tree::Strings(served))
        .Set("drains", std::move(drains))
        .SetString("command", Command(input, r));
    recuts.Push(std::move(item));
  }
  Tree fit_now = Tree::List();
  for (const auto& [pod, node] : proposal.fits_now) {
    fit_now.Push(Tree::Map()
                     .SetString("pod", problem.pods[pod].name)
                     .SetString("node", problem.nodes[node].name));
  }
  Tree unserved = Tree::List();
  for (size_t p : proposal.unserved) {
    unserved.Push(Tree::Map()
                      .SetString("pod", problem.pods[p].name)
                      .SetString("reason", UnservedReason(problem.pods[p])));
  }
  return Tree::Map()
      .Set("summary", std::move(summary))
      .Set("recuts", std::move(recuts))
      .Set("fitNow", std::move(fit_now))
      .Set("unserved", std::move(unserved))
      .Set("skipped", Tree::Strings(input.skipped))
      .Set("migParted", MigPartedTree(RecutMigPartedConfigs(input, proposal)));
}

absl::StatusOr<std::string> RecutText(const RecutInput& input, const RecutProposal& proposal) {
  const RecutProblem& problem = input.problem;
  const int by_recuts = ServedByRecuts(proposal);
  std::string out = absl::StrCat("pending MIG pods: ", problem.pods.size(), " (",
                                 proposal.fits_now.size(), " fit now, ", by_recuts, " served by ",
                                 Plural(proposal.cost.recut_nodes, "re-cut", "re-cuts"), ", ",
                                 proposal.unserved.size(), " unserved)\n");
  if (!proposal.exhaustive) {
    absl::StrAppend(&out,
                    "the search stopped at its step budget: the re-cuts below serve what they say "
                    "but may not be the least disruptive\n");
  }
  for (const NodeRecut& r : proposal.recuts) {
    const RecutNode& node = problem.nodes[r.node];
    std::vector<std::string> served;
    for (size_t p : r.pods) served.push_back(problem.pods[p].name);
    absl::StrAppend(
        &out, "\nre-cut ", node.name, " from ",
        input.current_config[r.node].empty() ? "(no config label)" : input.current_config[r.node],
        " to ", RecutConfigName(node.name), "\n");
    for (const std::string& gpu : DescribeRecut(r)) absl::StrAppend(&out, "  ", gpu, "\n");
    absl::StrAppend(&out, "  serves  ", absl::StrJoin(served, ", "), "\n");
    absl::StrAppend(&out, "  drains  ", DrainText(node),
                    node.drained_tenants.empty()
                        ? ""
                        : absl::StrCat(" (", absl::StrJoin(node.drained_tenants, ", "), ")"),
                    "\n");
    absl::StrAppend(&out, "  run     ", Command(input, r), "\n");
  }
  if (!proposal.fits_now.empty()) absl::StrAppend(&out, "\nfit without a re-cut:\n");
  for (const auto& [pod, node] : proposal.fits_now) {
    absl::StrAppend(&out, "  ", problem.pods[pod].name, " on ", problem.nodes[node].name, "\n");
  }
  if (!proposal.unserved.empty()) absl::StrAppend(&out, "\nno re-cut serves:\n");
  for (size_t p : proposal.unserved) {
    absl::StrAppend(&out, "  ", problem.pods[p].name, ": ", UnservedReason(problem.pods[p]), "\n");
  }
  for (const std::string& why : input.skipped) absl::StrAppend(&out, "\nskipped ", why, "\n");
  if (!proposal.recuts.empty()) {
    ASSIGN_OR_RETURN(std::string yaml,
                     RenderYamlTree(MigPartedTree(RecutMigPartedConfigs(input, proposal))));
    absl::StrAppend(&out, "\nmig-parted config (or save `-o yaml` as ", kRecutConfigFile,
                    ": reconfigure reads its migParted key):\n", yaml);
  }
  return out;
}

std::string RecutAdvice(const RecutInput& input, const RecutProposal& proposal) {
  if (proposal.recuts.empty()) return "";
  const NodeRecut& r = proposal.recuts.front();
  const RecutNode& node = input.problem.nodes[r.node];
  return absl::StrCat("fits if ", node.name, " is re-cut to ", RecutConfigName(node.name), " [",
                      absl::StrJoin(DescribeRecut(r), ", "), "] (drains ", DrainText(node), ")");
}

}  // namespace plan
