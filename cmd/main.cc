// gpu-tenancy: one binary, several subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "cmd/commands.h"

namespace cmd {

int UsageError(const absl::Status& status, const char* usage) {
  std::cerr << "error: " << status.message() << "\n" << usage;
  return 2;
}

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 2;
}

}  // namespace cmd

namespace {

constexpr char kUsage[] =
    "gpu-tenancy: GPU isolation for multi-tenant Kubernetes clusters\n\n"
    "usage: gpu-tenancy COMMAND [flags]\n\n"
    "commands:\n"
    "  serve     run the scheduler extender and admission webhook (HTTPS)\n"
    "  explain   why a pod fits or does not fit each node of a cluster file\n"
    "  plan      pick each workload's isolation, cut the cards, write the configuration\n"
    "  check     run the admission webhook's rules over manifest files, offline\n"
    "  version   print the version\n\n"
    "Run 'gpu-tenancy COMMAND --help' for a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "explain") return cmd::RunExplain(args);
  if (command == "plan") return cmd::RunPlan(args);
  if (command == "check") return cmd::RunCheck(args);
  if (command == "serve") return cmd::RunServe(args);
  if (command == "version" || command == "--version") {
    std::cout << "gpu-tenancy " << GPU_TENANCY_VERSION << "\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "error: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
