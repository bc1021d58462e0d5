// Leader election on a coordination.k8s.io/v1 Lease in the kube-apiserver emulation: one leader
// at a time, a released lease is taken over at once, a crashed leader's lease after it expires,
// and binds routed to whoever leads never over-allocate across a failover. Lease time is a
// FakeClock the tests move one retry period at a time; the API calls are real.
#include "kube/leader.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "extender/bind.h"
#include "gtest/gtest.h"
#include "test/kube/fake_clock.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

kube::LeaderOptions Options(const std::string& identity, std::chrono::milliseconds lease,
                            std::chrono::milliseconds retry, kube::Clock* clock) {
  kube::LeaderOptions o;
  o.namespace_name = "gpu-system";
  o.lease_name = "gpu-tenancy-extender";
  o.identity = identity;
  o.lease_duration = lease;
  o.retry_period = retry;
  o.clock = clock;
  return o;
}

std::unique_ptr<kube::ApiClient> Client(const FakeApiServer& api, const std::string& token) {
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> c =
      kube::ApiClient::Create(ConfigFor(api, token));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

std::string LeaseHolder(const FakeApiServer& api) {
  absl::StatusOr<rapidjson::Document> doc =
      common::ParseJson(api.GetObject(Resource::kLeases, "gpu-system", "gpu-tenancy-extender"));
  if (!doc.ok()) return "<none>";
  const common::JsonValue* spec = common::FindMember(*doc, "spec");
  return spec ? std::string(common::StringOr(*spec, "holderIdentity")) : "";
}

// Samples is_leader() of every elector until stopped; counts samples where two claimed it.
class OverlapWatch {
 public:
  explicit OverlapWatch(std::vector<const kube::LeaderElector*> electors)
      : electors_(std::move(electors)), thread_([this] { Run(); }) {}
  ~OverlapWatch() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // Replaces one elector being sampled (a replica that restarted its elector). Returns once a
  // whole sampling round has started after the swap, so no round still holds the old elector
  // and the caller may delete it: the round that may have held it has ended, and its
  // samples_.fetch_add orders its last read before our load (ThreadSanitizer found the
  // use-after-free when a test deleted the elector right after Set).
  void Set(size_t i, const kube::LeaderElector* e) {
    slots_[i].store(e);
    AwaitRounds(2);
  }
  // Returns once `n` more sampling rounds have ended (at least n - 1 began after the call).
  void AwaitRounds(int64_t n) {
    const int64_t seen = samples_.load();
    while (!stop_.load() && samples_.load() < seen + n) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  int overlaps() const { return overlaps_.load(); }
  int64_t samples() const { return samples_.load(); }

 private:
  void Run() {
    for (size_t i = 0; i < electors_.size(); ++i) slots_[i].store(electors_[i]);
    while (!stop_.load()) {
      int leaders = 0;
      for (size_t i = 0; i < electors_.size(); ++i) {
        const kube::LeaderElector* e = slots_[i].load();
        if (e && e->is_leader()) ++leaders;
      }
      if (leaders > 1) overlaps_.fetch_add(1);
      samples_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  std::vector<const kube::LeaderElector*> electors_;
  std::atomic<const kube::LeaderElector*> slots_[4] = {};
  std::atomic<bool> stop_{false};
  std::atomic<int> overlaps_{0};
  std::atomic<int64_t> samples_{0};
  std::thread thread_;
};

class LeaderTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::milliseconds kRetry = 100ms;

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    api_->AcceptTokens({"token-a", "token-b"});
  }
  // One retry period for `electors` running electors: each has made its attempt and waits
  // before time moves, and has made its next one and waits again when this returns.
  void Tick(size_t electors) {
    ASSERT_TRUE(clock_.AwaitSleepers(electors));
    clock_.Advance(kRetry);
    ASSERT_TRUE(clock_.AwaitSleepers(electors));
  }
  // Ticks until `done` holds, at most `limit` ticks; true if it did.
  template <typename Pred>
  bool TickUntil(size_t electors, Pred done, int limit = 100) {
    for (int i = 0; i < limit && !done(); ++i) {
      Tick(electors);
      if (testing::Test::HasFatalFailure()) return false;
    }
    return done();
  }

  FakeClock clock_;  // outlives every elector
  std::unique_ptr<FakeApiServer> api_;
};

TEST_F(LeaderTest, OneLeaderAndAReleasedLeaseIsTakenOverAtOnce) {
  // A lease far longer than the test waits: only the release can explain a takeover.
  std::unique_ptr<kube::ApiClient> ca = Client(*api_, "token-a"), cb = Client(*api_, "token-b");
  auto a = std::make_unique<kube::LeaderElector>(*ca, Options("replica-a", 30s, kRetry, &clock_));
  kube::LeaderElector b(*cb, Options("replica-b", 30s, kRetry, &clock_));
  OverlapWatch watch({a.get(), &b});
  a->Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  ASSERT_TRUE(a->is_leader());
  b.Start();
  // b keeps trying (several retry periods) and keeps losing. Time stands still between ticks,
  // so the watch gets a few rounds of each state the electors pass through.
  ASSERT_TRUE(TickUntil(2, [&] {
    watch.AwaitRounds(10);
    return api_->CountRequests("GET", "/apis/coordination.k8s.io/") >= 20;
  }));
  EXPECT_TRUE(a->is_leader());
  EXPECT_FALSE(b.is_leader());
  EXPECT_EQ(LeaseHolder(*api_), "replica-a");

  watch.Set(0, nullptr);
  a->Stop();  // releases
  EXPECT_FALSE(a->is_leader());
  Tick(1);  // b's next attempt
  EXPECT_TRUE(b.is_leader()) << "the released lease was not taken";
  EXPECT_EQ(LeaseHolder(*api_), "replica-b");
  a.reset();
  watch.Stop();
  EXPECT_EQ(watch.overlaps(), 0);
  EXPECT_GT(watch.samples(), 100);
}

TEST_F(LeaderTest, ACrashedLeaderIsReplacedOnlyAfterItsLeaseExpires) {
  constexpr auto kLease = 1000ms;
  std::unique_ptr<kube::ApiClient> ca = Client(*api_, "token-a"), cb = Client(*api_, "token-b");
  auto a =
      std::make_unique<kube::LeaderElector>(*ca, Options("replica-a", kLease, kRetry, &clock_));
  kube::LeaderElector b(*cb, Options("replica-b", kLease, kRetry, &clock_));
  a->Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  ASSERT_TRUE(a->is_leader());
  b.Start();
  OverlapWatch watch({a.get(), &b});
  ASSERT_TRUE(
      TickUntil(2, [&] { return api_->CountRequests("GET", "/apis/coordination.k8s.io/") >= 10; }));
  EXPECT_FALSE(b.is_leader());

  // a is cut off from the API server: it can neither renew nor release.
  api_->AcceptTokens({"token-b"});
  kube::Clock::TimePoint cut = clock_.Now();
  ASSERT_TRUE(TickUntil(2, [&] { return b.is_leader(); }));
  kube::Clock::TimePoint taken = clock_.Now();
  EXPECT_FALSE(a->is_leader()) << "a must have stepped down before its lease ran out";
  // b waited for the lease to run out (less the last renewal a made before the cut).
  EXPECT_GE(taken - cut, kLease - 2 * kRetry);
  EXPECT_LE(taken - cut, kLease + 2 * kRetry) << "b waited longer than the lease";
  EXPECT_EQ(LeaseHolder(*api_), "replica-b");

  watch.Set(0, nullptr);
  a.reset();  // its release cannot reach the server either
  EXPECT_TRUE(b.is_leader());
  watch.Stop();
  EXPECT_EQ(watch.overlaps(), 0) << "two leaders at once";
}

// One gpu-tenancy replica as cmd/serve_cluster.cc wires it for several replicas: cache, binder,
// and an elector whose leadership (with the fence's fresh pod list) gates the bind path.
struct LeadingReplica {
  LeadingReplica(const FakeApiServer& api, const std::string& token, const std::string& identity,
                 kube::Clock& clock)
      : replica(ConfigFor(api, token)), identity(identity), clock(clock) {
    if (replica.source) fence = std::make_unique<kube::LeaderFence>(*replica.source);
  }
  ~LeadingReplica() { StopElector(); }
  void StartElector() {
    kube::LeaderOptions o = Options(identity, 1000ms, 100ms, &clock);
    o.on_change = [f = fence.get()](bool leading) { f->OnLeadership(leading); };
    auto e = std::make_unique<kube::LeaderElector>(*replica.client, o);
    kube::LeaderElector* raw = e.get();
    {
      std::lock_guard<std::mutex> lock(serving);
      // Stopped electors stay alive: the overlap sampler may still hold their address.
      if (elector) retired.push_back(std::move(elector));
      elector = std::move(e);
      replica.binder->SetGate([this] { return elector && elector->is_leader() && fence->Ready(); });
    }
    raw->Start();
  }
  // As serve shuts down: requests in flight finish first, then the lease is released.
  void StopElector() {
    std::lock_guard<std::mutex> lock(serving);
    if (elector) elector->Stop();
  }
  bool leading() {
    std::lock_guard<std::mutex> lock(serving);
    return elector && elector->is_leader() && fence->Ready();
  }
  bool holds_lease() {
    std::lock_guard<std::mutex> lock(serving);
    return elector && elector->is_leader();
  }
  // A bind as the Service would deliver it to this replica.
  std::string Bind(const std::string& pod, const std::string& node) {
    std::lock_guard<std::mutex> lock(serving);
    return ErrorOf(extender::Bind(BindRequest("team", pod, node), *replica.binder).body);
  }

  Replica replica;
  std::string identity;
  kube::Clock& clock;
  std::unique_ptr<kube::LeaderFence> fence;
  std::mutex serving;
  std::vector<std::unique_ptr<kube::LeaderElector>> retired;
  std::unique_ptr<kube::LeaderElector> elector;
};

// Two replicas, each with its own cache, binder and elector. Binds are sent to either replica
// at random, as a Service does while its endpoints catch up with a change of leader; only the
// leader, and only once its fence list is in, may bind. The leader is released once and cut off
// once mid-stream. The API server must never show a node with more pods than slices. The
// router runs at the scheduler's pace in real time; the lease's time moves only when a
// failover needs it to (the caches and their reflectors keep the real clock).
TEST_F(LeaderTest, FailoverNeverAllocatesASliceTwice) {
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  ASSERT_TRUE(api_->AddNamespace("team").ok());
  for (const std::string& n : nodes) ASSERT_TRUE(api_->AddNode(MigNodeJson(n, 3)).ok());
  std::vector<std::string> pods;
  for (int i = 0; i < 30; ++i) {
    pods.push_back(absl::StrCat("job-", i));
    ASSERT_TRUE(api_->AddPod(MigPodJson("team", pods.back())).ok());
  }
  LeadingReplica a(*api_, "token-a", "replica-a", clock_), b(*api_, "token-b", "replica-b", clock_);
  ASSERT_TRUE(a.replica.Start());
  ASSERT_TRUE(b.replica.Start());
  ASSERT_TRUE(WaitFor([&] {
    return a.replica.state->PendingPod(UidOf("team", "job-29")) &&
           b.replica.state->PendingPod(UidOf("team", "job-29"));
  }));
  a.StartElector();
  ASSERT_TRUE(WaitFor([&] { return a.leading(); }));  // the lease at once; the fence's list
  b.StartElector();
  ASSERT_TRUE(clock_.AwaitSleepers(2));
  OverlapWatch watch({a.elector.get(), b.elector.get()});

  std::atomic<int> next{0}, bound{0}, full{0}, gated{0}, lost{0};
  std::thread router([&] {
    std::mt19937 rng(42);
    for (size_t i = 0; i < pods.size(); ++i) {
      const std::string& node = nodes[i % nodes.size()];
      bool done = WaitFor([&] {
        LeadingReplica& target = rng() % 2 ? a : b;
        std::string error = target.Bind(pods[i], node);
        if (error.empty()) {
          bound.fetch_add(1);
          return true;
        }
        if (absl::StrContains(error, "not the extender leader")) {
          gated.fetch_add(1);  // kube-scheduler retries; so do we
          return false;
        }
        if (absl::StrContains(error, "no longer fits")) {
          full.fetch_add(1);
          return true;
        }
        ADD_FAILURE() << pods[i] << ": " << error;
        return true;
      });
      if (!done) lost.fetch_add(1);
      next.store(static_cast<int>(i) + 1);
      std::this_thread::sleep_for(20ms);  // the scheduler's pace, so failovers land mid-stream
    }
  });

  // Failover 1: a releases (a clean shutdown), then comes back as a candidate.
  ASSERT_TRUE(WaitFor([&] { return next.load() >= 8; }));
  watch.Set(0, nullptr);
  a.StopElector();
  ASSERT_TRUE(TickUntil(1, [&] { return b.holds_lease(); }));
  ASSERT_TRUE(WaitFor([&] { return b.leading(); }));
  a.StartElector();
  ASSERT_TRUE(clock_.AwaitSleepers(2));
  watch.Set(0, a.elector.get());

  // Failover 2: b is cut off from the API server (a crash, as far as the lease can tell).
  ASSERT_TRUE(WaitFor([&] { return next.load() >= 16; }));
  api_->AcceptTokens({"token-a"});
  ASSERT_TRUE(TickUntil(2, [&] { return a.holds_lease(); }));
  ASSERT_TRUE(WaitFor([&] { return a.leading(); }));
  router.join();
  watch.Stop();
  EXPECT_EQ(watch.overlaps(), 0) << "two leaders at once";
  EXPECT_EQ(lost.load(), 0);
  EXPECT_GT(gated.load(), 0) << "binds reached the follower and must have been refused";

  int total = 0;
  for (const std::string& n : nodes) {
    int on_node = BoundInEmulator(*api_, n);
    EXPECT_LE(on_node, 3) << n << " is over-allocated";
    total += on_node;
  }
  EXPECT_EQ(total, 12) << "every slice should have been used exactly once";
  EXPECT_EQ(bound.load(), 12);
  EXPECT_EQ(full.load(), 18);
  // The surviving leader's accounting matches the API server.
  for (const std::string& n : nodes) {
    EXPECT_TRUE(WaitFor([&] { return Used(*a.replica.state, n) == BoundInEmulator(*api_, n); }))
        << n;
  }
  EXPECT_TRUE(WaitFor([&] { return a.replica.state->assumption_count() == 0; }));
  EXPECT_TRUE(a.replica.state->OccupancyConsistent());
  b.StopElector();
  a.StopElector();
}

}  // namespace
}  // namespace kube_test
