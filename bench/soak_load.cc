#include "bench/soak_load.h"

#include <httplib.h>

#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/soak_checks.h"
#include "bench/soak_objects.h"
#include "common/json.h"

namespace soak {
namespace {

std::unique_ptr<httplib::SSLClient> Connect(int port, const std::string& ca) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(ca.c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  // Generous: on a loaded 2-core machine a reply may take a while; a hang still fails.
  c->set_connection_timeout(10, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(30, 0);
  return c;
}

// POST and check transport and HTTP 200; on success parses the JSON body into `doc`.
// Any failure is counted against `kind` and false is returned.
template <typename Client>
bool Call(Client& client, Stats& stats, Kind kind, const std::string& method,
          const std::string& path, const std::string& body, rapidjson::Document* doc,
          std::string* text = nullptr) {
  stats.Count(kind);
  httplib::Result r = method == "GET" ? client.Get(path.c_str())
                                      : client.Post(path.c_str(), body, "application/json");
  if (!r) {
    stats.Fail(kind,
               absl::StrCat("transport error on ", path, ": ", httplib::to_string(r.error())));
    return false;
  }
  if (r->status != 200) {
    stats.Fail(kind, absl::StrCat(path, ": HTTP ", r->status, ": ", r->body));
    return false;
  }
  if (text) *text = r->body;
  if (!doc) return true;
  absl::StatusOr<rapidjson::Document> parsed = common::ParseJson(r->body);
  if (!parsed.ok()) {
    stats.Fail(kind, absl::StrCat(path, ": reply is not JSON: ", parsed.status().ToString()));
    return false;
  }
  *doc = *std::move(parsed);
  return true;
}

// Paces one thread at `rate` operations per second (0: no pacing), on a fixed schedule so a
// slow reply does not lower the long-run rate.
class Pacer {
 public:
  explicit Pacer(double rate) : start_(Clock::now()), rate_(rate) {}
  void Wait() {
    if (rate_ <= 0) return;
    Clock::time_point at =
        start_ + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(static_cast<double>(k_++) / rate_));
    if (at > Clock::now()) std::this_thread::sleep_until(at);
  }

 private:
  Clock::time_point start_;
  double rate_;
  long k_ = 0;
};

}  // namespace

// Filter and prioritize for pods the scheduler is deciding about (not in the emulation).
// Deliberate expectations: the research MIG pod always fits somewhere (the bind threads hold at
// most 2 x hold/4 such pods, far below the 10 free 1g.10gb per MIG node), and acme's
// time-sliced pod never does (its tier may not share a GPU); for the others any verdict is fine.
void FilterLoop(Shared& s) {
  auto client = Connect(s.tls_port, s.ca);
  Pacer pacer(s.opt.rate);
  const std::string must_fit = PendingPod("research", "soak-filter-mig", kBindKinds[0].limits);
  const std::string never_fits =
      PendingPod("acme", "soak-filter-shared", R"({"nvidia.com/gpu.shared":"1"})");
  const std::string any[] = {PendingPod("research", "soak-filter-ts", kBindKinds[1].limits),
                             PendingPod("acme", "soak-filter-3g", kBindKinds[2].limits),
                             PendingPod("gpu-ops", "soak-filter-gpu", kBindKinds[3].limits)};
  for (long i = 0; s.Running(); ++i) {
    pacer.Wait();
    int which = static_cast<int>(i % 5);
    const std::string& pod = which == 0 ? must_fit : which == 1 ? never_fits : any[which - 2];
    std::string body = ExtenderArgs(pod, s.node_names);
    rapidjson::Document doc;
    if (Call(*client, s.stats, kFilter, "POST", "/extender/filter", body, &doc)) {
      FilterView v;
      std::string e = CheckFilter(doc, s.node_names, &v);
      if (e.empty() && which == 0 && v.kept.empty()) e = "the research MIG pod fits nowhere";
      if (e.empty() && which == 1 && !v.kept.empty()) e = "acme's time-sliced pod was kept";
      if (!e.empty()) s.stats.Fail(kFilter, e);
      if (v.kept.empty()) s.stats.unschedulable++;
    }
    if (Call(*client, s.stats, kPrioritize, "POST", "/extender/prioritize", body, &doc)) {
      if (std::string e = CheckPrioritize(doc, s.node_names, nullptr); !e.empty())
        s.stats.Fail(kPrioritize, e);
    }
  }
}

void WebhookLoop(Shared& s, int id) {
  auto client = Connect(s.tls_port, s.ca);
  Pacer pacer(s.opt.rate);
  for (long i = 0; s.Running(); ++i) {
    pacer.Wait();
    const ReviewCase& c = kReviewCases[i % std::size(kReviewCases)];
    const bool validate = (i / static_cast<long>(std::size(kReviewCases))) % 2 == 0;
    const std::string uid = absl::StrFormat("5e0a%04x-0000-4000-8000-%012x", id, i);
    std::string body = Review(uid, c.ns, absl::StrCat("soak-review-", i % 100), c.limits);
    Kind kind = validate ? kValidate : kMutate;
    rapidjson::Document doc;
    if (!Call(*client, s.stats, kind, "POST", validate ? "/webhook/validate" : "/webhook/mutate",
              body, &doc))
      continue;
    bool allowed = validate ? c.allowed : true;
    bool patched = validate ? false : c.patched;
    if (std::string e = CheckReview(doc, uid, allowed, patched); !e.empty()) {
      s.stats.Fail(kind, absl::StrCat(c.ns, " ", c.limits, ": ", e));
    } else if (!allowed) {
      s.stats.validate_denied++;
    } else if (patched) {
      s.stats.mutate_patched++;
    }
  }
}

namespace {

// A bind reply: 200 with an empty Error when bound. A refusal is valid only when the node no
// longer fits (the capacity went to the other bind thread between our filter and bind, or we
// bound on purpose to a node that cannot fit); any other Error (pod not found, Binding refused
// by the API server, not the leader) is an error.
enum class BindOutcome { kBound, kRefused, kError };
BindOutcome Bind(httplib::SSLClient& client, Shared& s, const std::string& ns,
                 const std::string& name, const std::string& node) {
  std::string body =
      absl::StrCat(R"({"PodName":")", name, R"(","PodNamespace":")", ns, R"(","PodUID":"uid-)", ns,
                   "-", name, R"(","Node":")", node, R"("})");
  rapidjson::Document doc;
  if (!Call(client, s.stats, kBind, "POST", "/extender/bind", body, &doc))
    return BindOutcome::kError;
  if (!doc.IsObject()) {
    s.stats.Fail(kBind, "bind reply is not an object");
    return BindOutcome::kError;
  }
  std::string err(common::StringOr(doc, "Error"));
  if (err.empty()) {
    s.stats.bound++;
    return BindOutcome::kBound;
  }
  // Refused by the fit, or by the tenant's quota (the demo policy gives acme one) when the
  // other bind thread took the last of it since the filter.
  if (absl::StrContains(err, absl::StrCat("node ", node, " no longer fits: ")) ||
      absl::StrContains(err, absl::StrCat("gpu-tenancy bind: tenant ", ns, " quota: "))) {
    return BindOutcome::kRefused;
  }
  s.stats.Fail(kBind, absl::StrCat(ns, "/", name, " on ", node, ": ", err));
  return BindOutcome::kError;
}

void DeleteFromEmulator(Shared& s, const std::string& ns, const std::string& name) {
  s.stats.Count(kEmulator);
  if (absl::Status st = s.api->DeletePod(ns, name); !st.ok()) {
    s.stats.Fail(kEmulator, absl::StrCat("delete ", ns, "/", name, ": ", st.ToString()));
  } else {
    s.stats.deleted++;
  }
}

}  // namespace

// Fill to `hold` pods, then drain to zero, and again. Pods rotate through kBindKinds; whole GPUs
// run out during a fill (two threads want hold/4 each, the fleet has 4 free per exclusive node),
// so "fits nowhere" and refused binds are part of every cycle.
void BindLoop(Shared& s, int id) {
  auto client = Connect(s.tls_port, s.ca);
  Pacer pacer(s.opt.rate);
  std::deque<std::pair<std::string, std::string>> held;  // namespace, name
  bool filling = true;
  size_t misses = 0;  // fills in a row that bound nothing
  for (long seq = 0; s.Running(); ++seq) {
    pacer.Wait();
    if (!filling) {
      DeleteFromEmulator(s, held.front().first, held.front().second);
      held.pop_front();
      if (held.empty()) filling = true;
      continue;
    }
    const PodKind& kind = kBindKinds[seq % std::size(kBindKinds)];
    const std::string name = absl::StrCat("soak-b", id, "-", seq);
    const std::string pod = PendingPod(kind.ns, name, kind.limits);
    s.stats.Count(kEmulator);
    if (absl::Status st = s.api->AddPod(pod); !st.ok()) {
      s.stats.Fail(kEmulator, absl::StrCat("add ", name, ": ", st.ToString()));
      continue;
    }
    std::string body = ExtenderArgs(pod, s.node_names);
    rapidjson::Document doc;
    FilterView v;
    bool ok = Call(*client, s.stats, kFilter, "POST", "/extender/filter", body, &doc);
    if (ok) {
      if (std::string e = CheckFilter(doc, s.node_names, &v); !e.empty()) {
        s.stats.Fail(kFilter, e);
        ok = false;
      }
    }
    std::string node;
    if (ok && !v.kept.empty()) {
      std::string kept_body = ExtenderArgs(pod, v.kept);
      if (Call(*client, s.stats, kPrioritize, "POST", "/extender/prioritize", kept_body, &doc)) {
        if (std::string e = CheckPrioritize(doc, v.kept, &node); !e.empty())
          s.stats.Fail(kPrioritize, e);
      }
    } else if (ok) {
      // Fits nowhere (whole GPUs are all taken): kube-scheduler would not bind, but a bind that
      // arrives anyway (a stale decision) must be refused. It goes to a node that does not offer
      // the resource at all, so no delete by the other thread can make it fit meanwhile.
      s.stats.unschedulable++;
      const std::string wrong = FirstNodeOf(kind.never_fits);
      BindOutcome b = Bind(*client, s, kind.ns, name, wrong);
      if (b == BindOutcome::kBound)
        s.stats.Fail(kBind, absl::StrCat(name, " was bound to ", wrong, ", which cannot fit it"));
      if (b == BindOutcome::kRefused) s.stats.refused_stale++;
    }
    BindOutcome b = node.empty() ? BindOutcome::kError : Bind(*client, s, kind.ns, name, node);
    if (b == BindOutcome::kRefused) s.stats.refused_filled++;
    if (b == BindOutcome::kBound) {
      held.emplace_back(kind.ns, name);
      misses = 0;
    } else {
      DeleteFromEmulator(s, kind.ns, name);  // never bound: the scheduler gives up on it
      ++misses;
    }
    // Drain at --hold pods, or when no kind fits any more (a --hold larger than the fleet).
    if (static_cast<int>(held.size()) >= s.opt.hold ||
        (misses >= std::size(kBindKinds) && !held.empty())) {
      filling = false;
    }
  }
  for (const auto& [ns, name] : held) DeleteFromEmulator(s, ns, name);
}

// What an operator scrapes, on the operator port: must always answer 200 with the synced cache
// in /metrics, a well-formed inventory, and readiness (the cache never goes unsynced here).
void ObserverLoop(Shared& s) {
  httplib::Client client("127.0.0.1", s.metrics_port);
  client.set_keep_alive(true);
  client.set_read_timeout(30, 0);
  Pacer pacer(2);
  while (s.Running()) {
    pacer.Wait();
    std::string text;
    if (Call(client, s.stats, kMetrics, "GET", "/metrics", "", nullptr, &text)) {
      if (!absl::StrContains(text, "\ngpu_tenancy_cache_synced 1\n"))
        s.stats.Fail(kMetrics, "cache_synced is not 1");
    }
    rapidjson::Document doc;
    if (Call(client, s.stats, kAllocations, "GET", "/debug/allocations", "", &doc)) {
      const common::JsonValue* tenants =
          doc.IsObject() ? common::FindMember(doc, "tenants") : nullptr;
      if (!tenants || !tenants->IsArray() || tenants->Empty())
        s.stats.Fail(kAllocations, "no tenants array");
    }
    Call(client, s.stats, kReadyz, "GET", "/readyz", "", nullptr);
  }
}

}  // namespace soak
