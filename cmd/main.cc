// gpu-tenancy: one binary, several subcommands.
#include <malloc.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cmd/commands.h"
#include "cmd/flags.h"

namespace {

constexpr char kUsage[] =
    "gpu-tenancy: GPU isolation for multi-tenant Kubernetes clusters\n\n"
    "usage: gpu-tenancy COMMAND [flags]\n\n"
    "commands:\n"
    "  serve             run the scheduler extender and admission webhook (HTTPS)\n"
    "  explain           why a pod fits or does not fit each node of a cluster file\n"
    "  plan              pick each workload's isolation, cut the cards, write the configuration\n"
    "  audit             each tenant's isolation deal and the go-live checklist\n"
    "  check             run the admission webhook's rules over manifest files, offline\n"
    "  node-agent        write which devices each GPU pod on this node got (a DaemonSet)\n"
    "  reconfigure       change a node's MIG geometry safely (drain, apply, validate, roll back)\n"
    "  scheduler-config  the kube-scheduler extender entry for every GPU resource name\n"
    "  ui                the sharing-mode picker in a browser, on a local port\n"
    "  webhook-config    the admission webhook configurations, with their matchConditions\n"
    "  version           print the version\n\n"
    "Run 'gpu-tenancy COMMAND --help' for a command's flags.\n";

#if !defined(GPU_TENANCY_WITH_JEMALLOC)
// Without jemalloc (sanitizer builds, or GPU_TENANCY_JEMALLOC=OFF; CMakeLists.txt says why the
// binary normally links it), two glibc defaults let a long-running service grow with every
// relist although nothing leaks (bench/soak: +11 to +17% RSS in four minutes of relists):
//  - the mmap threshold rises to the size of every mapped block that is freed, so later
//    megabyte-sized buffers (list pages, full-Node filter bodies) stay in a heap once freed;
//    fixing it keeps them mapped, and they go back to the kernel when freed;
//  - up to 8 heaps per core, each keeping the high-water mark of its share of the live data.
//    One heap is flat, at the price of one lock for every thread (the event loops wait on it).
// Called before any thread starts; an operator's MALLOC_MMAP_THRESHOLD_ / MALLOC_ARENA_MAX win.
void ConfigureAllocator() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
}
#else
void ConfigureAllocator() {}  // jemalloc's defaults: see CMakeLists.txt
#endif

}  // namespace

int main(int argc, char** argv) {
  ConfigureAllocator();
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "explain") return cmd::RunExplain(args);
  if (command == "plan") return cmd::RunPlan(args);
  if (command == "audit") return cmd::RunAudit(args);
  if (command == "check") return cmd::RunCheck(args);
  if (command == "serve") return cmd::RunServe(args);
  if (command == "node-agent") return cmd::RunNodeAgent(args);
  if (command == "reconfigure") return cmd::RunReconfigure(args);
  if (command == "scheduler-config") return cmd::RunSchedulerConfig(args);
  if (command == "webhook-config") return cmd::RunWebhookConfig(args);
  if (command == "ui") return cmd::RunUi(args);
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
