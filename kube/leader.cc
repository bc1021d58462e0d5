#include "kube/leader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/json.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "kube/objects.h"

namespace kube {
namespace {

std::string MicroTimeNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone());
}

struct LeaseRecord {
  std::string holder;
  std::string renew_time;
  std::string acquire_time;
  int64_t transitions = 0;
  std::string resource_version;
};

LeaseRecord ReadLease(const common::JsonValue& lease) {
  LeaseRecord r;
  if (const common::JsonValue* meta = common::FindMember(lease, "metadata")) {
    r.resource_version = std::string(common::StringOr(*meta, "resourceVersion"));
  }
  if (const common::JsonValue* spec = common::FindMember(lease, "spec")) {
    r.holder = std::string(common::StringOr(*spec, "holderIdentity"));
    r.renew_time = std::string(common::StringOr(*spec, "renewTime"));
    r.acquire_time = std::string(common::StringOr(*spec, "acquireTime"));
    if (const common::JsonValue* t = common::FindMember(*spec, "leaseTransitions");
        t && t->IsInt64()) {
      r.transitions = t->GetInt64();
    }
  }
  return r;
}

std::string LeaseBody(const LeaderOptions& o, const LeaseRecord& r) {
  LeaseObject lease;
  lease.namespace_name = o.namespace_name;
  lease.name = o.lease_name;
  lease.resource_version = r.resource_version;
  lease.holder = r.holder;
  lease.duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(o.lease_duration).count();
  lease.acquire_time = r.acquire_time;
  lease.renew_time = r.renew_time;
  lease.transitions = r.transitions;
  return LeaseJson(lease);
}

}  // namespace

LeaderElector::LeaderElector(Api& client, LeaderOptions options)
    : client_(client), options_(std::move(options)) {
  path_ =
      absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", options_.namespace_name, "/leases");
}

LeaderElector::~LeaderElector() { Stop(); }

bool LeaderElector::is_leader() const {
  return leader_.load() && options_.clock->Now().time_since_epoch().count() < leader_until_.load();
}

void LeaderElector::Start() {
  thread_ = std::thread([this] {
    common::NameThisThread("leader");
    Run();
  });
}

void LeaderElector::Stop() {
  if (stop_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  {
    common::MutexLock lock(&mu_);  // so Run() cannot miss the wakeup
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  if (leader_.load()) Release();
}

// Only the elector's thread changes leader_ (and Stop() once that thread has ended).
void LeaderElector::SetLeader(bool leader) {
  if (!leader) leader_until_.store(0);
  if (leader_.load() == leader) return;
  transitions_.fetch_add(1);
  common::Log(common::LogLevel::kInfo, leader ? "became leader" : "lost leadership",
              {{"lease", options_.lease_name}, {"identity", options_.identity}});
  // Whatever must be in place before this replica acts as leader happens first.
  if (leader && options_.on_change) options_.on_change(true);
  leader_.store(leader);
  if (!leader && options_.on_change) options_.on_change(false);
}

bool LeaderElector::TryAcquireOrRenew() {
  auto now = options_.clock->Now();
  std::string item = absl::StrCat(path_, "/", options_.lease_name);
  absl::StatusOr<ApiResponse> got = client_.Get(item);
  // When the record was seen, for the expiry clock: after the GET returned, so a peer's renewal
  // that landed while the GET was in flight never makes its lease look older than it is.
  auto seen_at = options_.clock->Now();
  if (!got.ok()) return false;
  if (got->status == 404) {
    LeaseRecord fresh{options_.identity, MicroTimeNow(), MicroTimeNow(), 0, ""};
    absl::StatusOr<ApiResponse> created = client_.Post(path_, LeaseBody(options_, fresh));
    return created.ok() && created->status == 201;
  }
  if (got->status != 200) return false;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(got->body);
  if (!doc.ok()) return false;
  LeaseRecord record = ReadLease(*doc);
  std::string seen = absl::StrCat(record.holder, "|", record.renew_time, "|", record.transitions);
  if (seen != observed_record_) {
    observed_record_ = seen;
    observed_at_ = seen_at;
  }
  const bool mine = record.holder == options_.identity;
  const bool expired = record.holder.empty() || now - observed_at_ > options_.lease_duration;
  if (!mine && !expired) return false;
  LeaseRecord next = record;
  next.renew_time = MicroTimeNow();
  if (!mine) {
    next.holder = options_.identity;
    next.acquire_time = next.renew_time;
    next.transitions = record.transitions + 1;
  }
  // resourceVersion makes this a compare-and-swap: a peer that wrote first makes it a 409.
  absl::StatusOr<ApiResponse> put = client_.Put(item, LeaseBody(options_, next));
  if (!put.ok() || put->status != 200) return false;
  observed_record_ = absl::StrCat(next.holder, "|", next.renew_time, "|", next.transitions);
  observed_at_ = now;
  return true;
}

void LeaderElector::Release() {
  // Step down before the lease is handed over: once the holder is cleared a peer may take it
  // at once, and two leaders must never overlap.
  SetLeader(false);
  std::string item = absl::StrCat(path_, "/", options_.lease_name);
  absl::StatusOr<ApiResponse> got = client_.Get(item);
  if (got.ok() && got->status == 200) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(got->body);
    if (doc.ok()) {
      LeaseRecord record = ReadLease(*doc);
      if (record.holder == options_.identity) {
        record.holder.clear();
        record.renew_time = MicroTimeNow();
        (void)client_.Put(item, LeaseBody(options_, record));
      }
    }
  }
}

void LeaderElector::Run() {
  // A peer takes over no sooner than a lease duration after it saw our last renewal, which
  // was after that renewal's attempt began; we stop claiming a margin before that.
  const auto margin = std::min<Clock::Duration>(options_.retry_period, options_.lease_duration / 2);
  while (!stop_.load()) {
    auto attempt = options_.clock->Now();
    bool held = TryAcquireOrRenew();
    auto now = options_.clock->Now();
    if (held) {
      last_renew_ = attempt;
      leader_until_.store((attempt + options_.lease_duration - margin).time_since_epoch().count());
      SetLeader(true);
    } else if (leader_.load() && now - last_renew_ >= options_.lease_duration - margin) {
      // Could not renew in time: step down (is_leader() already says no).
      SetLeader(false);
    }
    common::MutexLock lock(&mu_);
    options_.clock->WaitFor(&mu_, &cv_, options_.retry_period, [this] { return stop_.load(); });
  }
}

}  // namespace kube
