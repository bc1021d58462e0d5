// load_bench: drives `gpu-tenancy serve` over HTTPS keep-alive with several connections, on
// synthetic clusters of 100, 1,000 and 5,000 nodes, and reports each workload next to baselines
// measured in the same run on the same server with the same payload bytes:
//   /bench/echo        transport + TLS + HTTP (reads the body, fixed reply)
//   /bench/parse       JSON parse only
//   /bench/parse-echo  parse ExtenderArgs and write back every Node (the least a full-Node filter
//   does)
// Round trip is compared with echo, server time (Server-Timing) with parse.
//
//   load_bench [--sizes 100,1000,5000] [--seconds 2] [--threads 4] [--md FILE] [--dat FILE]
//   load_bench --smoke    100 nodes, about a second; checks only that every reply is 200 and
//                         well-formed, asserts nothing about speed.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/synthetic.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "test/support/serve_process.h"

#ifndef BENCH_TESTDATA_DIR
#error "BENCH_TESTDATA_DIR: the test data the DRA admission workloads send"
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> sizes = {100, 1000, 5000};
  double seconds = 2.0;
  int threads = 4;
  bool smoke = false;
  std::string md_path, dat_path;
};

enum class Expect { kAnyJson, kFilter, kPrioritize, kReview };

struct Result {
  std::string name;
  size_t bytes = 0;
  size_t count = 0;
  size_t errors = 0;
  std::string first_error;
  double rt_p50 = 0, rt_p99 = 0, srv_p50 = 0, srv_p99 = 0;  // microseconds
  double rps = 0;
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// Empty when `body` is what `expect` says a good reply looks like.
std::string CheckBody(const std::string& body, Expect expect) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
  if (!doc.ok()) return absl::StrCat("reply is not JSON: ", doc.status().ToString());
  switch (expect) {
    case Expect::kAnyJson:
      return "";
    case Expect::kFilter: {
      if (!doc->IsObject()) return "filter reply is not an object";
      const rapidjson::Value* err = common::FindMember(*doc, "Error");
      if (err && err->IsString() && err->GetStringLength() > 0)
        return absl::StrCat("Error: ", err->GetString());
      if (!common::FindMember(*doc, "FailedNodes")) return "filter reply has no FailedNodes";
      return "";
    }
    case Expect::kPrioritize:
      return doc->IsArray() ? "" : "prioritize reply is not a HostPriorityList";
    case Expect::kReview: {
      const rapidjson::Value* resp =
          doc->IsObject() ? common::FindMember(*doc, "response") : nullptr;
      if (!resp || !resp->IsObject() || !common::FindMember(*resp, "allowed"))
        return "review has no response.allowed";
      return "";
    }
  }
  return "";
}

struct Target {
  int port;
  std::string ca;
};

std::unique_ptr<httplib::SSLClient> Connect(const Target& t) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", t.port);
  c->set_ca_cert_path(t.ca.c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_read_timeout(60, 0);
  c->set_write_timeout(60, 0);
  return c;
}

// Runs `threads` connections for `seconds`. rate_per_s > 0 paces the requests open-loop (each
// request has a scheduled start; latency counts from it, so a stall is not hidden).
Result Run(const Target& target, const std::string& name, const std::string& path,
           const std::string& body, Expect expect, const Options& opt, double rate_per_s = 0,
           bool check_all = false) {
  struct PerThread {
    std::vector<double> rt, srv;
    size_t errors = 0;
    std::string first_error;
  };
  std::vector<PerThread> per(static_cast<size_t>(opt.threads));
  std::atomic<bool> go{false};
  Clock::time_point start;
  auto worker = [&](int id) {
    PerThread& me = per[static_cast<size_t>(id)];
    auto client = Connect(target);
    auto fail = [&](const std::string& why) {
      if (me.errors++ == 0) me.first_error = why;
    };
    // Warm-up: opens the connection (TLS handshake) and checks one reply.
    if (auto r = client->Post(path.c_str(), body, "application/json"); !r || r->status != 200) {
      fail(r ? absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 300))
             : "transport error on warm-up");
    } else if (std::string e = CheckBody(r->body, expect); !e.empty()) {
      fail(e);
    }
    while (!go.load()) std::this_thread::yield();
    const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(opt.seconds));
    const double interval = rate_per_s > 0 ? opt.threads / rate_per_s : 0;  // seconds, per thread
    // Each thread sends at least one timed request, however late its first turn comes: on a
    // busy machine a short window could otherwise pass with none, which says nothing about
    // the server.
    for (long k = 0;; ++k) {
      Clock::time_point sent = Clock::now();
      if (interval > 0) {
        Clock::time_point scheduled =
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                        interval * (static_cast<double>(k) + id / double(opt.threads))));
        if (scheduled >= end && k > 0) break;
        if (scheduled > sent) std::this_thread::sleep_until(scheduled);
        sent = scheduled;
      } else if (sent >= end && k > 0) {
        break;
      }
      auto r = client->Post(path.c_str(), body, "application/json");
      Clock::time_point done = Clock::now();
      if (!r || r->status != 200) {
        fail(r ? absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 300))
               : "transport error");
        continue;
      }
      if (check_all) {
        if (std::string e = CheckBody(r->body, expect); !e.empty()) fail(e);
      }
      me.rt.push_back(std::chrono::duration<double, std::micro>(done - sent).count());
      std::string timing = r->get_header_value("Server-Timing");
      size_t at = timing.find("dur=");
      double ms = 0;
      if (at == std::string::npos || !absl::SimpleAtod(timing.substr(at + 4), &ms)) {
        fail(absl::StrCat("no Server-Timing header (got '", timing, "')"));
      } else {
        me.srv.push_back(ms * 1000.0);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < opt.threads; ++i) threads.emplace_back(worker, i);
  // Every thread has connected; start the clock for all at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  start = Clock::now();
  go.store(true);
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  Result res;
  res.name = name;
  res.bytes = body.size();
  std::vector<double> rt, srv;
  for (PerThread& p : per) {
    rt.insert(rt.end(), p.rt.begin(), p.rt.end());
    srv.insert(srv.end(), p.srv.begin(), p.srv.end());
    if (p.errors && res.first_error.empty()) res.first_error = p.first_error;
    res.errors += p.errors;
  }
  res.count = rt.size();
  res.rps = static_cast<double>(rt.size()) / elapsed;
  res.rt_p50 = Percentile(rt, 0.50);
  res.rt_p99 = Percentile(rt, 0.99);
  res.srv_p50 = Percentile(srv, 0.50);
  res.srv_p99 = Percentile(srv, 0.99);
  std::fprintf(
      stderr,
      "  %-44s %8zu B %7zu req %9.0f req/s  rt p50 %9.1f p99 %9.1f us  server p50 %9.1f p99 %9.1f "
      "us%s\n",
      name.c_str(), res.bytes, res.count, res.rps, res.rt_p50, res.rt_p99, res.srv_p50, res.srv_p99,
      res.errors ? absl::StrCat("  ERRORS ", res.errors, ": ", res.first_error).c_str() : "");
  return res;
}

std::string ExtenderArgsNames(const std::string& pod, int candidates, int nodes) {
  std::vector<std::string> names;
  for (int i = 0; i < candidates; ++i)
    names.push_back(absl::StrCat("\"", bench::NodeName(i % nodes), "\""));
  return absl::StrCat(R"({"Pod":)", pod, R"(,"Nodes":null,"NodeNames":[)",
                      absl::StrJoin(names, ","), "]}");
}

std::string ExtenderArgsFullNodes(const std::string& pod, int candidates) {
  std::vector<std::string> items;
  for (int i = 0; i < candidates; ++i) items.push_back(bench::NodeJson(i, false));
  return absl::StrCat(R"({"Pod":)", pod, R"(,"Nodes":{"metadata":{"resourceVersion":""},"items":[)",
                      absl::StrJoin(items, ","), R"(]},"NodeNames":null})");
}

std::string Us(double us) {
  return us >= 1000 ? absl::StrFormat("%.2f ms", us / 1000) : absl::StrFormat("%.0f us", us);
}
std::string X(double a, double b) { return b > 0 ? absl::StrFormat("%.2fx", a / b) : "n/a"; }
std::string Ok(bool met) { return met ? "met" : "**MISSED**"; }

struct SizeReport {
  int nodes = 0;
  std::vector<std::string> rows;     // markdown rows of the measurement table
  std::vector<std::string> targets;  // markdown rows of the targets table
  double filter500_srv_p50 = 0, filter500_srv_p99 = 0, filter500_rt_p50 = 0, echo500_rt_p50 = 0;
  double full_rt_p50 = 0, parse_echo_rt_p50 = 0;
  size_t errors = 0;
};

std::string Row(const Result& r, const Result* echo, const Result* parse) {
  return absl::StrCat("| ", r.name, " | ", r.bytes / 1024, " KB | ", r.count, " | ",
                      absl::StrFormat("%.0f", r.rps), " | ", Us(r.rt_p50), " | ", Us(r.rt_p99),
                      " | ", Us(r.srv_p50), " | ", Us(r.srv_p99), " | ",
                      echo ? X(r.rt_p50, echo->rt_p50) : "", " | ",
                      parse ? X(r.srv_p50, parse->srv_p50) : "", " |");
}

absl::StatusOr<SizeReport> RunSize(int nodes, const Options& opt) {
  SizeReport rep;
  rep.nodes = nodes;
  testing_support::TempDir dir;
  std::string cluster = dir.File("cluster.json");
  std::string policy = dir.File("policy.yaml");
  {
    std::string text = bench::ClusterListJson(nodes);
    std::fprintf(stderr, "cluster of %d nodes, %d pods: %.1f MB\n", nodes,
                 nodes * bench::kPodsPerNode, static_cast<double>(text.size()) / 1e6);
    std::ofstream(cluster, std::ios::binary) << text;
    std::ofstream(policy) << bench::PermissivePolicyYaml();
  }
  auto started = Clock::now();
  absl::StatusOr<std::unique_ptr<testing_support::ServeProcess>> server =
      testing_support::ServeProcess::Start({"--cluster-file", cluster, "--policy", policy,
                                            "--bench-routes", "--max-body-bytes", "134217728"});
  if (!server.ok()) return server.status();
  std::fprintf(stderr, "server ready in %.1f s\n",
               std::chrono::duration<double>(Clock::now() - started).count());
  Target target{(*server)->tls_port(), (*server)->cert_dir() + "/ca.crt"};
  const bool all = opt.smoke;
  auto run = [&](const std::string& name, const std::string& path, const std::string& body,
                 Expect e, double rate = 0) {
    Result r = Run(target, name, path, body, e, opt, rate, all);
    rep.errors += r.errors;
    if (r.count == 0) rep.errors++;
    return r;
  };

  // Names only (nodeCacheCapable: true): filter and prioritize for a MIG pod and a shared pod.
  for (int candidates : {100, 500}) {
    for (auto [pod_name, pod] : {std::pair{"MIG pod", bench::MigPodJson()},
                                 std::pair{"shared pod", bench::SharedPodJson()}}) {
      std::string body = ExtenderArgsNames(pod, candidates, nodes);
      std::string label = absl::StrCat(candidates, " names, ", pod_name);
      Result echo = run(absl::StrCat("echo (", label, ")"), "/bench/echo", body, Expect::kAnyJson);
      Result parse =
          run(absl::StrCat("parse (", label, ")"), "/bench/parse", body, Expect::kAnyJson);
      Result filter =
          run(absl::StrCat("filter ", label), "/extender/filter", body, Expect::kFilter);
      Result prio = run(absl::StrCat("prioritize ", label), "/extender/prioritize", body,
                        Expect::kPrioritize);
      rep.rows.push_back(Row(echo, nullptr, nullptr));
      rep.rows.push_back(Row(parse, &echo, nullptr));
      rep.rows.push_back(Row(filter, &echo, &parse));
      rep.rows.push_back(Row(prio, &echo, &parse));
      if (candidates == 500) {
        for (const Result* r : {&filter, &prio}) {
          rep.targets.push_back(absl::StrCat("| ", r->name, ": server p50 <= 100 us | ",
                                             Us(r->srv_p50), " | ", Ok(r->srv_p50 <= 100), " |"));
          rep.targets.push_back(absl::StrCat("| ", r->name, ": server p99 <= 1 ms | ",
                                             Us(r->srv_p99), " | ", Ok(r->srv_p99 <= 1000), " |"));
          rep.targets.push_back(absl::StrCat("| ", r->name, ": round trip p50 <= 1.5x echo | ",
                                             X(r->rt_p50, echo.rt_p50), " (", Us(r->rt_p50), " vs ",
                                             Us(echo.rt_p50), ") | ",
                                             Ok(r->rt_p50 <= 1.5 * echo.rt_p50), " |"));
        }
        if (pod_name == std::string("MIG pod")) {
          rep.filter500_srv_p50 = filter.srv_p50;
          rep.filter500_srv_p99 = filter.srv_p99;
          rep.filter500_rt_p50 = filter.rt_p50;
          rep.echo500_rt_p50 = echo.rt_p50;
        }
      }
      if (opt.smoke) break;
    }
    if (opt.smoke) break;
  }

  // Full Nodes (nodeCacheCapable: false).
  {
    int candidates = std::min(500, nodes);
    if (opt.smoke) candidates = std::min(candidates, 20);
    std::string body = ExtenderArgsFullNodes(bench::MigPodJson(), candidates);
    std::string label = absl::StrCat(candidates, " full Nodes, MIG pod");
    Result echo = run(absl::StrCat("echo (", label, ")"), "/bench/echo", body, Expect::kAnyJson);
    Result parse = run(absl::StrCat("parse (", label, ")"), "/bench/parse", body, Expect::kAnyJson);
    Result pe =
        run(absl::StrCat("parse-echo (", label, ")"), "/bench/parse-echo", body, Expect::kFilter);
    Result filter = run(absl::StrCat("filter ", label), "/extender/filter", body, Expect::kFilter);
    rep.rows.push_back(Row(echo, nullptr, nullptr));
    rep.rows.push_back(Row(parse, &echo, nullptr));
    rep.rows.push_back(Row(pe, &echo, &parse));
    rep.rows.push_back(Row(filter, &echo, &parse));
    rep.rows.push_back(absl::StrCat("| ↳ filter vs parse-echo (round trip p50) | | | | ",
                                    X(filter.rt_p50, pe.rt_p50), " | | ",
                                    X(filter.srv_p50, pe.srv_p50), " (server) | | | |"));
    rep.targets.push_back(absl::StrCat("| ", filter.name, ": round trip p50 <= 1.3x parse-echo | ",
                                       X(filter.rt_p50, pe.rt_p50), " (", Us(filter.rt_p50), " vs ",
                                       Us(pe.rt_p50), ") | ", Ok(filter.rt_p50 <= 1.3 * pe.rt_p50),
                                       " |"));
    rep.full_rt_p50 = filter.rt_p50;
    rep.parse_echo_rt_p50 = pe.rt_p50;
  }

  // Webhook: a ~20 KB pod in an AdmissionReview.
  {
    std::string body = bench::AdmissionReviewJson();
    Result echo = run("echo (20 KB AdmissionReview)", "/bench/echo", body, Expect::kAnyJson);
    Result parse = run("parse (20 KB AdmissionReview)", "/bench/parse", body, Expect::kAnyJson);
    Result validate = run("webhook validate", "/webhook/validate", body, Expect::kReview);
    Result mutate = run("webhook mutate", "/webhook/mutate", body, Expect::kReview);
    Result paced_v = run("webhook validate, paced 1,000 req/s", "/webhook/validate", body,
                         Expect::kReview, 1000);
    Result paced_m =
        run("webhook mutate, paced 1,000 req/s", "/webhook/mutate", body, Expect::kReview, 1000);
    for (const Result* r : {&echo, &parse, &validate, &mutate, &paced_v, &paced_m}) {
      rep.rows.push_back(
          Row(*r, r == &echo ? nullptr : &echo, (r == &echo || r == &parse) ? nullptr : &parse));
    }
    for (const Result* r : {&validate, &mutate}) {
      rep.targets.push_back(absl::StrCat("| ", r->name, ": throughput >= 0.8x echo | ",
                                         X(r->rps, echo.rps), " (",
                                         absl::StrFormat("%.0f vs %.0f req/s", r->rps, echo.rps),
                                         ") | ", Ok(r->rps >= 0.8 * echo.rps), " |"));
    }
    for (const Result* r : {&paced_v, &paced_m}) {
      rep.targets.push_back(absl::StrCat(
          "| ", r->name, ": round trip p99 <= 2 ms | ", Us(r->rt_p99), " (",
          absl::StrFormat("%.0f req/s achieved", r->rps), ") | ", Ok(r->rt_p99 <= 2000), " |"));
    }
  }
  // DRA admission: kube-apiserver's own requests for a ResourceClaim and for a pod that names
  // claims (captured from v1.36), for tenant team-a with a quota, each next to echo of the
  // same bytes.
  for (auto [label, file] : {std::pair{"claim", "01-mutate-ResourceClaim.CREATE.json"},
                             std::pair{"pod with claims", "05-mutate-Pod.CREATE.json"}}) {
    std::ifstream in(absl::StrCat(BENCH_TESTDATA_DIR, "/dra/", file), std::ios::binary);
    const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (body.empty()) return absl::NotFoundError(absl::StrCat("test data ", file));
    Result echo = run(absl::StrCat("echo (", label, " AdmissionReview)"), "/bench/echo", body,
                      Expect::kAnyJson);
    Result validate =
        run(absl::StrCat(label, " review, validate"), "/webhook/validate", body, Expect::kReview);
    Result mutate =
        run(absl::StrCat(label, " review, mutate"), "/webhook/mutate", body, Expect::kReview);
    rep.rows.push_back(Row(echo, nullptr, nullptr));
    for (const Result* r : {&validate, &mutate}) {
      rep.rows.push_back(Row(*r, &echo, nullptr));
      rep.targets.push_back(absl::StrCat("| ", r->name, ": round trip p50 <= 1.5x echo | ",
                                         X(r->rt_p50, echo.rt_p50), " (", Us(r->rt_p50), " vs ",
                                         Us(echo.rt_p50), ") | ",
                                         Ok(r->rt_p50 <= 1.5 * echo.rt_p50), " |"));
    }
  }
  return rep;
}

const common::FlagTable kFlags{
    {"load_bench [--smoke] [--sizes 100,1000,5000] [--seconds S] [--threads N] [--md FILE]\n"
     "                  [--dat FILE]"},
    "The extender's and the webhooks' round trips over HTTPS at each fleet size, against the\n"
    "echo and parse baselines measured on the same server.",
    {{"smoke", "", "a short run that only checks the harness"},
     {"sizes", "N,N,...", "fleet sizes in nodes (default 100,1000,5000)"},
     {"seconds", "S", "how long each workload runs (default 2)"},
     {"threads", "N", "client threads (default 4)"},
     {"md", "FILE", "also write the tables here as Markdown"},
     {"dat", "FILE", "also write the gnuplot data here"}}};

absl::Status ReadFlags(const common::ParsedFlags& flags, Options& opt) {
  if (!flags.positional.empty()) return absl::InvalidArgumentError("load_bench takes no arguments");
  opt.smoke = flags.Has("smoke");
  if (flags.Has("sizes")) {
    opt.sizes.clear();
    for (absl::string_view s : absl::StrSplit(flags.Get("sizes"), ',')) {
      int n = 0;
      if (!absl::SimpleAtoi(s, &n) || n <= 0) {
        return absl::InvalidArgumentError("--sizes takes node counts such as 100,1000");
      }
      opt.sizes.push_back(n);
    }
  }
  absl::StatusOr<double> seconds = common::NumberFlag(flags, "seconds", opt.seconds, 0, 1e6);
  absl::StatusOr<int64_t> threads = common::IntFlag(flags, "threads", opt.threads, 1, 1024);
  if (!seconds.ok()) return seconds.status();
  if (!threads.ok()) return threads.status();
  opt.seconds = *seconds;
  opt.threads = static_cast<int>(*threads);
  opt.md_path = flags.Get("md");
  opt.dat_path = flags.Get("dat");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  common::ParsedFlags flags;
  if (std::optional<int> exit_code =
          kFlags.ParseOrExit(std::vector<std::string>(argv + 1, argv + argc), flags)) {
    return *exit_code;
  }
  if (absl::Status read = ReadFlags(flags, opt); !read.ok()) return kFlags.Refuse(read);
  if (opt.smoke) {
    opt.sizes = {100};
    opt.seconds = 0.05;
    opt.threads = 2;
  }
  std::string md, dat =
                      "# nodes filter500_server_p50_us filter500_server_p99_us filter500_rt_p50_us "
                      "echo500_rt_p50_us full_rt_p50_us parse_echo_rt_p50_us\n";
  size_t errors = 0;
  for (int nodes : opt.sizes) {
    absl::StatusOr<SizeReport> rep = RunSize(nodes, opt);
    if (!rep.ok()) {
      std::fprintf(stderr, "load_bench: %s\n", rep.status().ToString().c_str());
      return 1;
    }
    errors += rep->errors;
    absl::StrAppend(
        &md, "### ", nodes, " nodes, ", nodes * bench::kPodsPerNode, " pods\n\n",
        "| workload | body | requests | req/s | round trip p50 | round trip p99 | server p50 | "
        "server p99 | "
        "round trip / echo | server / parse |\n|---|---|---|---|---|---|---|---|---|---|\n",
        absl::StrJoin(rep->rows, "\n"), "\n\n| target | measured | |\n|---|---|---|\n",
        absl::StrJoin(rep->targets, "\n"), "\n\n");
    absl::StrAppend(&dat, nodes, " ", rep->filter500_srv_p50, " ", rep->filter500_srv_p99, " ",
                    rep->filter500_rt_p50, " ", rep->echo500_rt_p50, " ", rep->full_rt_p50, " ",
                    rep->parse_echo_rt_p50, "\n");
  }
  if (!opt.md_path.empty()) std::ofstream(opt.md_path) << md;
  if (!opt.dat_path.empty()) std::ofstream(opt.dat_path) << dat;
  if (errors) {
    std::fprintf(stderr, "load_bench: %zu failed or malformed replies\n", errors);
    return 1;
  }
  std::fprintf(stderr, "load_bench: all replies 200 and well-formed\n");
  return 0;
}
