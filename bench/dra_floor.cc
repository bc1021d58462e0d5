// dra_floor: gpu-tenancy's admission webhooks on the live path against a do-nothing HTTPS
// webhook, in the same run, with and without a claim quota.
//
// The kube-apiserver emulation (test/support/fake_apiserver.h) holds a DRA cluster shaped like
// NVIDIA's driver publishes it (--nodes nodes, --gpus whole H100s each in ResourceSlices, the
// chart's DeviceClasses). The real binary follows it (`serve --kubeconfig`, one replica, leader
// election on) with a policy of two tenants that differ only in a claim quota: `open`
// (namespace team-open, gpuMemoryPerPod: 80Gi) and `metered` (team-quota, the same and a quota
// far above what the run takes). The do-nothing webhook (bench/noop_webhook.cc) runs the same
// TLS listener and parses each review, nothing more.
//
// The load is what kube-apiserver sends while a Deployment's pods, each with its own claim from a
// ResourceClaimTemplate, are created (bench/dra_floor_objects.h): per pod, the pod's CREATE to
// the mutating and then the validating webhook, and the claim's (made by
// kube-controller-manager) likewise; the bodies are the captured v1.36 reviews, and what each
// validating webhook gets carries the mutation the namespace's tenant gets. --creators client
// threads, each with its own keep-alive connection, start pods open-loop at --rate pods/s in
// all. The objects are then stored as kube-apiserver, kube-controller-manager and
// kube-scheduler would store them (the pod, the claim, the pod's claim status, the claim's
// allocation): gpu-tenancy's in the emulation it follows, so its watches carry them and the
// quota counts them; the do-nothing webhook's in a second emulation nobody watches, so that
// every webhook's claim reviews follow the same store and gpu-tenancy's watches are its own cost.
//
// Phases of --pods pods each, --reps times for each webhook (do-nothing, open, metered), their
// order rotated every rep so slow moments of a shared machine fall on all of them: short phases
// (50 pods, 1.25 s at 40 pods/s) and many reps, since a shared machine's slow spells last
// seconds and a phase they fall on moves its webhook's figures: over one day on one machine the
// no-quota p50 ratio of one build ranged 1.12x-1.63x in 16 runs of 3 phases of 200 pods, and
// 1.18x-1.34x in 4 runs of 12 phases of 50. Reported:
// per webhook and review kind, round-trip p50 / p99 and the ratio to the do-nothing webhook;
// CPU per review of the webhook process (all its threads, watches included); what the rest of
// the machine used meanwhile.
//
//   dra_floor [--nodes 500] [--gpus 20] [--pods 50] [--reps 12] [--rate 40] [--creators 4]
//             [--md FILE] [--keep-logs DIR]
//   dra_floor --smoke   a few pods once per webhook: checks that every reply is 200 and allowed
//                       and that the stored claims reach the usage record; asserts no timing.
#include <httplib.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "bench/bench_process.h"
#include "bench/dra_floor_objects.h"
#include "bench/dra_floor_report.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "webhook/json_patch.h"

#ifndef BENCH_TESTDATA_DIR
#error "BENCH_TESTDATA_DIR: the captured reviews"
#endif
#ifndef BENCH_NOOP_WEBHOOK
#error "BENCH_NOOP_WEBHOOK: the do-nothing webhook's binary"
#endif

namespace dra_floor {
namespace {

using bench::dra_floor::PodLoad;
using bench::dra_floor::ReviewFactory;
using Clock = std::chrono::steady_clock;
using testing_support::FakeApiServer;
using testing_support::Resource;
using testing_support::ServeProcess;

constexpr char kRecordNamespace[] = "gpu-tenancy-system";

// The roles of kRoleNames (dra_floor_report.h), by thread name.
size_t RoleOf(absl::string_view thread) {
  if (thread == "loop") return 0;
  if (thread == "worker" || thread == "op-handler" || thread == "budget-refill") return 1;
  if (absl::StartsWith(thread, "w-") || absl::StartsWith(thread, "dra-")) return 2;
  return 3;
}
std::array<double, 4> CpuByRole(pid_t pid) {
  std::array<double, 4> out{};
  for (const auto& [name, seconds] : bench::ThreadCpuSecondsByName(pid))
    out[RoleOf(name)] += seconds;
  return out;
}

std::unique_ptr<httplib::SSLClient> Connect(int port, const std::string& ca) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(ca.c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_read_timeout(30, 0);
  return c;
}

// "" when the reply is a 200 AdmissionReview that allows.
std::string CheckAllowed(const httplib::Result& r) {
  if (!r) return "transport error";
  if (r->status != 200) return absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 300));
  if (!absl::StrContains(r->body, "\"allowed\":true")) return r->body.substr(0, 400);
  return "";
}

absl::Status Store(FakeApiServer& api, const std::string& ns, const PodLoad& load, bool pod) {
  if (pod) return api.AddPod(load.pod_json);
  if (absl::Status s = api.Add(Resource::kResourceClaims, load.claim_json); !s.ok()) return s;
  if (absl::Status s = api.MergePatch(Resource::kPods, ns, load.pod_name, load.pod_status_patch);
      !s.ok()) {
    return s;
  }
  return api.MergePatch(Resource::kResourceClaims, ns, load.claim_name, load.claim_status_patch);
}

struct PhaseCpu {
  double webhook = 0, serve = 0, bench = 0, machine = 0, wall = 0;
};

// One phase: `loads` started open-loop at opt.rate pods/s by opt.creators threads.
PhaseCpu RunPhase(Webhook& w, const std::vector<PodLoad>& loads, const Options& opt,
                  pid_t serve_pid, const std::string& warm_up_body) {
  struct PerThread {
    std::array<std::vector<double>, kKinds> latency_us, handler_us;
    size_t errors = 0;
    std::string first_error;
  };
  std::vector<PerThread> per(static_cast<size_t>(opt.creators));
  std::atomic<int> connected{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  auto creator = [&](int id) {
    PerThread& me = per[static_cast<size_t>(id)];
    auto fail = [&](std::string why) {
      if (me.errors++ == 0) me.first_error = std::move(why);
    };
    auto client = Connect(w.port, w.ca);
    if (std::string e =
            CheckAllowed(client->Post("/webhook/validate", warm_up_body, "application/json"));
        !e.empty()) {
      fail(absl::StrCat("warm-up: ", e));
    }
    connected.fetch_add(1);
    while (!go.load()) std::this_thread::yield();
    for (size_t k = static_cast<size_t>(id); k < loads.size();
         k += static_cast<size_t>(opt.creators)) {
      const PodLoad& load = loads[k];
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(k / opt.rate)));
      const std::array<std::pair<const char*, const std::string*>, kKinds> reviews = {
          std::pair{"/webhook/mutate", &load.pod_mutate},
          std::pair{"/webhook/validate", &load.pod_validate},
          std::pair{"/webhook/mutate", &load.claim_mutate},
          std::pair{"/webhook/validate", &load.claim_validate}};
      for (int kind = 0; kind < kKinds; ++kind) {
        const Clock::time_point sent = Clock::now();
        httplib::Result r =
            client->Post(reviews[kind].first, *reviews[kind].second, "application/json");
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
        if (std::string e = CheckAllowed(r); !e.empty()) {
          fail(absl::StrCat(kKindNames[kind], " ", load.pod_name, ": ", e));
          continue;
        }
        me.latency_us[kind].push_back(us);
        double handler_ms = 0;  // server::Server sends "app;dur=<ms>"
        if (absl::SimpleAtod(absl::StripPrefix(r->get_header_value("Server-Timing"), "app;dur="),
                             &handler_ms)) {
          me.handler_us[kind].push_back(handler_ms * 1000);
        }
        // Stored as kube-apiserver would once both webhooks allowed it.
        if (w.store && (kind == kPodValidate || kind == kClaimValidate)) {
          if (absl::Status s = Store(*w.store, w.ns, load, kind == kPodValidate); !s.ok()) {
            fail(absl::StrCat("store ", load.pod_name, ": ", s.ToString()));
          }
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < opt.creators; ++i) threads.emplace_back(creator, i);
  while (connected.load() < opt.creators) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::array<double, 4> roles_before = CpuByRole(w.pid);
  PhaseCpu before{bench::ProcessCpuSeconds(w.pid), bench::ProcessCpuSeconds(serve_pid),
                  bench::ProcessCpuSeconds(getpid()), bench::MachineBusySeconds(), 0};
  start = Clock::now();
  go.store(true);
  for (std::thread& t : threads) t.join();
  PhaseCpu used{bench::ProcessCpuSeconds(w.pid) - before.webhook,
                bench::ProcessCpuSeconds(serve_pid) - before.serve,
                bench::ProcessCpuSeconds(getpid()) - before.bench,
                bench::MachineBusySeconds() - before.machine,
                std::chrono::duration<double>(Clock::now() - start).count()};
  const std::array<double, 4> roles_after = CpuByRole(w.pid);
  for (size_t r = 0; r < roles_after.size(); ++r)
    w.cpu_by_role[r] += roles_after[r] - roles_before[r];
  for (PerThread& p : per) {
    for (int kind = 0; kind < kKinds; ++kind) {
      w.latency_us[kind].insert(w.latency_us[kind].end(), p.latency_us[kind].begin(),
                                p.latency_us[kind].end());
      w.reviews += p.latency_us[kind].size();
      w.handler_us[kind].insert(w.handler_us[kind].end(), p.handler_us[kind].begin(),
                                p.handler_us[kind].end());
    }
    if (p.errors && w.first_error.empty()) w.first_error = p.first_error;
    w.errors += p.errors;
  }
  w.pods += loads.size();
  w.cpu_seconds += used.webhook;
  w.wall_seconds += used.wall;
  return used;
}

// The cluster: namespaces, nodes, their GPU slices, the chart's device classes.
absl::Status LoadCluster(FakeApiServer& api, const Options& opt) {
  for (const char* ns : {"team-open", "team-quota", "team-noop", kRecordNamespace}) {
    if (absl::Status s = api.AddNamespace(ns); !s.ok()) return s;
  }
  for (int n = 0; n < opt.nodes; ++n) {
    if (absl::Status s = api.AddNode(bench::dra_floor::NodeJson(n)); !s.ok()) return s;
    if (absl::Status s =
            api.Add(Resource::kResourceSlices, bench::dra_floor::GpuSliceJson(n, opt.gpus));
        !s.ok()) {
      return s;
    }
  }
  return api.LoadTestData("dra/list-deviceclasses.v1.json");
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What gpu-tenancy's mutating webhook does to a namespace's template, pods and claims, read from
// its replies to one sample of each; the template is stored (mutated) on the way, as the pods
// name it. The pod's patch is asked for until it shows the template was seen (a pod is a GPU
// pod through its template's class).
absl::StatusOr<ReviewFactory::Patches> MutationOf(ServeProcess& serve, FakeApiServer& api,
                                                  const ReviewFactory& factory,
                                                  const std::string& ns) {
  using bench::dra_floor::PatchOfReply;
  ReviewFactory::Patches patches;
  ServeProcess::Response t =
      serve.Post("/webhook/mutate", factory.TemplateReview(ns, absl::StrCat("template-", ns)));
  absl::StatusOr<rapidjson::Document> template_patch = PatchOfReply(t.body);
  if (t.status != 200 || !template_patch.ok()) {
    return absl::InternalError(absl::StrCat("template mutation: HTTP ", t.status, " ", t.body));
  }
  patches.claim_template.Swap(*template_patch);
  rapidjson::Document stored = factory.TemplateObject(ns);
  if (!patches.claim_template.Empty()) {
    if (absl::Status s = webhook::ApplyPatch(patches.claim_template, stored); !s.ok()) return s;
  }
  if (absl::Status s = api.Add(Resource::kResourceClaimTemplates, common::ToJson(stored));
      !s.ok()) {
    return s;
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  for (;;) {
    ServeProcess::Response p = serve.Post(
        "/webhook/mutate", factory.PodReview(ns, "sample", absl::StrCat("sample-pod-", ns)));
    absl::StatusOr<rapidjson::Document> pod_patch = PatchOfReply(p.body);
    if (p.status != 200 || !pod_patch.ok()) {
      return absl::InternalError(absl::StrCat("pod mutation: HTTP ", p.status, " ", p.body));
    }
    if (absl::StrContains(common::ToJson(*pod_patch), "gpu-tenancy.io/tenant")) {
      patches.pod.Swap(*pod_patch);
      break;
    }
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError("the template never reached gpu-tenancy's state");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ServeProcess::Response c = serve.Post(
      "/webhook/mutate",
      factory.ClaimReview(ns, "sample", absl::StrCat("sample-", ns), &stored["spec"]["spec"]));
  absl::StatusOr<rapidjson::Document> claim_patch = PatchOfReply(c.body);
  if (c.status != 200 || !claim_patch.ok()) {
    return absl::InternalError(absl::StrCat("claim mutation: HTTP ", c.status, " ", c.body));
  }
  patches.claim.Swap(*claim_patch);
  return patches;
}

// How many reservations gpu-tenancy's usage record of tenant metered holds (-1: no record).
int RecordEntries(const FakeApiServer& api) {
  const std::string json =
      api.GetObject(Resource::kConfigMaps, kRecordNamespace, "gpu-tenancy-usage-metered");
  if (json.empty()) return -1;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  if (!doc.ok()) return -1;
  const common::JsonValue* data = common::FindNonNull(*doc, "data");
  return data && data->IsObject() ? static_cast<int>(data->MemberCount()) : 0;
}

// How many times the usage record of tenant metered was written (created or replaced) since the
// request log was last cleared.
int64_t RecordWrites(const FakeApiServer& api) {
  const std::string configmaps =
      absl::StrCat("/api/v1/namespaces/", kRecordNamespace, "/configmaps");
  return api.CountRequests("POST", configmaps) +
         api.CountRequests("PUT", absl::StrCat(configmaps, "/gpu-tenancy-usage-metered"));
}

const common::FlagTable kFlags{
    {"dra_floor [--smoke] [--nodes N] [--gpus N] [--pods N] [--reps N] [--rate PODS_PER_S]\n"
     "                 [--creators N] [--md FILE] [--keep-logs DIR]"},
    "gpu-tenancy's admission of pods with DRA claims on the live path, against a do-nothing\n"
    "webhook in the same run, with and without a claim quota.",
    {{"smoke", "", "a few pods per webhook: checks the harness, asserts no timing"},
     {"without-store", "",
      "store nothing gpu-tenancy admits: the admission path alone, with\n"
      "no apiserver writes and no watch events beside it"},
     {"nodes", "N", "nodes in the emulated cluster (default 500)"},
     {"gpus", "N", "whole GPUs in each node's ResourceSlice (default 20)"},
     {"pods", "N", "pods per phase (default 50)"},
     {"reps", "N", "phases per webhook (default 12)"},
     {"rate", "PODS_PER_S", "pods started per second, all creators together (default 40)"},
     {"creators", "N", "client threads, one connection each (default 4)"},
     {"md", "FILE", "write the report here as Markdown"},
     {"keep-logs", "DIR", "keep gpu-tenancy's log here"}}};

absl::Status ReadFlags(const common::ParsedFlags& flags, Options& opt) {
  if (!flags.positional.empty()) return absl::InvalidArgumentError("dra_floor takes no arguments");
  opt.smoke = flags.Has("smoke");
  opt.store = !flags.Has("without-store");
  for (auto [name, field, low, high] :
       {std::tuple{"nodes", &opt.nodes, 1, 100000}, std::tuple{"gpus", &opt.gpus, 1, 64},
        std::tuple{"pods", &opt.pods, 1, 1000000}, std::tuple{"reps", &opt.reps, 1, 100},
        std::tuple{"creators", &opt.creators, 1, 256}}) {
    absl::StatusOr<int64_t> v = common::IntFlag(flags, name, *field, low, high);
    if (!v.ok()) return v.status();
    *field = static_cast<int>(*v);
  }
  absl::StatusOr<double> rate = common::NumberFlag(flags, "rate", opt.rate, 0.1, 1e6);
  if (!rate.ok()) return rate.status();
  opt.rate = *rate;
  opt.md_path = flags.Get("md");
  opt.logs_dir = flags.Get("keep-logs");
  if (opt.smoke) {
    opt.nodes = 4;
    opt.gpus = 4;
    opt.pods = 3;
    opt.reps = 1;
    opt.creators = 2;
    opt.rate = 100;
  }
  if (static_cast<int64_t>(opt.pods) * opt.reps * 2 > static_cast<int64_t>(opt.nodes) * opt.gpus) {
    return absl::InvalidArgumentError(
        "--pods x --reps x 2 claims must fit the devices (--nodes x --gpus): each is allocated "
        "one of its own");
  }
  return absl::OkStatus();
}

int Main(const Options& opt) {
  testing_support::TempDir dir;
  const std::string logs = opt.logs_dir.empty() ? dir.path() : opt.logs_dir;
  absl::StatusOr<ReviewFactory> factory = ReviewFactory::Load(BENCH_TESTDATA_DIR);
  if (!factory.ok())
    return std::fprintf(stderr, "dra_floor: %s\n", factory.status().ToString().c_str()), 2;
  absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
  if (!api.ok()) return std::fprintf(stderr, "dra_floor: %s\n", api.status().ToString().c_str()), 2;
  if (absl::Status s = LoadCluster(**api, opt); !s.ok()) {
    return std::fprintf(stderr, "dra_floor: cluster: %s\n", s.ToString().c_str()), 2;
  }
  std::ofstream(dir.File("kubeconfig")) << (*api)->Kubeconfig("    token: test-token");
  std::ofstream(dir.File("policy.yaml")) << bench::dra_floor::kPolicy;
  std::filesystem::create_directories(dir.File("noop"));
  if (absl::Status s = testing_support::MakeTestCerts(dir.File("noop")); !s.ok()) {
    return std::fprintf(stderr, "dra_floor: certificates: %s\n", s.ToString().c_str()), 2;
  }
  absl::StatusOr<std::unique_ptr<bench::ChildProcess>> noop =
      bench::ChildProcess::Start({BENCH_NOOP_WEBHOOK, "--tls-cert", dir.File("noop/tls.crt"),
                                  "--tls-key", dir.File("noop/tls.key")});
  if (!noop.ok())
    return std::fprintf(stderr, "dra_floor: %s\n", noop.status().ToString().c_str()), 2;
  const std::string serve_log = absl::StrCat(logs, "/serve.log");
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve =
      ServeProcess::Start({"--kubeconfig", dir.File("kubeconfig"), "--policy",
                           dir.File("policy.yaml"), "--lease-namespace", kRecordNamespace},
                          serve_log);
  if (!serve.ok())
    return std::fprintf(stderr, "dra_floor: %s\n", serve.status().ToString().c_str()), 2;
  for (const Clock::time_point deadline = Clock::now() + std::chrono::seconds(120);
       (*serve)->Get("/readyz").status != 200;) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "dra_floor: serve never became ready; its log:\n%s\n",
                   ReadWhole(serve_log).c_str());
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  Run run;
  const std::string serve_ca = (*serve)->cert_dir() + "/ca.crt";
  std::unique_ptr<FakeApiServer> floor_api;  // the do-nothing webhook's store
  if (opt.store) {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> started = FakeApiServer::Start({});
    if (!started.ok())
      return std::fprintf(stderr, "dra_floor: %s\n", started.status().ToString().c_str()), 2;
    floor_api = *std::move(started);
    if (absl::Status s = LoadCluster(*floor_api, opt); !s.ok()) {
      return std::fprintf(stderr, "dra_floor: cluster: %s\n", s.ToString().c_str()), 2;
    }
  }
  auto webhook = [](std::string name, std::string ns, FakeApiServer* store, int port, pid_t pid,
                    std::string ca) {
    Webhook w;
    w.name = std::move(name);
    w.ns = std::move(ns);
    w.store = store;
    w.port = port;
    w.pid = pid;
    w.ca = std::move(ca);
    return w;
  };
  FakeApiServer* serve_store = opt.store ? api->get() : nullptr;
  run.webhooks.push_back(webhook("do-nothing", "team-noop", floor_api.get(), (*noop)->tls_port(),
                                 (*noop)->pid(), dir.File("noop/ca.crt")));
  run.webhooks.push_back(webhook("gpu-tenancy, no quota", "team-open", serve_store,
                                 (*serve)->tls_port(), (*serve)->pid(), serve_ca));
  run.webhooks.push_back(webhook("gpu-tenancy, claim quota", "team-quota", serve_store,
                                 (*serve)->tls_port(), (*serve)->pid(), serve_ca));
  std::vector<ReviewFactory::Patches> patches(run.webhooks.size());
  for (size_t i = 1; i < run.webhooks.size(); ++i) {
    absl::StatusOr<ReviewFactory::Patches> p =
        MutationOf(**serve, **api, *factory, run.webhooks[i].ns);
    if (!p.ok()) return std::fprintf(stderr, "dra_floor: %s\n", p.status().ToString().c_str()), 2;
    patches[i] = *std::move(p);
  }
  // The do-nothing webhook gets the same bytes as gpu-tenancy's tenant without a quota.
  patches[0].pod.CopyFrom(patches[1].pod, patches[0].pod.GetAllocator());
  patches[0].claim.CopyFrom(patches[1].claim, patches[0].claim.GetAllocator());
  patches[0].claim_template.CopyFrom(patches[1].claim_template,
                                     patches[0].claim_template.GetAllocator());

  run.load_before = bench::LoadAverages();
  double others = 0, bench_cpu = 0, idle_serve = 0, wall = 0, noop_wall = 0;
  std::map<const FakeApiServer*, int> next_device;  // each stored claim gets a device of its own
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (size_t j = 0; j < run.webhooks.size(); ++j) {
      const size_t i = (j + static_cast<size_t>(rep)) % run.webhooks.size();
      Webhook& w = run.webhooks[i];
      std::vector<PodLoad> loads;
      for (int k = 0; k < opt.pods; ++k) {
        const int d = w.store ? next_device[w.store]++ : k;
        absl::StatusOr<PodLoad> load = factory->Make(w.ns, absl::StrCat("floor-", rep, "-", k),
                                                     patches[i], d / opt.gpus, d % opt.gpus);
        if (!load.ok())
          return std::fprintf(stderr, "dra_floor: %s\n", load.status().ToString().c_str()), 2;
        loads.push_back(*std::move(load));
      }
      const std::string warm_up = factory->TemplateReview(w.ns, "warm-up");
      PhaseCpu used = RunPhase(w, loads, opt, (*serve)->pid(), warm_up);
      const double ours = used.bench + used.webhook + (w.pid == (*serve)->pid() ? 0 : used.serve);
      others += used.machine - ours;
      bench_cpu += used.bench;
      wall += used.wall;
      if (w.pid != (*serve)->pid()) {
        idle_serve += used.serve;
        noop_wall += used.wall;
      }
      std::fprintf(
          stderr, "dra_floor: rep %d %-26s %zu pods in %.1f s, webhook CPU %.3f s%s\n", rep,
          w.name.c_str(), loads.size(), used.wall, used.webhook,
          w.errors ? absl::StrCat("  ERRORS ", w.errors, ": ", w.first_error).c_str() : "");
      run.record_writes += RecordWrites(**api);
      (*api)->ClearRequests();
      if (floor_api) floor_api->ClearRequests();
    }
  }
  run.load_after = bench::LoadAverages();
  run.others_cores = wall > 0 ? others / wall : 0;
  run.bench_cores = wall > 0 ? bench_cpu / wall : 0;
  run.serve_idle_cores = noop_wall > 0 ? idle_serve / noop_wall : 0;
  run.record_entries = RecordEntries(**api);

  const std::string md = Report(run, opt);
  std::fprintf(stderr, "%s", md.c_str());
  if (!opt.md_path.empty()) std::ofstream(opt.md_path) << md;
  size_t errors = 0;
  for (const Webhook& w : run.webhooks) errors += w.errors;
  if (errors) {
    std::fprintf(stderr, "dra_floor: %zu failed reviews; gpu-tenancy's log: %s\n", errors,
                 serve_log.c_str());
    return 1;
  }
  if (run.record_entries <= 0) {
    std::fprintf(stderr, "dra_floor: the metered tenant's usage record holds no reservation\n");
    return 1;
  }
  std::fprintf(stderr, "dra_floor: every review answered 200 and allowed\n");
  return 0;
}

}  // namespace
}  // namespace dra_floor

int main(int argc, char** argv) {
  dra_floor::Options opt;
  common::ParsedFlags flags;
  if (std::optional<int> exit_code =
          dra_floor::kFlags.ParseOrExit(std::vector<std::string>(argv + 1, argv + argc), flags)) {
    return *exit_code;
  }
  if (absl::Status read = dra_floor::ReadFlags(flags, opt); !read.ok()) {
    return dra_floor::kFlags.Refuse(read);
  }
  return dra_floor::Main(opt);
}
