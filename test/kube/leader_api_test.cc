// kube::LeaderElector's Lease decisions, one retry period at a time on a FakeClock, over the
// in-memory Api: create the Lease when there is none, renew it with the resourceVersion read,
// leave a peer's lease alone while its record keeps changing and take it over (holder,
// acquireTime, one more transition) once it has stood unchanged for a lease duration, lose a
// take-over the API refuses, step down when renewals fail for too long, and release the lease on
// Stop(). leader_test.cc runs replicas against each other over the HTTPS emulation.
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "kube/leader.h"
#include "test/kube/fake_clock.h"
#include "test/support/in_memory_api.h"

namespace {

using namespace std::chrono_literals;
using testing_support::InMemoryApi;

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/gpu-system/leases";
constexpr char kLease[] =
    "/apis/coordination.k8s.io/v1/namespaces/gpu-system/leases/gpu-tenancy-extender";

// The fields of a Lease body the election reads and writes.
struct LeaseFields {
  std::string resource_version, holder, acquire_time, renew_time;
  int64_t duration = -1, transitions = -1;
};

LeaseFields ReadLeaseFields(const std::string& json) {
  LeaseFields f;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  EXPECT_TRUE(doc.ok()) << json;
  if (!doc.ok()) return f;
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Lease");
  if (const common::JsonValue* meta = common::FindMember(*doc, "metadata")) {
    f.resource_version = std::string(common::StringOr(*meta, "resourceVersion"));
    EXPECT_EQ(common::StringOr(*meta, "name"), "gpu-tenancy-extender");
    EXPECT_EQ(common::StringOr(*meta, "namespace"), "gpu-system");
  }
  if (const common::JsonValue* spec = common::FindMember(*doc, "spec")) {
    f.holder = std::string(common::StringOr(*spec, "holderIdentity"));
    f.acquire_time = std::string(common::StringOr(*spec, "acquireTime"));
    f.renew_time = std::string(common::StringOr(*spec, "renewTime"));
    if (const common::JsonValue* d = common::FindMember(*spec, "leaseDurationSeconds")) {
      f.duration = d->GetInt64();
    }
    if (const common::JsonValue* t = common::FindMember(*spec, "leaseTransitions")) {
      f.transitions = t->GetInt64();
    }
  }
  return f;
}

std::string PeerLease(const std::string& renew_time, int transitions) {
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{)"
         R"("name":"gpu-tenancy-extender","namespace":"gpu-system"},"spec":{)"
         R"("holderIdentity":"peer","leaseDurationSeconds":15,)"
         R"("acquireTime":"2026-01-01T00:00:00.000000Z","renewTime":")" +
         renew_time + R"(","leaseTransitions":)" + std::to_string(transitions) + "}}";
}

class LeaderCallsTest : public ::testing::Test {
 protected:
  kube::LeaderOptions Options() {
    kube::LeaderOptions o;
    o.namespace_name = "gpu-system";
    o.identity = "me";
    o.lease_duration = 15s;
    o.retry_period = 2s;
    o.clock = &clock_;
    o.on_change = [this](bool leading) {
      std::lock_guard<std::mutex> lock(mu_);
      changes_.push_back(leading);
    };
    return o;
  }
  // One more attempt: the retry period passes and the elector waits again.
  void NextAttempt() {
    clock_.Advance(2s);
    ASSERT_TRUE(clock_.AwaitSleepers(1));
  }
  std::vector<bool> Changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }

  kube_test::FakeClock clock_;  // outlives the elector, which waits on it
  InMemoryApi api_;
  std::mutex mu_;
  std::vector<bool> changes_;
};

TEST_F(LeaderCallsTest, CreatesTheLeaseWhenThereIsNoneRenewsItAndReleasesItOnStop) {
  kube::LeaderElector elector(api_, Options());
  elector.Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  EXPECT_TRUE(elector.is_leader());
  EXPECT_EQ(Changes(), std::vector<bool>{true});
  std::vector<InMemoryApi::Call> calls = api_.Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].method, "GET");
  EXPECT_EQ(calls[0].path, kLease);
  EXPECT_EQ(calls[1].method, "POST");
  EXPECT_EQ(calls[1].path, kLeases);
  LeaseFields created = ReadLeaseFields(calls[1].body);
  EXPECT_EQ(created.holder, "me");
  EXPECT_EQ(created.duration, 15);
  EXPECT_EQ(created.transitions, 0);
  EXPECT_EQ(created.resource_version, "");
  EXPECT_FALSE(created.acquire_time.empty());
  EXPECT_FALSE(created.renew_time.empty());

  const std::string stored_version = ReadLeaseFields(*api_.Object(kLease)).resource_version;
  api_.ClearCalls();
  NextAttempt();
  std::vector<InMemoryApi::Call> renew = api_.Calls("PUT", kLease);
  ASSERT_EQ(renew.size(), 1u);
  LeaseFields renewed = ReadLeaseFields(renew[0].body);
  EXPECT_EQ(renewed.resource_version, stored_version);  // the compare-and-swap
  EXPECT_EQ(renewed.holder, "me");
  EXPECT_EQ(renewed.transitions, 0);
  EXPECT_EQ(renewed.acquire_time, created.acquire_time);
  EXPECT_TRUE(elector.is_leader());

  elector.Stop();
  EXPECT_FALSE(elector.is_leader());
  EXPECT_EQ(Changes(), (std::vector<bool>{true, false}));
  std::vector<InMemoryApi::Call> puts = api_.Calls("PUT", kLease);
  ASSERT_EQ(puts.size(), 2u);
  EXPECT_EQ(ReadLeaseFields(puts[1].body).holder, "");
  EXPECT_EQ(ReadLeaseFields(*api_.Object(kLease)).holder, "");
}

TEST_F(LeaderCallsTest, APeersLeaseIsTakenOverOnlyAfterStandingUnchangedForALeaseDuration) {
  api_.SetObject(kLease, PeerLease("2026-01-01T00:00:00.000000Z", 3));
  kube::LeaderElector elector(api_, Options());
  elector.Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));  // first seen at t0
  // The peer renews at t0+4s: its lease counts from then.
  for (int i = 0; i < 2; ++i) NextAttempt();
  api_.SetObject(kLease, PeerLease("2026-01-01T00:00:04.000000Z", 3));
  for (int i = 0; i < 8; ++i) NextAttempt();  // to t0+20s: the renewal, seen at t0+6s, is 14 s old
  EXPECT_TRUE(api_.Calls("PUT", kLease).empty());
  EXPECT_FALSE(elector.is_leader());
  EXPECT_TRUE(Changes().empty());

  const std::string peer_version = ReadLeaseFields(*api_.Object(kLease)).resource_version;
  NextAttempt();  // t0+22s: 16 s unchanged
  std::vector<InMemoryApi::Call> taken = api_.Calls("PUT", kLease);
  ASSERT_EQ(taken.size(), 1u);
  LeaseFields mine = ReadLeaseFields(taken[0].body);
  EXPECT_EQ(mine.holder, "me");
  EXPECT_EQ(mine.transitions, 4);
  EXPECT_EQ(mine.resource_version, peer_version);
  EXPECT_EQ(mine.acquire_time, mine.renew_time);
  EXPECT_TRUE(elector.is_leader());
  EXPECT_EQ(Changes(), std::vector<bool>{true});
}

TEST_F(LeaderCallsTest, ATakeOverTheApiRefusesIsNoLeadership) {
  api_.SetObject(kLease, PeerLease("2026-01-01T00:00:00.000000Z", 0));
  kube::LeaderElector elector(api_, Options());
  elector.Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  for (int i = 0; i < 7; ++i) NextAttempt();  // t0+14s
  api_.Reply("PUT", kLease, 409);             // a peer wrote first
  NextAttempt();                              // t0+16s: expired, the take-over is refused
  EXPECT_EQ(api_.Calls("PUT", kLease).size(), 1u);
  EXPECT_FALSE(elector.is_leader());
  EXPECT_TRUE(Changes().empty());
  EXPECT_EQ(ReadLeaseFields(*api_.Object(kLease)).holder, "peer");
}

TEST_F(LeaderCallsTest, ALeaderThatCannotRenewStepsDownAMarginBeforeThePeersMayTakeOver) {
  kube::LeaderElector elector(api_, Options());
  elector.Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));  // created at t0
  ASSERT_TRUE(elector.is_leader());
  for (int i = 0; i < 8; ++i) api_.Fail("GET", kLease);
  for (int i = 0; i < 6; ++i) NextAttempt();  // t0+12s: the last renewal still holds
  EXPECT_TRUE(elector.is_leader());
  EXPECT_EQ(Changes(), std::vector<bool>{true});
  NextAttempt();  // t0+14s: past lease duration - retry period
  EXPECT_FALSE(elector.is_leader());
  EXPECT_EQ(Changes(), (std::vector<bool>{true, false}));
  EXPECT_TRUE(api_.Calls("PUT", kLease).empty());
}

}  // namespace
