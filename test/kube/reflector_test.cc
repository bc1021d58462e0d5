// kube::Reflector on one collection (namespaces) against the kube-apiserver emulation over
// HTTPS: every page of a list applied as one replacement, the watch's query (the list's
// resourceVersion, bookmarks, a server-side timeout no later than the next resync), events in
// order, a clean end resumed where it left off, 410 Gone (an ERROR event or an HTTP 410) as a
// relist without backoff, the jittered exponential backoff of failed lists and refused watches,
// resyncs and relist requests, and Stop() ending a watch or a backoff at once. Its clock is a
// FakeClock: backoffs are measured by jumping to their end, resyncs happen when time is moved.
#include "kube/reflector.h"

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/kube/fake_clock.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

using std::chrono::milliseconds;

constexpr char kPath[] = "/api/v1/namespaces";

std::string NameOf(const common::JsonValue& object) {
  const common::JsonValue* meta = common::FindMember(object, "metadata");
  return meta ? std::string(common::StringOr(*meta, "name")) : "";
}

class ReflectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeApiServer::Options options;
    options.bookmark_interval = std::chrono::hours(1);  // no line unless a test makes one
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"a", "b", "c", "d", "e"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(ConfigFor(*api_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    options_.clock = &clock_;
    options_.page_size = 2;
    options_.resync = std::chrono::hours(1);
    options_.backoff_initial = milliseconds(200);
    options_.backoff_max = milliseconds(1000);
    options_.read_timeout_seconds = 60;
  }
  void TearDown() override { reflector_.reset(); }

  void Start() {
    kube::ReflectorHandler handler;
    handler.replace = [this](const std::vector<const common::JsonValue*>& items) {
      std::lock_guard<std::mutex> lock(mu_);
      replaced_.emplace_back();
      for (const common::JsonValue* item : items) replaced_.back().push_back(NameOf(*item));
    };
    handler.event = [this](absl::string_view type, const common::JsonValue& object) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(absl::StrCat(type, " ", NameOf(object)));
    };
    reflector_ = std::make_unique<kube::Reflector>(*client_, kPath, handler, options_);
    reflector_->Start();
  }
  // Starts, and waits for the first list and the watch after it.
  void StartWatching() {
    Start();
    ASSERT_TRUE(WaitFor([&] { return reflector_->synced() && Watches() == 1; }));
    ASSERT_TRUE(api_->WaitForWatches(1, 10s));
  }
  const kube::ReflectorCounters& counters() const { return reflector_->counters(); }
  int64_t Lists() const { return api_->CountRequests("GET", kPath, "limit="); }
  int64_t Watches() const { return api_->CountRequests("GET", kPath, "watch=1"); }
  std::string LastWatchTarget() const {
    std::string last;
    for (const testing_support::RequestRecord& r : api_->Requests()) {
      if (r.path == kPath && r.target.find("watch=1") != std::string::npos) last = r.target;
    }
    return last;
  }
  std::vector<std::vector<std::string>> Replaced() {
    std::lock_guard<std::mutex> lock(mu_);
    return replaced_;
  }
  std::vector<std::string> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Waits for the reflector to sleep, jumps to the end of its sleep and says how long it was.
  milliseconds Backoff() {
    if (!clock_.AwaitSleepers(1)) {
      ADD_FAILURE() << "the reflector is not backing off";
      return milliseconds(-1);
    }
    kube::Clock::TimePoint start = clock_.Now();
    clock_.AdvanceToNextDeadline();
    return std::chrono::duration_cast<milliseconds>(clock_.Now() - start);
  }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::ApiClient> client_;
  FakeClock clock_;  // outlives the reflector
  kube::ReflectorOptions options_;
  std::unique_ptr<kube::Reflector> reflector_;
  std::mutex mu_;
  std::vector<std::vector<std::string>> replaced_;
  std::vector<std::string> events_;
};

TEST_F(ReflectorTest, AllPagesAreOneReplacementThenTheWatchStartsAtTheListsVersion) {
  const int64_t version = api_->resource_version();
  StartWatching();
  EXPECT_EQ(Lists(), 3);  // 5 namespaces, 2 a page
  EXPECT_EQ(api_->CountRequests("GET", kPath, "continue="), 2);
  EXPECT_EQ(Replaced(), (std::vector<std::vector<std::string>>{{"a", "b", "c", "d", "e"}}));
  EXPECT_EQ(counters().lists.load(), 1u);
  EXPECT_EQ(counters().watches.load(), 1u);
  EXPECT_EQ(LastWatchTarget(),
            absl::StrCat(kPath, "?watch=1&allowWatchBookmarks=true&resourceVersion=", version,
                         "&timeoutSeconds=300"));
}

TEST_F(ReflectorTest, TheWatchTimeoutIsNoLaterThanTheNextResync) {
  struct Row {
    const char* name;
    std::chrono::milliseconds resync;
    int watch_timeout_seconds;
    std::string expected;
  };
  const Row rows[] = {
      {"the resync comes first", std::chrono::seconds(90), 300, "&timeoutSeconds=90"},
      {"the watch timeout comes first", std::chrono::hours(1), 120, "&timeoutSeconds=120"},
      {"a part second rounds up", std::chrono::milliseconds(90500), 300, "&timeoutSeconds=91"},
      {"a resync under a second still watches", std::chrono::milliseconds(500), 300,
       "&timeoutSeconds=1"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    options_.resync = row.resync;
    options_.watch_timeout_seconds = row.watch_timeout_seconds;
    api_->ClearRequests();
    StartWatching();
    EXPECT_TRUE(absl::EndsWith(LastWatchTarget(), row.expected)) << LastWatchTarget();
    reflector_.reset();
  }
}

TEST_F(ReflectorTest, EventsArriveInOrderAndACleanEndResumesFromTheLastOneSeen) {
  StartWatching();
  ASSERT_TRUE(api_->AddNamespace("x").ok());
  ASSERT_TRUE(
      api_->MergePatch(Resource::kNamespaces, "", "x", R"({"metadata":{"labels":{"k":"v"}}})")
          .ok());
  ASSERT_TRUE(api_->Delete(Resource::kNamespaces, "", "a").ok());
  const int64_t version = api_->resource_version();
  ASSERT_TRUE(WaitFor([&] { return Events().size() == 3; }));
  EXPECT_EQ(Events(), (std::vector<std::string>{"ADDED x", "MODIFIED x", "DELETED a"}));
  EXPECT_EQ(counters().events.load(), 3u);

  api_->DropWatches(/*graceful=*/true);  // as when the server-side timeout ends it
  ASSERT_TRUE(WaitFor([&] { return Watches() == 2; }));
  EXPECT_NE(LastWatchTarget().find(absl::StrCat("&resourceVersion=", version, "&")),
            std::string::npos)
      << LastWatchTarget();
  EXPECT_EQ(counters().lists.load(), 1u);
  EXPECT_EQ(counters().watch_restarts.load(), 0u);
}

TEST_F(ReflectorTest, GoneMeansAnImmediateRelistCountedAsARestart) {
  for (const char* how : {"ERROR event", "HTTP 410"}) {
    SCOPED_TRACE(how);
    api_->ClearRequests();
    StartWatching();
    if (std::string(how) == "HTTP 410") {
      api_->InjectFailure("GET", kPath, 410);
    } else {
      // The version moves on without the namespace watch seeing it; history is then compacted.
      ASSERT_TRUE(api_->AddNode(MigNodeJson(absl::StrCat("node-", Lists()), 1)).ok());
      api_->Compact();
    }
    api_->DropWatches(/*graceful=*/true);
    // Time stands still: a relist that waited for a backoff would never come.
    ASSERT_TRUE(WaitFor([&] { return counters().lists.load() == 2 && Watches() == 3; }));
    EXPECT_EQ(counters().watch_restarts.load(), 1u);
    EXPECT_EQ(Replaced().size(), 2u);
    EXPECT_NE(LastWatchTarget().find(absl::StrCat("&resourceVersion=", api_->resource_version())),
              std::string::npos);
    reflector_.reset();
    std::lock_guard<std::mutex> lock(mu_);
    replaced_.clear();
  }
}

TEST_F(ReflectorTest, FailedListsBackOffExponentiallyWithJitterUpToTheCap) {
  api_->InjectFailure("GET", kPath, 500, /*times=*/5);
  Start();
  // Full jitter: each wait is within [d/2, d] for d = 200, 400, 800, then the 1000 ms cap.
  const std::pair<int, int> expected[] = {
      {100, 200}, {200, 400}, {400, 800}, {500, 1000}, {500, 1000}};
  for (const auto& [low, high] : expected) {
    SCOPED_TRACE(absl::StrCat("up to ", high, " ms"));
    EXPECT_FALSE(reflector_->synced());
    milliseconds waited = Backoff();
    EXPECT_GE(waited.count(), low);
    EXPECT_LE(waited.count(), high);
  }
  ASSERT_TRUE(WaitFor([&] { return reflector_->synced(); }));
  EXPECT_EQ(counters().lists.load(), 1u);  // applied lists, not attempts
  EXPECT_EQ(api_->CountRequests("GET", kPath, "limit=2&continue="), 2);  // pages 2 and 3 once
}

TEST_F(ReflectorTest, ARefusedWatchBacksOffWithoutRelisting) {
  StartWatching();
  api_->InjectFailure("GET", kPath, 500, /*times=*/2);
  api_->DropWatches(/*graceful=*/true);  // a clean end: the backoff starts from the beginning
  milliseconds first = Backoff();
  EXPECT_GE(first.count(), 100);
  EXPECT_LE(first.count(), 200);
  milliseconds second = Backoff();
  EXPECT_GE(second.count(), 200);
  EXPECT_LE(second.count(), 400);
  ASSERT_TRUE(WaitFor([&] { return Watches() == 4; }));
  ASSERT_TRUE(api_->WaitForWatches(1, 10s));
  EXPECT_EQ(counters().watch_restarts.load(), 2u);
  EXPECT_EQ(counters().lists.load(), 1u);
  EXPECT_EQ(Lists(), 3);  // the first list's pages only
}

TEST_F(ReflectorTest, AResyncIsARelistNotARestart) {
  StartWatching();
  clock_.Advance(options_.resync);
  // The reflector looks at the time between lines: the next event makes it relist.
  ASSERT_TRUE(api_->AddNamespace("late").ok());
  ASSERT_TRUE(WaitFor([&] { return counters().lists.load() == 2; }));
  EXPECT_EQ(Events(), std::vector<std::string>{"ADDED late"});
  EXPECT_EQ(Replaced().back().size(), 6u);
  EXPECT_EQ(counters().watch_restarts.load(), 0u);
}

TEST_F(ReflectorTest, AWatchEndingWithinTheResyncsLastSecondIsNotARestart) {
  options_.resync = std::chrono::seconds(90);
  StartWatching();
  clock_.Advance(std::chrono::milliseconds(89500));
  api_->DropWatches(/*graceful=*/true);  // the next watch has half a second left
  ASSERT_TRUE(WaitFor([&] { return Watches() == 2; }));
  EXPECT_TRUE(absl::EndsWith(LastWatchTarget(), "&timeoutSeconds=1")) << LastWatchTarget();
  EXPECT_EQ(counters().lists.load(), 1u);
  EXPECT_EQ(counters().watch_restarts.load(), 0u);
}

TEST_F(ReflectorTest, ARequestedRelistInterruptsTheWatchAndIsNotARestart) {
  StartWatching();
  uint64_t ticket = reflector_->RequestRelist();
  EXPECT_FALSE(reflector_->ListedSince(ticket));
  ASSERT_TRUE(WaitFor([&] { return reflector_->ListedSince(ticket); }));
  EXPECT_EQ(counters().lists.load(), 2u);
  ASSERT_TRUE(WaitFor([&] { return Watches() == 2; }));
  EXPECT_EQ(counters().watch_restarts.load(), 0u);
}

TEST_F(ReflectorTest, ARequestedRelistCutsABackoffShort) {
  api_->InjectFailure("GET", kPath, 500, /*times=*/2);
  Start();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  const kube::Clock::TimePoint frozen = clock_.Now();
  uint64_t ticket = reflector_->RequestRelist();
  // The second attempt comes with no time moved; it fails too, and the reflector waits again.
  ASSERT_TRUE(WaitFor([&] { return Lists() == 2; }));
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  EXPECT_EQ(clock_.Now(), frozen);
  EXPECT_FALSE(reflector_->ListedSince(ticket));
  clock_.AdvanceToNextDeadline();
  ASSERT_TRUE(WaitFor([&] { return reflector_->ListedSince(ticket); }));
}

TEST_F(ReflectorTest, StopEndsAnIdleWatchOrABackoffAtOnce) {
  for (bool in_backoff : {false, true}) {
    SCOPED_TRACE(in_backoff ? "backing off" : "watching");
    if (in_backoff) {
      api_->InjectFailure("GET", kPath, 500, /*times=*/100);
      Start();
      ASSERT_TRUE(clock_.AwaitSleepers(1));
    } else {
      StartWatching();
    }
    auto start = std::chrono::steady_clock::now();
    reflector_->Stop();
    // Neither the 60 s read timeout nor the backoff (time stands still) ended it.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    reflector_.reset();
  }
}

}  // namespace
}  // namespace kube_test
