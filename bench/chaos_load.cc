#include "bench/chaos_load.h"

#include <httplib.h>

#include <cstdio>
#include <deque>
#include <iterator>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/chaos_cluster.h"
#include "bench/soak_checks.h"
#include "bench/soak_objects.h"
#include "common/json.h"

namespace chaos {

void Breaches::Add(const std::string& what) {
  count_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  if (first_.size() < 30) {
    first_.push_back(what.substr(0, 600));
    std::fprintf(stderr, "chaos: BREACH %s\n", first_.back().c_str());
  }
}

std::vector<std::string> Breaches::First() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_;
}

namespace {

using testing_support::Resource;

// A client of one incarnation of one replica, made again when the replica is restarted.
// `timeout_seconds` is the caller's: kube-scheduler's extender httpTimeout, kube-apiserver's
// webhook timeoutSeconds.
class ReplicaClient {
 public:
  ReplicaClient(Replicas& replicas, int timeout_seconds)
      : replicas_(replicas), timeout_(timeout_seconds) {}
  // Points at replica `index`; false when it is down.
  bool Use(int index) {
    Endpoint e = replicas_.Get(index);
    if (!e.up) return false;
    if (!client_ || e.index != current_.index || e.incarnation != current_.incarnation) {
      current_ = e;
      client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", e.tls_port);
      client_->set_ca_cert_path(e.ca.c_str());
      client_->enable_server_certificate_verification(true);
      client_->set_keep_alive(true);
      client_->set_tcp_nodelay(true);
      client_->set_connection_timeout(5, 0);
      client_->set_read_timeout(timeout_, 0);
      client_->set_write_timeout(timeout_, 0);
    }
    return true;
  }
  // POST; the parsed 200 reply, or false (not answered, not 200, not JSON).
  bool Post(const std::string& path, const std::string& body, rapidjson::Document* doc) {
    httplib::Result r = client_->Post(path.c_str(), body, "application/json");
    if (!r) {
      client_.reset();  // a fresh connection next time
      return false;
    }
    if (r->status != 200) return false;
    absl::StatusOr<rapidjson::Document> parsed = common::ParseJson(r->body);
    if (!parsed.ok()) return false;
    *doc = *std::move(parsed);
    return true;
  }

 private:
  Replicas& replicas_;
  const int timeout_;
  Endpoint current_;
  std::unique_ptr<httplib::SSLClient> client_;
};

class Pacer {
 public:
  explicit Pacer(double rate) : start_(Clock::now()), rate_(rate) {}
  void Wait() {
    Clock::time_point at =
        start_ + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(static_cast<double>(k_++) / rate_));
    if (at > Clock::now()) {
      std::this_thread::sleep_until(at);
    } else if (Clock::now() - at > std::chrono::seconds(1)) {
      start_ = Clock::now();  // after a long call, no burst to catch up
      k_ = 1;
    }
  }

 private:
  Clock::time_point start_;
  double rate_;
  long k_ = 0;
};

// The node the apiserver has bound the pod to, "" when none (or no pod).
std::string BoundNode(const Shared& s, const std::string& ns, const std::string& name) {
  absl::StatusOr<rapidjson::Document> pod =
      common::ParseJson(s.api->GetObject(Resource::kPods, ns, name));
  if (!pod.ok()) return "";
  const common::JsonValue* spec = common::FindNonNull(*pod, "spec");
  return spec ? std::string(common::StringOr(*spec, "nodeName")) : std::string();
}

void DeletePod(Shared& s, const std::string& ns, const std::string& name) {
  if (s.api->DeletePod(ns, name).ok()) s.counters.pods_deleted++;
}

// Which replica leads, asked again at most every 500 ms unless a call failed.
class LeaderCache {
 public:
  explicit LeaderCache(const Replicas& r) : replicas_(r) {}
  int Get() {
    if (stale_ || Clock::now() - asked_ > std::chrono::milliseconds(500)) {
      leader_ = replicas_.ExtenderReady();
      asked_ = Clock::now();
      stale_ = false;
    }
    return leader_;
  }
  void Forget() { stale_ = true; }

 private:
  const Replicas& replicas_;
  int leader_ = -1;
  bool stale_ = true;
  Clock::time_point asked_;
};

enum class BindOutcome { kBound, kRefused, kUnavailable };

// Filter, prioritize and bind one pending pod through the leader. kBound only when the
// apiserver shows it bound to the chosen node (else a breach).
BindOutcome ScheduleOnce(Shared& s, ReplicaClient& client, LeaderCache& leader,
                         const soak::PodKind& kind, const std::string& name,
                         const std::string& pod) {
  const int at = leader.Get();
  if (at < 0 || !client.Use(at)) {
    s.counters.no_leader++;
    return BindOutcome::kUnavailable;
  }
  rapidjson::Document doc;
  soak::FilterView v;
  if (!client.Post("/extender/filter", soak::ExtenderArgs(pod, s.node_names), &doc) ||
      !soak::CheckFilter(doc, s.node_names, &v).empty()) {
    leader.Forget();
    return BindOutcome::kUnavailable;
  }
  if (v.kept.empty()) {
    s.counters.unschedulable++;
    return BindOutcome::kRefused;
  }
  std::string node;
  if (!client.Post("/extender/prioritize", soak::ExtenderArgs(pod, v.kept), &doc) ||
      !soak::CheckPrioritize(doc, v.kept, &node).empty() || node.empty()) {
    leader.Forget();
    return BindOutcome::kUnavailable;
  }
  const std::string body =
      absl::StrCat(R"({"PodName":")", name, R"(","PodNamespace":")", kind.ns, R"(","PodUID":"uid-)",
                   kind.ns, "-", name, R"(","Node":")", node, R"("})");
  const bool answered = client.Post("/extender/bind", body, &doc) && doc.IsObject();
  const std::string error = answered ? std::string(common::StringOr(doc, "Error")) : "";
  const std::string bound_to = BoundNode(s, kind.ns, name);
  if (answered && error.empty()) {
    if (bound_to != node) {
      s.breaches.Add(absl::StrCat("bind of ", kind.ns, "/", name, " to ", node,
                                  " was answered done, but the apiserver has it on \"", bound_to,
                                  "\""));
    }
    s.counters.bound++;
    return BindOutcome::kBound;
  }
  if (answered && (absl::StrContains(error, " no longer fits: ") ||
                   absl::StrContains(error, absl::StrCat("tenant ", kind.ns, " quota: ")))) {
    if (!bound_to.empty()) {
      s.breaches.Add(absl::StrCat("bind of ", kind.ns, "/", name, " was refused (", error,
                                  ") but the apiserver has it on ", bound_to));
    }
    s.counters.refused++;
    return BindOutcome::kRefused;
  }
  // Not answered, or an error of the moment (not the leader, the apiserver refused or timed
  // out): the Binding may have landed all the same, as a scheduler would see through its watch.
  leader.Forget();
  s.counters.bind_unavailable++;
  return bound_to.empty() ? BindOutcome::kUnavailable : BindOutcome::kBound;
}

}  // namespace

// A pod whose bind failed for a reason of the moment stays pending, and kube-scheduler tries
// it again after a backoff; it may have been bound all the same meanwhile (a Binding that
// outlived its timeout), which is where a double allocation would show.
struct Retry {
  const soak::PodKind* kind;
  std::string name;
  Clock::time_point at;
  int tries;
};
constexpr auto kRetryBackoff = std::chrono::seconds(5);
constexpr int kTries = 3;

void BindLoop(Shared& s, int id) {
  ReplicaClient client(*s.replicas, 30);  // kube-scheduler's extender httpTimeout
  LeaderCache leader(*s.replicas);
  Pacer pacer(s.opt.rate);
  std::deque<std::pair<std::string, std::string>> held;  // namespace, name
  std::deque<Retry> retries;
  bool filling = true;
  for (long seq = 0; s.Running(); ++seq) {
    pacer.Wait();
    if (!filling) {
      DeletePod(s, held.front().first, held.front().second);
      held.pop_front();
      if (held.empty()) filling = true;
      continue;
    }
    Retry next;
    if (!retries.empty() && retries.front().at <= Clock::now()) {
      next = retries.front();
      retries.pop_front();
    } else {
      const soak::PodKind& kind = soak::kBindKinds[seq % std::size(soak::kBindKinds)];
      next = {&kind, absl::StrCat("chaos-b", id, "-", seq), Clock::now(), 0};
      if (!s.api->AddPod(soak::PendingPod(kind.ns, next.name, kind.limits)).ok()) continue;
      s.counters.pods_created++;
    }
    const soak::PodKind& kind = *next.kind;
    BindOutcome b = BindOutcome::kBound;
    if (BoundNode(s, kind.ns, next.name).empty()) {
      b = ScheduleOnce(s, client, leader, kind, next.name,
                       soak::PendingPod(kind.ns, next.name, kind.limits));
    } else {
      s.counters.bind_landed_anyway++;  // bound while it waited for its retry
    }
    if (b == BindOutcome::kBound) {
      held.emplace_back(kind.ns, next.name);
    } else if (b == BindOutcome::kUnavailable && ++next.tries < kTries) {
      next.at = Clock::now() + kRetryBackoff;
      retries.push_back(std::move(next));
    } else {
      DeletePod(s, kind.ns, next.name);  // the scheduler gives up on it
    }
    if (static_cast<int>(held.size()) >= s.opt.hold) filling = false;
  }
  for (const auto& [ns, name] : held) DeletePod(s, ns, name);
  for (const Retry& r : retries) DeletePod(s, r.kind->ns, r.name);
}

void ClaimLoop(Shared& s, int id) {
  // kube-apiserver's default webhook timeoutSeconds; past it the claim is refused (Fail).
  ReplicaClient client(*s.replicas, 10);
  Pacer pacer(5);
  std::deque<std::pair<std::string, Clock::time_point>> held;  // name, created
  for (long seq = 0; s.Running(); ++seq) {
    pacer.Wait();
    // Claims live about 20 s, so quota frees up (a deleted claim's reservation counts until
    // webhook::kReservationGraceSeconds) and admissions keep meeting the quota's edge.
    while (!held.empty() && Clock::now() - held.front().second > std::chrono::seconds(20)) {
      if (s.api->Delete(Resource::kResourceClaims, kClaimNamespace, held.front().first).ok()) {
        s.counters.claims_deleted++;
      }
      held.pop_front();
    }
    const std::string name = absl::StrCat("chaos-c", id, "-", seq);
    const std::string uid = absl::StrFormat("c1a1%04x-0000-4000-8000-%012x", id, seq);
    rapidjson::Document doc;
    if (!client.Use(id) || !client.Post("/webhook/validate", ClaimReview(uid, name, 1), &doc)) {
      s.counters.claims_unavailable++;
      continue;
    }
    const common::JsonValue* response =
        doc.IsObject() ? common::FindNonNull(doc, "response") : nullptr;
    const common::JsonValue* allowed =
        response ? common::FindMember(*response, "allowed") : nullptr;
    if (!allowed || !allowed->IsBool() || common::StringOr(*response, "uid") != uid) {
      s.breaches.Add(absl::StrCat("claim review of ", name, " on replica ", id,
                                  " is not an answer to it: ", common::ToJson(doc).substr(0, 300)));
      continue;
    }
    if (!allowed->GetBool()) {
      const common::JsonValue* status = common::FindNonNull(*response, "status");
      std::string message(status ? common::StringOr(*status, "message") : "");
      // Over quota, or the record could not be vouched for during a fault: both deny.
      if (!absl::StartsWith(message, "[tenant-quota] ")) {
        s.breaches.Add(absl::StrCat("claim ", name, " denied for another reason: ", message));
      }
      s.counters.claims_denied++;
      continue;
    }
    s.counters.claims_admitted++;
    if (s.api->Add(Resource::kResourceClaims, ClaimJson(name, 1)).ok()) {
      held.emplace_back(name, Clock::now());
    }
  }
  for (const auto& [name, created] : held) {
    if (s.api->Delete(Resource::kResourceClaims, kClaimNamespace, name).ok()) {
      s.counters.claims_deleted++;
    }
  }
}

void ReviewLoop(Shared& s) {
  ReplicaClient clients[kReplicas] = {ReplicaClient(*s.replicas, 10),
                                      ReplicaClient(*s.replicas, 10)};
  Pacer pacer(10);
  for (long i = 0; s.Running(); ++i) {
    pacer.Wait();
    const int at = static_cast<int>(i % kReplicas);
    const soak::ReviewCase& c = soak::kReviewCases[(i / kReplicas) % std::size(soak::kReviewCases)];
    const std::string uid = absl::StrFormat("5e0a%04x-0000-4000-8000-%012x", at, i);
    rapidjson::Document doc;
    if (!clients[at].Use(at) ||
        !clients[at].Post("/webhook/validate",
                          soak::Review(uid, c.ns, absl::StrCat("chaos-review-", i % 100), c.limits),
                          &doc)) {
      s.counters.reviews_unavailable++;
      continue;
    }
    s.counters.reviews_answered++;
    if (std::string e = soak::CheckReview(doc, uid, c.allowed, /*patched=*/false); !e.empty()) {
      s.breaches.Add(
          absl::StrCat("pod review in ", c.ns, " ", c.limits, " on replica ", at, ": ", e));
    }
  }
}

}  // namespace chaos
