// LiveSource against the kube-apiserver emulation over HTTPS: paginated lists, watch events
// (large ones too), missed deletes healed by the periodic relist, 410 then relist, bookmarks,
// token rotation and API server restarts. Every wait is bounded and polls a condition. The
// reflectors run on a FakeClock: backoffs are skipped over, resyncs happen when a test moves
// time; the emulator and the HTTP client keep real time.
#include "kube/live_source.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "extender/verbs.h"
#include "gtest/gtest.h"
#include "test/kube/fake_clock.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

std::string FilterRequest(const std::string& ns, const std::string& name,
                          const std::vector<std::string>& nodes) {
  std::string names;
  for (const std::string& n : nodes)
    absl::StrAppend(&names, names.empty() ? "" : ",", "\"", n, "\"");
  return absl::StrCat(
      R"({"Pod":{"metadata":{"name":")", name, R"(","namespace":")", ns, R"(","uid":")",
      UidOf(ns, name),
      R"("},"spec":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
      R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
      R"("Nodes":null,"NodeNames":[)",
      names, "]}");
}

std::set<std::string> KeptNodes(const std::string& body) {
  std::set<std::string> out;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
  if (!doc.ok()) return out;
  const common::JsonValue* names = common::FindNonNull(*doc, "NodeNames");
  if (!names || !names->IsArray()) return out;
  for (const auto& n : names->GetArray()) out.insert(n.GetString());
  return out;
}

// The resourceVersion query parameter of the latest watch on `path`; -1 if none.
int64_t LastWatchVersion(const FakeApiServer& api, const std::string& path) {
  int64_t rv = -1;
  for (const testing_support::RequestRecord& r : api.Requests()) {
    if (r.method != "GET" || r.path != path || !absl::StrContains(r.target, "watch=1")) continue;
    size_t at = r.target.find("resourceVersion=");
    if (at == std::string::npos) continue;
    std::string value = r.target.substr(at + 16);
    value = value.substr(0, value.find('&'));
    int64_t parsed;
    if (absl::SimpleAtoi(value, &parsed)) rv = parsed;
  }
  return rv;
}

class LiveSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = StartCluster({"team", "other"}, {"n1", "n2", "n3"}, 3);
    ASSERT_NE(api_, nullptr);
    ASSERT_TRUE(api_->AddPod(MigPodJson("team", "a", "n1")).ok());
    ASSERT_TRUE(api_->AddPod(MigPodJson("team", "b", "n1")).ok());
    ASSERT_TRUE(api_->AddPod(MigPodJson("other", "c", "n2")).ok());
    ASSERT_TRUE(api_->AddPod(MigPodJson("team", "pending")).ok());
  }
  void TearDown() override {
    replica_.reset();
    api_.reset();
  }

  kube::LiveSourceOptions Options() { return FastOptions(&clock_); }
  Replica& StartReplica() { return StartReplica(Options()); }
  Replica& StartReplica(kube::LiveSourceOptions options, kube::ApiConfig config = {}) {
    replica_ = std::make_unique<Replica>(config.host.empty() ? ConfigFor(*api_) : config, options);
    EXPECT_TRUE(replica_->Start()) << "no first sync";
    return *replica_;
  }
  // WaitFor, without sleeping through backoffs: while a reflector waits one out, the clock
  // jumps to its end (as real time would get there, only sooner).
  template <typename Pred>
  bool Eventually(Pred done, std::chrono::milliseconds limit = 8s) {
    return WaitFor(
        [&] {
          if (done()) return true;
          clock_.AdvanceToNextDeadline();
          return false;
        },
        limit);
  }

  int64_t PodLists() const { return api_->CountRequests("GET", "/api/v1/pods", "limit="); }
  int64_t PodWatches() const { return api_->CountRequests("GET", "/api/v1/pods", "watch=1"); }

  FakeClock clock_;  // outlives the replica
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<Replica> replica_;
};

TEST_F(LiveSourceTest, FirstSyncIsPaginatedAndNothingIsDecidedBeforeIt) {
  // The pod list fails a few times: nodes are known, pods are not, so nothing is published and
  // filter asks kube-scheduler to retry rather than deciding blind.
  api_->InjectFailure("GET", "/api/v1/pods", 500, 3);
  replica_ = std::make_unique<Replica>(ConfigFor(*api_), Options());
  ASSERT_NE(replica_->source, nullptr);
  std::string filter = FilterRequest("team", "pending", {"n1", "n2", "n3"});
  extender::VerbReply before = extender::Filter(filter, replica_->state->Current().get());
  EXPECT_EQ(before.http_status, 200);
  EXPECT_EQ(ErrorOf(before.body), "gpu-tenancy: cache not synced");

  replica_->source->Start();
  ASSERT_TRUE(
      Eventually([&] { return api_->CountRequests("GET", "/api/v1/pods", "limit=") >= 2; }));
  if (api_->CountRequests("GET", "/api/v1/pods", "limit=") < 4) {  // still failing
    EXPECT_EQ(replica_->state->Current(), nullptr);
    EXPECT_FALSE(replica_->source->synced());
    EXPECT_EQ(ErrorOf(extender::Filter(filter, replica_->state->Current().get()).body),
              "gpu-tenancy: cache not synced");
  }
  ASSERT_TRUE(Eventually([&] { return replica_->state->Current() != nullptr; }));
  EXPECT_TRUE(Eventually([&] { return replica_->source->synced(); }));

  // Three nodes in pages of two: the second page was asked for with the continue token.
  EXPECT_GE(api_->CountRequests("GET", "/api/v1/nodes", "limit=2"), 2);
  EXPECT_GE(api_->CountRequests("GET", "/api/v1/nodes", "continue="), 1);
  EXPECT_GE(api_->CountRequests("GET", "/api/v1/pods", "continue="), 1);
  EXPECT_GE(api_->CountRequests("GET", "/api/v1/namespaces", "limit=2"), 1);

  kube::ClusterState& state = *replica_->state;
  EXPECT_EQ(Used(state, "n1"), 2);
  EXPECT_EQ(Used(state, "n2"), 1);
  EXPECT_EQ(Used(state, "n3"), 0);
  EXPECT_TRUE(state.PendingPod(UidOf("team", "pending")).has_value());
  EXPECT_EQ(state.Current()->snapshot->NamespaceLabels("team").count("kubernetes.io/metadata.name"),
            1u);

  extender::VerbReply after = extender::Filter(filter, state.Current().get());
  EXPECT_EQ(ErrorOf(after.body), "");
  EXPECT_EQ(KeptNodes(after.body), (std::set<std::string>{"n1", "n2", "n3"}));
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(LiveSourceTest, NothingIsPublishedUntilNamespacesAreListedToo) {
  // Tenants resolve through namespace labels: a decision made before the namespaces are known
  // could put a pod in the wrong tenant.
  kube::LiveSourceOptions options = Options();
  options.reflector.backoff_max = 100ms;
  api_->InjectFailure("GET", "/api/v1/namespaces", 500, 20);
  replica_ = std::make_unique<Replica>(ConfigFor(*api_), options);
  replica_->source->Start();
  // Pods are watched only after their list was applied. Time stands still meanwhile, so the
  // namespaces' reflector is still in its first backoff.
  ASSERT_TRUE(WaitFor([&] {
    return PodWatches() >= 1 && api_->CountRequests("GET", "/api/v1/nodes", "watch=1") >= 1;
  }));
  std::shared_ptr<const topology::ModelState> seen = replica_->state->Current();
  bool namespaces_listed = false;
  for (const testing_support::RequestRecord& r : api_->Requests()) {
    namespaces_listed |= r.path == "/api/v1/namespaces" && r.status == 200;
  }
  if (!namespaces_listed) {
    EXPECT_EQ(seen, nullptr) << "published before namespaces were listed";
  }
  EXPECT_TRUE(Eventually([&] { return replica_->state->Current() != nullptr; }));
}

TEST_F(LiveSourceTest, WatchEventsChangeOccupancy) {
  kube::ClusterState& state = *StartReplica().state;
  ASSERT_EQ(Used(state, "n3"), 0);

  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "d", "n3", 2)).ok());  // ADDED
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 2; })) << Used(state, "n3");

  ASSERT_TRUE(api_->MergePatch(Resource::kPods, "team", "d", R"({"status":{"phase":"Succeeded"}})")
                  .ok());  // MODIFIED: finished pods hold nothing
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 0; })) << Used(state, "n3");

  ASSERT_TRUE(api_->DeletePod("team", "a").ok());  // MODIFIED (deletionTimestamp), DELETED
  EXPECT_TRUE(Eventually([&] { return Used(state, "n1") == 1; })) << Used(state, "n1");

  ASSERT_TRUE(api_->DeletePod("team", "pending").ok());
  EXPECT_TRUE(Eventually([&] { return !state.PendingPod(UidOf("team", "pending")).has_value(); }));

  ASSERT_TRUE(api_->AddNode(MigNodeJson("n4", 1)).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n4") == 0; }));
  ASSERT_TRUE(api_->DeleteNode("n4").ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n4") == -1; }));
  EXPECT_TRUE(state.OccupancyConsistent());
}

// Watch events are parsed into a reused 64 KiB buffer; a bigger object spills past it.
TEST_F(LiveSourceTest, WatchEventsLargerThanTheEventBufferAreApplied) {
  kube::ClusterState& state = *StartReplica().state;
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "d", "n3", 2)).ok());
  ASSERT_TRUE(Eventually([&] { return Used(state, "n3") == 2; })) << Used(state, "n3");

  const std::string note(200 << 10, 'x');
  ASSERT_TRUE(api_->MergePatch(Resource::kPods, "team", "d",
                               absl::StrCat(R"({"metadata":{"annotations":{"note":")", note,
                                            R"("}},"status":{"phase":"Succeeded"}})"))
                  .ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 0; })) << Used(state, "n3");

  // The events after it still parse in the buffer.
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "e", "n3", 1)).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 1; })) << Used(state, "n3");
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(LiveSourceTest, MissedDeleteIsHealedByTheNextResync) {
  kube::LiveSourceOptions options = Options();  // resync every 2 s
  // The reflector looks at the time between watch lines: a bookmark soon after time moves.
  api_->SetBookmarkInterval(20ms);
  kube::ClusterState& state = *StartReplica(options).state;
  ASSERT_EQ(Used(state, "n1"), 2);
  // Deleted while the watch is up, but the watch never hears of it.
  ASSERT_TRUE(api_->DeleteSilently(Resource::kPods, "team", "a"));
  clock_.Advance(options.reflector.resync);
  EXPECT_TRUE(WaitFor([&] { return Used(state, "n1") == 1; }, 5s)) << "not healed by the resync";
  EXPECT_GE(state.counters().resync_corrections, 1u);

  // Deleted while the watch was down: the reflector resumes from its resourceVersion and never
  // sees the delete either.
  uint64_t corrections = state.counters().resync_corrections;
  const int64_t watches = PodWatches();
  api_->DropWatches();
  ASSERT_TRUE(api_->DeleteSilently(Resource::kPods, "other", "c"));
  ASSERT_TRUE(Eventually([&] { return PodWatches() > watches; })) << "the watch did not resume";
  clock_.Advance(options.reflector.resync);
  EXPECT_TRUE(WaitFor([&] { return Used(state, "n2") == 0; }, 5s));
  EXPECT_GT(state.counters().resync_corrections, corrections);
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(LiveSourceTest, GoneAfterCompactionMeansRelist) {
  kube::LiveSourceOptions options = Options();
  options.reflector.resync = 60s;  // only a 410 can cause a relist here
  api_->SetBookmarkInterval(std::chrono::hours(1));
  kube::ClusterState& state = *StartReplica(options).state;
  ASSERT_TRUE(api_->WaitForWatches(3, 5s));
  int64_t lists = PodLists();
  // A node change moves the resourceVersion past what the pod watch has seen; then the pod is
  // deleted silently and history is compacted: resuming the pod watch must fail with 410.
  ASSERT_TRUE(api_->AddNode(MigNodeJson("n4", 1)).ok());
  ASSERT_TRUE(api_->DeleteSilently(Resource::kPods, "team", "b"));
  api_->Compact();
  api_->DropWatches();
  EXPECT_TRUE(Eventually([&] { return PodLists() > lists; })) << "no relist after 410";
  EXPECT_TRUE(Eventually([&] { return Used(state, "n1") == 1; })) << Used(state, "n1");
  EXPECT_TRUE(Eventually([&] { return Used(state, "n4") == 0; }));
  EXPECT_GE(replica_->source->watch_restarts(), 1u);

  // The relisted state keeps following the watch.
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "e", "n4")).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n4") == 1; }));
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(LiveSourceTest, BookmarksAdvanceTheResourceVersionWithoutEvents) {
  kube::LiveSourceOptions options = Options();
  options.reflector.resync = 60s;
  api_->SetBookmarkInterval(50ms);
  kube::ClusterState& state = *StartReplica(options).state;
  ASSERT_TRUE(api_->WaitForWatches(3, 5s));
  int64_t lists = PodLists();
  // Changes the pod watch does not see.
  ASSERT_TRUE(api_->AddNode(MigNodeJson("n4", 1)).ok());
  ASSERT_TRUE(api_->AddNamespace("later").ok());
  const int64_t target = api_->resource_version();
  // Ends the pod watch cleanly every so often: each re-watch shows the version reached.
  EXPECT_TRUE(Eventually([&] {
    if (LastWatchVersion(*api_, "/api/v1/pods") >= target) return true;
    api_->DropWatches(/*graceful=*/true);
    std::this_thread::sleep_for(100ms);
    return false;
  })) << "pod watch still resumes from "
      << LastWatchVersion(*api_, "/api/v1/pods");
  // With the bookmark's version, compaction at the current version costs no relist.
  int64_t watches = PodWatches();
  api_->Compact();
  api_->DropWatches();
  ASSERT_TRUE(Eventually([&] { return PodWatches() > watches; }));
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "e", "n3")).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 1; }));
  EXPECT_EQ(PodLists(), lists) << "bookmarks should have spared the relist";
}

TEST_F(LiveSourceTest, RotatedTokenFileIsReadAgain) {
  testing_support::TempDir dir;
  std::string token_file = dir.File("token");
  auto write_token = [&](const std::string& token) {  // as kubelet does: a new file, renamed
    std::string tmp = token_file + ".tmp";
    std::ofstream(tmp) << token << "\n";
    ASSERT_EQ(std::rename(tmp.c_str(), token_file.c_str()), 0);
  };
  write_token("token-one");
  api_->AcceptTokens({"token-one"});
  kube::ApiConfig config = ConfigFor(*api_, "");
  config.token_file = token_file;
  kube::ClusterState& state = *StartReplica(Options(), config).state;

  // Rotation: both valid for a while, then only the new one.
  api_->AcceptTokens({"token-one", "token-two"});
  write_token("token-two");
  api_->AcceptTokens({"token-two"});
  api_->DropWatches();  // every watch reconnects and must authenticate again
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "e", "n3")).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 1; }));
  EXPECT_TRUE(Eventually([&] {
    for (const testing_support::RequestRecord& r : api_->Requests()) {
      if (r.token == "token-two" && r.status == 200) return true;
    }
    return false;
  }));

  // A rewrite in place that keeps size and timestamps (coarse file clocks do that): the
  // server's 401 makes the client read the file again.
  struct stat before = {};
  ASSERT_EQ(::stat(token_file.c_str(), &before), 0);
  {
    std::fstream f(token_file, std::ios::in | std::ios::out);
    f << "token-six\n";
  }
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, token_file.c_str(), times, 0), 0);
  api_->AcceptTokens({"token-six"});
  api_->DropWatches();
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "f", "n3")).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 2; })) << "stuck on the old token";
}

TEST_F(LiveSourceTest, ApiServerRestartMidWatch) {
  kube::ClusterState& state = *StartReplica().state;
  ASSERT_TRUE(api_->WaitForWatches(3, 5s));
  uint64_t restarts = replica_->source->watch_restarts();

  // Down for a while: watches fail, reconnects back off; objects change meanwhile.
  api_->Stop();
  EXPECT_TRUE(Eventually([&] { return replica_->source->watch_restarts() >= restarts + 3; }));
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "e", "n3")).ok());
  ASSERT_TRUE(api_->Restart(/*keep_state=*/true).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 1; }));
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "f", "n3")).ok());
  EXPECT_TRUE(Eventually([&] { return Used(state, "n3") == 2; }));

  // A restart that lost everything and came back with another cluster: converges on it.
  ASSERT_TRUE(api_->Restart(/*keep_state=*/false).ok());
  ASSERT_TRUE(api_->AddNamespace("team").ok());
  ASSERT_TRUE(api_->AddNode(MigNodeJson("m1", 2)).ok());
  ASSERT_TRUE(api_->AddNode(MigNodeJson("m2", 2)).ok());
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "g", "m1")).ok());
  EXPECT_TRUE(Eventually([&] {
    std::shared_ptr<const topology::ModelState> s = state.Current();
    return s && s->snapshot->FindNode("n1") == nullptr && s->snapshot->FindNode("n3") == nullptr &&
           Used(state, "m1") == 1 && Used(state, "m2") == 0;
  })) << "did not converge on the new content";
  EXPECT_TRUE(state.OccupancyConsistent());
}

}  // namespace
}  // namespace kube_test
