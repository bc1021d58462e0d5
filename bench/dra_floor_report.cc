#include "bench/dra_floor_report.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dra_floor {
namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

std::string Us(double us) {
  return us >= 1000 ? absl::StrFormat("%.2f ms", us / 1000) : absl::StrFormat("%.0f us", us);
}
std::string Ratio(double a, double b) { return b > 0 ? absl::StrFormat("%.2fx", a / b) : "n/a"; }

std::vector<double> AllOf(const std::array<std::vector<double>, kKinds>& by_kind) {
  std::vector<double> all;
  for (const auto& v : by_kind) all.insert(all.end(), v.begin(), v.end());
  return all;
}
std::vector<double> All(const Webhook& w) { return AllOf(w.latency_us); }
std::vector<double> AllHandler(const Webhook& w) { return AllOf(w.handler_us); }

}  // namespace

std::string Report(const Run& run, const Options& opt) {
  const Webhook& floor = run.webhooks[0];
  std::string md = absl::StrCat(
      "## DRA admission on the live path against a do-nothing webhook (dra_floor)\n\n",
      "`bench/dra_floor.cc`: the real binary (`serve --kubeconfig`, one replica) follows the "
      "kube-apiserver emulation holding ",
      opt.nodes, " nodes whose ResourceSlices offer ", opt.gpus,
      " whole H100s each (NVIDIA's attributes), the chart's DeviceClasses and, as the run "
      "goes, ",
      opt.store ? "every pod and claim it admitted (stored, their claim statuses and allocations "
                  "written as kube-controller-manager and kube-scheduler would)"
                : "nothing of what it admits (--without-store: the admission path alone)",
      ". Per pod, kube-apiserver's "
      "four reviews for a pod with its own claim from a ResourceClaimTemplate (pod CREATE mutate "
      "and validate, then the claim's), the captured v1.36 bodies renamed; ",
      opt.creators, " keep-alive connections start pods open-loop at ", opt.rate, " pods/s, ",
      opt.pods, " pods per phase, ", opt.reps,
      " phases per webhook, their order rotated each rep. The do-nothing webhook "
      "(`bench/noop_webhook.cc`) is gpu-tenancy's own TLS listener answering on its event loop "
      "after parsing the review",
      opt.store ? "; what it admits is stored alike, in an emulation of its own that nobody "
                  "watches (kube-apiserver stores every pod and claim whatever its webhooks), so "
                  "every webhook's claim reviews follow the same store"
                : "",
      ". Tenants `open` and `metered` have the same tier and "
      "`gpuMemoryPerPod: 80Gi`, which the published H100s (81559Mi each) imply, so their claims "
      "get the annotation and no selector; `metered` also has a claim quota (its usage record "
      "held ",
      run.record_entries, " reservations at the end and was written ", run.record_writes,
      " times, by claims that found no budget open and by refills ahead of need: every other "
      "claim was admitted from the replica's budget). CPU per review: the webhook process's "
      "CPU (every thread: watches, leader election and all) over the phase, divided by its "
      "reviews.\n\n",
      absl::StrFormat("Load average before: %s; after: %s. While the phases ran, the rest of the "
                      "machine used %.2f of its %d cores on average, this process (clients and "
                      "emulation) %.2f, and gpu-tenancy %.3f while only watching (during the "
                      "do-nothing phases).\n\n",
                      run.load_before, run.load_after, run.others_cores,
                      static_cast<int>(std::thread::hardware_concurrency()), run.bench_cores,
                      run.serve_idle_cores),
      "Handler p50 and p99: the review's time in the webhook's handler (its Server-Timing "
      "header): the rest of a round trip is TLS, HTTP, the network and waiting for a CPU.\n\n"
      "| webhook | review | reviews | p50 | p99 | p50 / do-nothing | p99 / do-nothing | "
      "handler p50 | handler p99 |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const Webhook& w : run.webhooks) {
    for (int kind = -1; kind < kKinds; ++kind) {
      std::vector<double> mine = kind < 0 ? All(w) : w.latency_us[kind];
      std::vector<double> base = kind < 0 ? All(floor) : floor.latency_us[kind];
      std::vector<double> handler = kind < 0 ? AllHandler(w) : w.handler_us[kind];
      const double p50 = Percentile(mine, 0.5), p99 = Percentile(mine, 0.99);
      absl::StrAppend(&md, "| ", kind < 0 ? absl::StrCat("**", w.name, "**") : "", " | ",
                      kind < 0 ? "all" : kKindNames[kind], " | ", mine.size(), " | ", Us(p50),
                      " | ", Us(p99), " | ", &w == &floor ? "" : Ratio(p50, Percentile(base, 0.5)),
                      " | ", &w == &floor ? "" : Ratio(p99, Percentile(base, 0.99)), " | ",
                      Us(Percentile(handler, 0.5)), " | ", Us(Percentile(handler, 0.99)), " |\n");
    }
  }
  absl::StrAppend(&md,
                  "\n| webhook | pods/s achieved | CPU per review | / do-nothing |\n"
                  "|---|---|---|---|\n");
  const double floor_cpu = floor.reviews ? floor.cpu_seconds / floor.reviews : 0;
  for (const Webhook& w : run.webhooks) {
    const double cpu = w.reviews ? w.cpu_seconds / w.reviews : 0;
    absl::StrAppend(&md, "| ", w.name, " | ",
                    absl::StrFormat("%.1f", w.wall_seconds > 0 ? w.pods / w.wall_seconds : 0),
                    " | ", Us(cpu * 1e6), " | ", &w == &floor ? "" : Ratio(cpu, floor_cpu), " |\n");
  }
  absl::StrAppend(&md, "\nCPU per review by what the webhook process's threads do:\n\n| webhook |");
  for (const char* role : kRoleNames) absl::StrAppend(&md, " ", role, " |");
  absl::StrAppend(&md, "\n|---|---|---|---|---|\n");
  for (const Webhook& w : run.webhooks) {
    absl::StrAppend(&md, "| ", w.name, " |");
    for (double seconds : w.cpu_by_role) {
      absl::StrAppend(&md, " ", Us(w.reviews ? seconds / w.reviews * 1e6 : 0), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  absl::StrAppend(&md, "\n| target | measured | |\n|---|---|---|\n");
  for (size_t i = 1; i < run.webhooks.size(); ++i) {
    const Webhook& w = run.webhooks[i];
    const double bound = w.ns == "team-quota" ? 1.5 : 1.2;
    for (int kind = -1; kind < kKinds; ++kind) {
      if (kind >= 0 && kind != kClaimValidate) continue;
      std::vector<double> mine = kind < 0 ? All(w) : w.latency_us[kind];
      std::vector<double> base = kind < 0 ? All(floor) : floor.latency_us[kind];
      for (double q : {0.5, 0.99}) {
        const double a = Percentile(mine, q), b = Percentile(base, q);
        absl::StrAppend(&md, "| ", w.name, ", ", kind < 0 ? "all reviews" : kKindNames[kind], ": p",
                        static_cast<int>(q * 100), " <= ", absl::StrFormat("%.1f", bound),
                        "x do-nothing | ", Ratio(a, b), " (", Us(a), " vs ", Us(b), ") | ",
                        a <= bound * b ? "met" : "**MISSED**", " |\n");
      }
    }
  }
  return md;
}

}  // namespace dra_floor
