#include "bench/chaos_invariants.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/json.h"

namespace chaos {
namespace {

constexpr auto kRoundEvery = std::chrono::milliseconds(250);
// Two replicas answering /readyz/extender within this of each other lead at once: a leader
// stops claiming a margin of the lease's retry period (2 s) before a peer may take over.
constexpr auto kQuickRound = std::chrono::milliseconds(500);

// The view of a replica's /debug/allocations: "ns/name" -> node, for every pod it counts.
bool ParseView(const std::string& body, std::map<std::string, std::string>* view) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
  if (!doc.ok() || !doc->IsObject()) return false;
  const common::JsonValue* tenants = common::FindNonNull(*doc, "tenants");
  if (!tenants || !tenants->IsArray()) return false;
  for (const auto& tenant : tenants->GetArray()) {
    const common::JsonValue* nodes = common::FindNonNull(tenant, "nodes");
    if (!nodes || !nodes->IsArray()) continue;
    for (const auto& node : nodes->GetArray()) {
      const std::string name(common::StringOr(node, "node"));
      const common::JsonValue* pods = common::FindNonNull(node, "pods");
      if (!pods || !pods->IsArray()) continue;
      for (const auto& pod : pods->GetArray()) {
        (*view)[absl::StrCat(common::StringOr(pod, "namespace"), "/",
                             common::StringOr(pod, "name"))] = name;
      }
    }
  }
  return true;
}

}  // namespace

Invariants::Invariants(Shared& s, topology::Policy policy)
    : s_(s), policy_(std::move(policy)), capacity_(ReadCapacity(*s.api)) {
  for (auto& t : behind_since_) t = Clock::time_point::max();
}

void Invariants::Run() {
  while (true) {
    const Clock::time_point begun = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    Round();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, begun + kRoundEvery, [this] { return stop_; });
  }
}

void Invariants::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

std::optional<Clock::time_point> Invariants::WaitRecovered(Clock::time_point since,
                                                           Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return stop_ || last_good_round_ >= since; }) ||
      last_good_round_ < since) {
    return std::nullopt;
  }
  return last_good_round_;
}

Invariants::Tally Invariants::tally() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tally_;
}

std::map<std::string, soak::RssSamples> Invariants::Rss() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rss_;
}

void Invariants::Settle(const Truth& truth, Clock::time_point now) {
  const bool first = last_state_.empty();
  // The pods there at the start are settled from the start.
  const Clock::time_point changed = first ? now - 2 * kSettle : now;
  for (const auto& [key, pod] : truth.pods) {
    auto it = last_state_.find(key);
    if (it == last_state_.end() || it->second != pod.node) {
      last_state_[key] = pod.node;
      last_change_[key] = changed;
    }
  }
  for (auto it = last_state_.begin(); it != last_state_.end();) {
    if (!truth.pods.count(it->first) && !it->second.empty()) {
      it->second.clear();
      last_change_[it->first] = now;
    }
    // Long gone: forget it (a view that still has it is behind all the same).
    if (it->second.empty() && now - last_change_[it->first] > 10 * kSettle) {
      last_change_.erase(it->first);
      it = last_state_.erase(it);
    } else {
      ++it;
    }
  }
}

void Invariants::CheckTruth(const Truth& truth) {
  const int64_t now_unix = absl::ToUnixSeconds(absl::Now());
  for (std::string problem : {CheckDevices(truth, capacity_), CheckPodQuotas(truth, policy_),
                              CheckClaimQuota(truth, s_.opt.claim_quota, now_unix)}) {
    // Reported once each; a breach that lasts is the same breach.
    if (!problem.empty() && breach_seen_[problem]++ == 0) {
      s_.breaches.Add(absl::StrCat("at ", absl::StrFormat("%.1f", s_.Elapsed()), " s: ", problem));
    }
  }
}

std::string Invariants::CompareView(const Endpoint& e, const Truth& truth, Clock::time_point now) {
  OperatorReply ready = OperatorGet(e, "/readyz");
  if (ready.status != 200) return absl::StrCat("not ready (", ready.status, ")");
  OperatorReply reply = OperatorGet(e, "/debug/allocations");
  std::map<std::string, std::string> view;
  if (reply.status != 200 || !ParseView(reply.body, &view)) {
    return absl::StrCat("no view (/debug/allocations: ", reply.status, ")");
  }
  auto settled = [&](const std::string& key) {
    auto it = last_change_.find(key);
    return it == last_change_.end() || now - it->second >= kSettle;
  };
  std::vector<std::string> diffs;
  for (const auto& [key, node] : view) {
    auto t = truth.pods.find(key);
    const std::string truth_node = t == truth.pods.end() ? "" : t->second.node;
    if (truth_node != node && settled(key)) {
      diffs.push_back(absl::StrCat(key, " on ", node, " (apiserver: ",
                                   truth_node.empty() ? "gone or unbound" : truth_node, ")"));
    }
  }
  for (const auto& [key, pod] : truth.pods) {
    if (!view.count(key) && settled(key)) {
      diffs.push_back(absl::StrCat(key, " missing (apiserver: ", pod.node, ")"));
    }
  }
  if (diffs.empty()) return "";
  const size_t shown = std::min<size_t>(diffs.size(), 3);
  return absl::StrCat(diffs.size(),
                      " pods differ: ", absl::StrJoin(diffs.begin(), diffs.begin() + shown, "; "));
}

void Invariants::SampleRss() {
  const double t = s_.Elapsed();
  for (int i = 0; i < kReplicas; ++i) {
    Endpoint e = s_.replicas->Get(i);
    if (!e.up) continue;
    long kib = soak::RssKiB(e.pid);
    if (kib <= 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    rss_[e.identity].emplace_back(t, kib);
  }
}

void Invariants::Round() {
  const Clock::time_point begun = Clock::now();
  const Truth truth = ReadTruth(*s_.api);
  Settle(truth, begun);
  CheckTruth(truth);

  bool all_in_step = true;
  double longest_behind = 0;
  for (int i = 0; i < kReplicas; ++i) {
    const Endpoint e = s_.replicas->Get(i);
    if (!e.up) {
      all_in_step = false;
      behind_since_[i] = Clock::time_point::max();
      continue;
    }
    const std::string diff = CompareView(e, truth, begun);
    if (diff.empty()) {
      behind_since_[i] = Clock::time_point::max();
      continue;
    }
    all_in_step = false;
    behind_since_[i] = std::min(behind_since_[i], begun);
    // Out of step during a fault is what a fault does; the bound runs from its end.
    const Clock::time_point fault_end{Clock::duration(s_.last_fault_end.load())};
    const double behind =
        std::chrono::duration<double>(begun - std::max(behind_since_[i], fault_end)).count();
    if (!s_.in_fault) longest_behind = std::max(longest_behind, behind);
    if (!s_.in_fault && behind > s_.opt.recovery_bound_seconds &&
        behind_reported_[i] != e.incarnation) {
      behind_reported_[i] = e.incarnation;
      s_.breaches.Add(
          absl::StrFormat("at %.1f s: replica %s out of step with the apiserver for "
                          "%.1f s: %s",
                          s_.Elapsed(), e.identity, behind, diff));
    }
  }

  const Clock::time_point asked = Clock::now();
  bool both = false;
  const int leader = s_.replicas->ExtenderReady(&both);
  if (both && Clock::now() - asked < kQuickRound) {
    s_.breaches.Add(
        absl::StrFormat("at %.1f s: both replicas answer /readyz/extender", s_.Elapsed()));
  }

  if (Clock::now() - last_rss_ >= std::chrono::seconds(1)) {
    last_rss_ = Clock::now();
    SampleRss();
  }

  std::lock_guard<std::mutex> lock(mu_);
  ++tally_.rounds;
  if (leader >= 0) {
    const std::string identity = s_.replicas->Get(leader).identity;
    if (!last_leader_.empty() && identity != last_leader_) ++tally_.leader_changes;
    last_leader_ = identity;
  }
  tally_.longest_behind_seconds = std::max(tally_.longest_behind_seconds, longest_behind);
  if (all_in_step && leader >= 0) {
    ++tally_.rounds_in_step;
    last_good_round_ = begun;
    cv_.notify_all();
  }
}

}  // namespace chaos
