// The bind verb end to end against the kube-apiserver emulation: extender::Bind over
// kube::ApiBinder annotates and binds with one Binding POST, keeps an assumption until the watch
// confirms it, forgets it when the POST fails, lets it expire when nothing confirms it (but
// never while its Binding is still under way), drops it at once when a relist after the Binding
// shows the pod gone, and never over-allocates when 50 binds race for the last 3 slices.
#include "extender/bind.h"

#include <atomic>
#include <barrier>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "kube/binder.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

std::map<std::string, std::string> Annotations(const std::string& pod_json) {
  std::map<std::string, std::string> out;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(pod_json);
  if (!doc.ok()) return out;
  const common::JsonValue* meta = common::FindMember(*doc, "metadata");
  const common::JsonValue* a = meta ? common::FindNonNull(*meta, "annotations") : nullptr;
  if (!a || !a->IsObject()) return out;
  for (auto it = a->MemberBegin(); it != a->MemberEnd(); ++it) {
    out[it->name.GetString()] = it->value.IsString() ? it->value.GetString() : "";
  }
  return out;
}

std::string NodeNameOf(const std::string& pod_json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(pod_json);
  if (!doc.ok()) return "";
  const common::JsonValue* spec = common::FindMember(*doc, "spec");
  return spec ? std::string(common::StringOr(*spec, "nodeName")) : "";
}

// Events posted through the API: reason -> count, for one pod ("" = all).
std::map<std::string, int> EventReasons(const FakeApiServer& api, const std::string& pod = "") {
  std::map<std::string, int> out;
  for (const std::string& json : api.Events()) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
    if (!doc.ok()) continue;
    const common::JsonValue* involved = common::FindMember(*doc, "involvedObject");
    if (!pod.empty() && (!involved || common::StringOr(*involved, "name") != pod)) continue;
    ++out[std::string(common::StringOr(*doc, "reason"))];
  }
  return out;
}

class BindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = StartCluster({"team"}, {"n1", "n2"}, 3);
    ASSERT_NE(api_, nullptr);
  }
  void TearDown() override {
    replica_.reset();
    api_.reset();
  }
  Replica& StartReplica(std::chrono::milliseconds assume_ttl = 30s) {
    replica_ = std::make_unique<Replica>(ConfigFor(*api_), FastOptions(), assume_ttl);
    EXPECT_TRUE(replica_->Start());
    return *replica_;
  }
  // Adds pending pods and waits until the watch has them, so bind reads them from the cache.
  void AddPending(const std::vector<std::string>& names) {
    for (const std::string& n : names) ASSERT_TRUE(api_->AddPod(MigPodJson("team", n)).ok());
    ASSERT_TRUE(WaitFor([&] {
      for (const std::string& n : names) {
        if (!replica_->state->PendingPod(UidOf("team", n))) return false;
      }
      return true;
    }));
  }
  extender::VerbReply Bind(const std::string& pod, const std::string& node) {
    return extender::Bind(BindRequest("team", pod, node), *replica_->binder);
  }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<Replica> replica_;
};

TEST_F(BindTest, OneBindingPostAnnotatesAndTheWatchConfirms) {
  kube::ClusterState& state = *StartReplica().state;
  AddPending({"p"});
  extender::VerbReply reply = Bind("p", "n1");
  ASSERT_EQ(reply.http_status, 200);
  ASSERT_EQ(ErrorOf(reply.body), "") << reply.body;
  // Counted at once (assumed), before or after the watch confirms: once either way.
  EXPECT_EQ(Used(state, "n1"), 1);

  // The API server has the pod on n1 with our decision, from one POST and nothing else.
  std::string pod = api_->GetObject(Resource::kPods, "team", "p");
  EXPECT_EQ(NodeNameOf(pod), "n1");
  std::map<std::string, std::string> annotations = Annotations(pod);
  EXPECT_EQ(annotations["gpu-tenancy.io/tenant"], "unknown");  // AllowAll: no named tenants
  EXPECT_EQ(annotations["gpu-tenancy.io/tier"], "default");
  EXPECT_FALSE(annotations["gpu-tenancy.io/pool"].empty());
  EXPECT_EQ(annotations["gpu-tenancy.io/mig-profile"], "3g.40gb");
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/pods/p/binding"), 1);
  EXPECT_EQ(api_->CountRequests("PATCH", "/api/v1/namespaces/team/pods/p"), 0);

  EXPECT_TRUE(WaitFor([&] { return state.assumption_count() == 0; }));
  EXPECT_EQ(state.counters().assumptions_confirmed, 1u);
  EXPECT_EQ(Used(state, "n1"), 1);
  EXPECT_TRUE(state.OccupancyConsistent());
  EXPECT_TRUE(WaitFor([&] { return EventReasons(*api_, "p")["GpuTenancyBound"] == 1; }));

  // Binding it again is refused by us (already bound), without a second POST.
  extender::VerbReply again = Bind("p", "n2");
  EXPECT_NE(ErrorOf(again.body), "");
  EXPECT_EQ(Used(state, "n1"), 1);
  EXPECT_EQ(Used(state, "n2"), 0);
}

TEST_F(BindTest, ARefusedBindingIsForgottenAndReportedAsError) {
  kube::ClusterState& state = *StartReplica().state;
  AddPending({"p"});
  for (int code : {500, 409}) {
    SCOPED_TRACE(code);
    api_->InjectFailure("POST", "/api/v1/namespaces/team/pods/p/binding", code);
    extender::VerbReply reply = Bind("p", "n1");
    EXPECT_EQ(reply.http_status, 200);
    std::string error = ErrorOf(reply.body);
    EXPECT_TRUE(absl::StrContains(error, absl::StrCat("HTTP ", code))) << error;
    EXPECT_EQ(state.assumption_count(), 0u);
    EXPECT_EQ(Used(state, "n1"), 0);
    EXPECT_EQ(NodeNameOf(api_->GetObject(Resource::kPods, "team", "p")), "");
  }
  EXPECT_TRUE(WaitFor([&] { return EventReasons(*api_, "p")["GpuTenancyBindFailed"] == 2; }));
  // kube-scheduler retries; this time it goes through.
  EXPECT_EQ(ErrorOf(Bind("p", "n1").body), "");
  EXPECT_TRUE(WaitFor([&] { return state.assumption_count() == 0 && Used(state, "n1") == 1; }));
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(BindTest, BeforeTheFirstSyncAndForUnknownPodsBindFailsCleanly) {
  replica_ = std::make_unique<Replica>(ConfigFor(*api_));  // not started: nothing listed
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());
  std::string error = ErrorOf(Bind("p", "n1").body);
  EXPECT_TRUE(absl::StrContains(error, "cache not synced")) << error;
  EXPECT_FALSE(absl::StrContains(error, "no longer fits")) << error;  // each failure as itself
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/pods/p/binding"), 0);

  ASSERT_TRUE(replica_->Start());
  ASSERT_TRUE(WaitFor([&] { return replica_->state->PendingPod(UidOf("team", "p")).has_value(); }));
  error = ErrorOf(Bind("p", "n9").body);
  EXPECT_EQ(error, "gpu-tenancy bind: node n9 is not known to gpu-tenancy");
  error = ErrorOf(Bind("ghost", "n1").body);
  EXPECT_TRUE(absl::StrContains(error, "not found")) << error;
  // A pod re-created under the same name has another UID: never bound by mistake.
  ASSERT_TRUE(api_->DeletePod("team", "p").ok());
  ASSERT_TRUE(
      api_->AddPod(absl::StrReplaceAll(MigPodJson("team", "p"), {{"uid-team-p", "uid-team-p-2"}}))
          .ok());
  ASSERT_TRUE(WaitFor([&] { return !replica_->state->PendingPod(UidOf("team", "p")); }));
  error = ErrorOf(Bind("p", "n1").body);
  EXPECT_NE(error, "");
  EXPECT_EQ(NodeNameOf(api_->GetObject(Resource::kPods, "team", "p")), "");
  EXPECT_EQ(Used(*replica_->state, "n1"), 0);
}

TEST_F(BindTest, AnUnconfirmedAssumptionExpires) {
  kube::ClusterState& state = *StartReplica(/*assume_ttl=*/300ms).state;
  AddPending({"p"});
  // The API server answers 201 but binds nothing: the watch never confirms.
  api_->InjectFailure("POST", "/api/v1/namespaces/team/pods/p/binding", 201);
  ASSERT_EQ(ErrorOf(Bind("p", "n1").body), "");
  EXPECT_EQ(NodeNameOf(api_->GetObject(Resource::kPods, "team", "p")), "");
  EXPECT_TRUE(WaitFor([&] { return Used(state, "n1") == 0; })) << "assumption never expired";
  EXPECT_EQ(state.counters().assumptions_expired, 1u);
  EXPECT_EQ(state.assumption_count(), 0u);
  EXPECT_TRUE(state.OccupancyConsistent());
}

// The pod watch is down while a pod is created, bound and deleted (a chaos run's 410 on lists,
// or an API server restart, during a bind storm): the relist that follows does not name the
// pod, and nothing else ever did. Its Binding landed before that list began, so the pod is gone,
// not unconfirmed: its GPU is free at once, not after --assume-ttl (30 s) of refusing pods a
// free slice.
TEST_F(BindTest, ARelistAfterTheBindingThatLacksThePodDropsTheAssumption) {
  kube::ClusterState& state = *StartReplica(/*assume_ttl=*/30s).state;
  using Kind = FakeApiServer::RequestKind;
  api_->FailRequests({"GET", "/api/v1/pods", Kind::kWatch}, 503,
                     std::chrono::steady_clock::now() + 60s);
  api_->DropWatches();
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());  // bind reads it from the API
  ASSERT_EQ(ErrorOf(Bind("p", "n1").body), "");
  ASSERT_EQ(NodeNameOf(api_->GetObject(Resource::kPods, "team", "p")), "n1");
  ASSERT_TRUE(api_->DeletePod("team", "p").ok());  // no watch hears of it
  EXPECT_EQ(Used(state, "n1"), 1);
  // History is compacted: the watch resumes into 410 and the pods are listed again.
  api_->Compact();
  api_->ClearFaults();
  EXPECT_TRUE(WaitFor([&] { return Used(state, "n1") == 0; }, 10s))
      << "the assumption outlived a relist that began after its Binding";
  EXPECT_EQ(state.assumption_count(), 0u);
  EXPECT_EQ(state.counters().assumptions_expired, 0u);
  EXPECT_TRUE(state.OccupancyConsistent());
}

// A Binding the API server takes longer to answer than --assume-ttl (a stalled etcd: the chaos
// run held Bindings 31 s, past the client's 30 s timeout): its slice stays taken while the POST
// is under way, so no other pod is placed on it meanwhile only to share it when the Binding
// lands (the chaos run saw 17 1g.10gb pods bound on a node with 16).
TEST_F(BindTest, AnAssumptionDoesNotExpireWhileItsBindingIsUnderWay) {
  kube::ClusterState& state = *StartReplica(/*assume_ttl=*/300ms).state;
  AddPending({"slow", "q1", "q2", "late"});
  using Kind = FakeApiServer::RequestKind;
  api_->StallRequests({"POST", "/api/v1/namespaces/team/pods/slow/binding", Kind::kWrite}, 1500ms,
                      std::chrono::steady_clock::now() + 60s, 1);
  std::string slow_error = "not answered";
  std::thread slow([&] { slow_error = ErrorOf(Bind("slow", "n1").body); });
  ASSERT_TRUE(WaitFor([&] { return Used(state, "n1") == 1; })) << "never assumed";
  ASSERT_EQ(ErrorOf(Bind("q1", "n1").body), "");
  ASSERT_EQ(ErrorOf(Bind("q2", "n1").body), "");  // n1's 3 slices are taken
  // Past the TTL, with the slow Binding still held.
  std::this_thread::sleep_for(800ms);
  const std::string late = ErrorOf(Bind("late", "n1").body);
  slow.join();
  EXPECT_EQ(slow_error, "");
  EXPECT_TRUE(absl::StrContains(late, "no longer fits")) << late;
  EXPECT_EQ(BoundInEmulator(*api_, "n1"), 3) << "n1 has 3 slices";
  EXPECT_TRUE(state.OccupancyConsistent());
}

TEST_F(BindTest, FiftyBindsRaceForTheLastThreeSlices) {
  kube::ClusterState& state = *StartReplica().state;
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) names.push_back(absl::StrCat("race-", i));
  AddPending(names);
  api_->SetLatency(50ms);

  std::vector<std::string> errors(names.size());
  std::barrier start(static_cast<std::ptrdiff_t>(names.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      extender::VerbReply r = Bind(names[i], "n1");
      errors[i] = r.http_status == 200 ? ErrorOf(r.body) : absl::StrCat("HTTP ", r.http_status);
    });
  }
  for (std::thread& t : threads) t.join();

  int won = 0;
  for (const std::string& e : errors) won += e.empty();
  EXPECT_EQ(won, 3);
  for (const std::string& e : errors) {
    if (!e.empty()) {
      EXPECT_TRUE(absl::StrContains(e, "no longer fits")) << e;
    }
  }
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/pods/"), 3)
      << "the losers must fail before calling the API server";
  EXPECT_EQ(BoundInEmulator(*api_, "n1"), 3);
  EXPECT_TRUE(WaitFor([&] { return state.assumption_count() == 0; }));
  EXPECT_EQ(Used(state, "n1"), 3);
  EXPECT_EQ(Used(state, "n2"), 0);
  EXPECT_EQ(state.counters().assumptions_confirmed, 3u);
  EXPECT_TRUE(state.OccupancyConsistent());
  EXPECT_TRUE(WaitFor([&] {
    std::map<std::string, int> reasons = EventReasons(*api_);
    return reasons["GpuTenancyBound"] == 3 && reasons["GpuTenancyBindFailed"] == 47;
  }));
}

TEST_F(BindTest, BindsToDifferentNodesOverlap) {
  kube::ClusterState& state = *StartReplica().state;
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(api_->AddNode(MigNodeJson(absl::StrCat("d", i), 1)).ok());
    names.push_back(absl::StrCat("spread-", i));
  }
  ASSERT_TRUE(WaitFor([&] { return Used(state, "d9") == 0; }));
  AddPending(names);
  api_->ClearRequests();
  // Long enough that binds which do not wait for each other are all in flight together.
  api_->SetLatency(400ms);
  std::vector<std::string> errors(names.size());
  std::barrier start(static_cast<std::ptrdiff_t>(names.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      errors[i] = ErrorOf(Bind(names[i], absl::StrCat("d", i)).body);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  // A lock held across the API call would make this 1.
  EXPECT_GE(api_->MaxConcurrentBindings(), 5);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(WaitFor([&] { return Used(state, absl::StrCat("d", i)) == 1; }));
  }
  EXPECT_TRUE(state.OccupancyConsistent());
}

}  // namespace
}  // namespace kube_test
