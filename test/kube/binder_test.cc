// kube::ApiBinder's own steps, each on its own (bind_test.cc drives them together through
// extender::Bind): the leader gate, the pod from the watch cache or one GET with its UID
// checked, the assumption's expiry on the binder's clock, the Binding object and how its POST's
// outcomes are reported, and the Event and audit record of every bind. The API server is the
// emulation over HTTPS; the ClusterState is fed by hand, so the test decides what is cached.
#include "kube/binder.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/objects.h"
#include "test/kube/fake_clock.h"
#include "test/kube/live_test_util.h"
#include "wire/k8s_codec.h"

namespace kube_test {
namespace {

using ::testing::HasSubstr;

constexpr char kPolicy[] = R"(
tiers:
  - {name: untrusted, modes: [exclusive, mig]}
tenants:
  - {name: acme, tier: untrusted, namespaces: [team]}
)";

topology::NodeFacts NodeFacts(const std::string& json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  EXPECT_TRUE(doc.ok());
  absl::StatusOr<topology::NodeFacts> n = wire::ParseNode(*doc);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : topology::NodeFacts();
}

topology::PodFacts PodFacts(const std::string& json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  EXPECT_TRUE(doc.ok());
  absl::StatusOr<topology::PodFacts> p = wire::ParsePod(*doc);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : topology::PodFacts();
}

wire::BindingArgs Args(const std::string& pod, const std::string& node = "n1",
                       const std::string& uid = "") {
  wire::BindingArgs a;
  a.pod_name = pod;
  a.pod_namespace = "team";
  a.pod_uid = uid.empty() ? UidOf("team", pod) : uid;
  a.node = node;
  return a;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(BindingJsonTest, TargetsTheNodeCarriesTheAnnotationsAndPinsTheUid) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(kube::BindingJson(
      Args("p", "gpu-7"), {{"gpu-tenancy.io/tenant", "acme"}, {"odd", "quote \" and \\"}}));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "apiVersion"), "v1");
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Binding");
  const common::JsonValue* meta = common::FindMember(*doc, "metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(common::StringOr(*meta, "name"), "p");
  EXPECT_EQ(common::StringOr(*meta, "namespace"), "team");
  EXPECT_EQ(common::StringOr(*meta, "uid"), "uid-team-p");
  const common::JsonValue* annotations = common::FindMember(*meta, "annotations");
  ASSERT_TRUE(annotations && annotations->IsObject());
  EXPECT_EQ(annotations->MemberCount(), 2u);
  EXPECT_EQ(common::StringOr(*annotations, "gpu-tenancy.io/tenant"), "acme");
  EXPECT_EQ(common::StringOr(*annotations, "odd"), "quote \" and \\");
  const common::JsonValue* target = common::FindMember(*doc, "target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(common::StringOr(*target, "apiVersion"), "v1");
  EXPECT_EQ(common::StringOr(*target, "kind"), "Node");
  EXPECT_EQ(common::StringOr(*target, "name"), "gpu-7");

  absl::StatusOr<rapidjson::Document> bare = common::ParseJson(kube::BindingJson(Args("p"), {}));
  ASSERT_TRUE(bare.ok());
  const common::JsonValue* none =
      common::FindMember(*common::FindMember(*bare, "metadata"), "annotations");
  ASSERT_TRUE(none && none->IsObject());
  EXPECT_EQ(none->MemberCount(), 0u);
}

class ApiBinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = StartCluster({"team"}, {"n1"}, 2);
    ASSERT_NE(api_, nullptr);
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(ConfigFor(*api_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPolicy);
    ASSERT_TRUE(policy.ok()) << policy.status();
    state_.SetPolicy(std::make_shared<const topology::Policy>(*std::move(policy)));
  }
  // The cache as a synced LiveSource would leave it: node n1 and these pending pods.
  void Sync(const std::vector<std::string>& pending) {
    state_.ReplaceNodes({NodeFacts(MigNodeJson("n1", 2))});
    std::vector<topology::PodFacts> pods;
    for (const std::string& p : pending) pods.push_back(PodFacts(MigPodJson("team", p)));
    state_.ReplacePods(std::move(pods));
    state_.ReplaceNamespaces({{"team", {}}});
  }
  int64_t Gets() const { return api_->CountRequests("GET", "/api/v1/namespaces/team/pods/"); }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::ApiClient> client_;
  kube::ClusterState state_{common::BuiltinCatalog()};
  FakeClock clock_;
};

TEST_F(ApiBinderTest, AClosedGateRefusesBeforeAnythingElse) {
  Sync({"p"});
  kube::ApiBinder binder(*client_, state_, 30s);
  bool open = false;
  binder.SetGate([&] { return open; });
  absl::StatusOr<topology::PodFacts> refused = binder.LookupPod(Args("p"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("not the extender leader"));
  open = true;
  absl::StatusOr<topology::PodFacts> found = binder.LookupPod(Args("p"));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->uid, "uid-team-p");
}

TEST_F(ApiBinderTest, APendingPodInTheCacheNeedsNoApiCall) {
  Sync({"p"});
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());
  kube::ApiBinder binder(*client_, state_, 30s);
  absl::StatusOr<topology::PodFacts> pod = binder.LookupPod(Args("p"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "p");
  EXPECT_EQ(Gets(), 0);
}

TEST_F(ApiBinderTest, APodTheCacheLacksIsReadOnceFromTheApiWithItsUidChecked) {
  Sync({});
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());
  kube::ApiBinder binder(*client_, state_, 30s);
  struct Row {
    const char* name;
    wire::BindingArgs args;
    int inject;
    std::string error;  // "" when found
  };
  const Row rows[] = {
      {"same UID", Args("p"), 0, ""},
      {"re-created under the name", Args("p", "n1", "uid-old"), 0,
       "pod team/p has UID uid-team-p, not uid-old"},
      {"absent", Args("ghost"), 0, "pod team/ghost: HTTP 404: pods \"ghost\" not found"},
      {"API server error", Args("p"), 500,
       "pod team/p: HTTP 500: Internal error occurred: injected failure"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    api_->ClearRequests();
    if (row.inject) api_->InjectFailure("GET", "/api/v1/namespaces/team/pods/", row.inject);
    absl::StatusOr<topology::PodFacts> pod = binder.LookupPod(row.args);
    EXPECT_EQ(Gets(), 1);
    if (row.error.empty()) {
      ASSERT_TRUE(pod.ok()) << pod.status();
      EXPECT_EQ(pod->uid, "uid-team-p");
      EXPECT_EQ(pod->namespace_name, "team");
      continue;
    }
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().message(), row.error);
  }
  api_->Stop();
  absl::StatusOr<topology::PodFacts> unreachable = binder.LookupPod(Args("p"));
  EXPECT_EQ(unreachable.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ApiBinderTest, AnAssumptionExpiresItsTtlAfterBindOnTheBindersClock) {
  Sync({"p"});
  kube::ApiBinder binder(*client_, state_, 250ms, nullptr, &clock_);
  const kube::Clock::TimePoint bound_at = clock_.Now();
  absl::StatusOr<topology::PlaceOutcome> placed =
      binder.Assume(PodFacts(MigPodJson("team", "p")), "n1");
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_TRUE(placed->placed()) << placed->reason;
  EXPECT_EQ(placed->placement.node, "n1");
  EXPECT_EQ(placed->placement.tenant, "acme");
  EXPECT_EQ(state_.ExpireAssumptions(bound_at + 249ms), 0);
  EXPECT_EQ(state_.assumption_count(), 1u);
  EXPECT_EQ(state_.ExpireAssumptions(bound_at + 250ms), 1);
  EXPECT_EQ(state_.assumption_count(), 0u);

  // Forget drops a fresh assumption at once.
  ASSERT_TRUE(binder.Assume(PodFacts(MigPodJson("team", "p")), "n1").ok());
  EXPECT_EQ(state_.assumption_count(), 1u);
  binder.Forget("uid-team-p");
  EXPECT_EQ(state_.assumption_count(), 0u);
}

// A Binding POST that got no answer (the connection dropped, or the reply came after the
// client's timeout) may still land: bind reports the failure and forgets, but the slice stays
// taken for a TTL from the failure. So does one refused because the pod is already bound to
// this very node (an earlier attempt of ours landed). Refused otherwise, it is freed at once.
TEST_F(ApiBinderTest, ABindingWithoutAnAnswerKeepsItsSliceForATtlAfterTheFailure) {
  Sync({"p"});
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());
  kube::ApiBinder binder(*client_, state_, 250ms, nullptr, &clock_);
  struct Row {
    const char* name;
    std::string assigned;  // the node the API server has the pod on already; "" none
    bool unreachable;
    bool kept;
  };
  const Row rows[] = {
      {"no answer", "", true, true},
      {"already bound here", "n1", false, true},
      {"already bound elsewhere", "n2", false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    if (!row.assigned.empty()) {
      ASSERT_TRUE(api_->MergePatch(Resource::kPods, "team", "p",
                                   absl::StrCat(R"({"spec":{"nodeName":")", row.assigned, R"("}})"))
                      .ok());
    }
    if (row.unreachable) api_->Stop();
    ASSERT_TRUE(binder.Assume(PodFacts(MigPodJson("team", "p")), "n1").ok());
    clock_.Advance(200ms);  // the POST took a while
    absl::Status posted = binder.PostBinding(Args("p"), {});
    ASSERT_FALSE(posted.ok());
    binder.Forget(UidOf("team", "p"));  // as extender::Bind does on any failure
    EXPECT_EQ(state_.assumption_count(), row.kept ? 1u : 0u);
    if (row.kept) {
      // The original expiry (bound_at + 250ms) has passed; the new one is 250ms after the POST.
      EXPECT_EQ(state_.ExpireAssumptions(clock_.Now() + 249ms), 0);
      EXPECT_EQ(state_.ExpireAssumptions(clock_.Now() + 250ms), 1);
    }
    if (row.unreachable) {
      ASSERT_TRUE(api_->Restart().ok());
    }
    ASSERT_TRUE(
        api_->MergePatch(Resource::kPods, "team", "p", R"({"spec":{"nodeName":null}})").ok());
  }
}

TEST_F(ApiBinderTest, TheBindingPostAndWhatEachRefusalSays) {
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "p")).ok());
  ASSERT_TRUE(api_->AddPod(MigPodJson("team", "placed", "n1")).ok());
  kube::ApiBinder binder(*client_, state_, 30s);
  struct Row {
    const char* name;
    wire::BindingArgs args;
    int inject;
    std::string error;  // "" when bound
  };
  const Row rows[] = {
      {"refused by the server", Args("p"), 500,
       "Binding refused: HTTP 500: Internal error occurred: injected failure"},
      {"another pod under the name", Args("p", "n1", "uid-old"), 0,
       "Binding refused: HTTP 409: Operation cannot be fulfilled on pods \"p\": Precondition "
       "failed: UID in precondition: uid-old, UID in object meta: uid-team-p"},
      {"already bound", Args("placed"), 0,
       "Binding refused: HTTP 409: Operation cannot be fulfilled on pods/binding \"placed\": pod "
       "placed is already assigned to node \"n1\""},
      {"bound", Args("p"), 0, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    if (row.inject) api_->InjectFailure("POST", "/api/v1/namespaces/team/pods/", row.inject);
    absl::Status s = binder.PostBinding(row.args, {{"gpu-tenancy.io/node", "n1"}});
    if (row.error.empty()) {
      EXPECT_TRUE(s.ok()) << s;
      continue;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), row.error);
  }
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/pods/p/binding"), 3);
  std::string pod = api_->GetObject(Resource::kPods, "team", "p");
  EXPECT_THAT(pod, HasSubstr(R"("nodeName":"n1")"));
  EXPECT_THAT(pod, HasSubstr(R"("gpu-tenancy.io/node":"n1")"));

  api_->Stop();
  EXPECT_EQ(binder.PostBinding(Args("p"), {}).code(), absl::StatusCode::kUnavailable);
}

TEST_F(ApiBinderTest, EveryOutcomeIsAnEventAndAnAuditRecord) {
  Sync({});
  testing_support::TempDir dir;
  absl::StatusOr<std::unique_ptr<common::AuditLog>> audit =
      common::AuditLog::Open(dir.File("audit.log"));
  ASSERT_TRUE(audit.ok()) << audit.status();
  kube::EventRecorder events(*client_);
  kube::ApiBinder binder(*client_, state_, 30s, &events);
  binder.SetAuditLog(audit->get());

  struct Row {
    const char* name;
    std::optional<topology::Placement> placement;  // nullopt: the bind failed
    std::string type, reason, message;
  };
  const Row rows[] = {
      {"placed with everything known",
       topology::Placement{"n1", "acme", "untrusted", "mig-a", 1, "3g.40gb"}, "Normal",
       "GpuTenancyBound",
       "Bound to n1 for tenant acme (tier untrusted) in pool mig-a, MIG 3g.40gb, "
       "GPU 1"},
      {"placed, only node and tenant", topology::Placement{"n1", "acme", "", "", std::nullopt, ""},
       "Normal", "GpuTenancyBound", "Bound to n1 for tenant acme"},
      {"GPU index zero is still named", topology::Placement{"n1", "acme", "", "", 0, ""}, "Normal",
       "GpuTenancyBound", "Bound to n1 for tenant acme, GPU 0"},
      {"failed", std::nullopt, "Warning", "GpuTenancyBindFailed", "node n1 is full"},
  };
  for (size_t i = 0; i < std::size(rows); ++i) {
    const Row& row = rows[i];
    SCOPED_TRACE(row.name);
    std::string pod = absl::StrCat("p", i);
    binder.Report(Args(pod), row.placement ? &*row.placement : nullptr, row.message);
    ASSERT_TRUE(WaitFor([&] { return api_->Events().size() == i + 1; }));
    absl::StatusOr<rapidjson::Document> event = common::ParseJson(api_->Events()[i]);
    ASSERT_TRUE(event.ok());
    EXPECT_EQ(common::StringOr(*event, "type"), row.type);
    EXPECT_EQ(common::StringOr(*event, "reason"), row.reason);
    EXPECT_EQ(common::StringOr(*event, "message"), row.message);
    const common::JsonValue* involved = common::FindMember(*event, "involvedObject");
    ASSERT_NE(involved, nullptr);
    EXPECT_EQ(common::StringOr(*involved, "name"), pod);
    EXPECT_EQ(common::StringOr(*involved, "uid"), UidOf("team", pod));
  }

  std::vector<std::string> lines;
  std::istringstream text(ReadFile(dir.File("audit.log")));
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), std::size(rows));
  absl::StatusOr<rapidjson::Document> placed = common::ParseJson(lines[0]);
  ASSERT_TRUE(placed.ok()) << lines[0];
  for (const auto& [key, value] :
       std::vector<std::pair<const char*, const char*>>{{"action", "bind"},
                                                        {"decision", "bound"},
                                                        {"namespace", "team"},
                                                        {"pod", "p0"},
                                                        {"uid", "uid-team-p0"},
                                                        {"node", "n1"},
                                                        {"tenant", "acme"},
                                                        {"tier", "untrusted"},
                                                        {"pool", "mig-a"},
                                                        {"migProfile", "3g.40gb"}}) {
    EXPECT_EQ(common::StringOr(*placed, key), value) << key;
  }
  const common::JsonValue* gpu = common::FindMember(*placed, "gpuIndex");
  ASSERT_TRUE(gpu && gpu->IsInt());
  EXPECT_EQ(gpu->GetInt(), 1);
  // A failed bind has no placement: the tenant and tier come from the pod's namespace.
  absl::StatusOr<rapidjson::Document> failed = common::ParseJson(lines[3]);
  ASSERT_TRUE(failed.ok()) << lines[3];
  EXPECT_EQ(common::StringOr(*failed, "decision"), "failed");
  EXPECT_EQ(common::StringOr(*failed, "reason"), "node n1 is full");
  EXPECT_EQ(common::StringOr(*failed, "tenant"), "acme");
  EXPECT_EQ(common::StringOr(*failed, "tier"), "untrusted");
  EXPECT_EQ(common::FindMember(*failed, "gpuIndex"), nullptr);
}

TEST_F(ApiBinderTest, WithoutARecorderOrAnAuditLogReportPostsNothing) {
  Sync({});
  kube::ApiBinder binder(*client_, state_, 30s);
  binder.Report(Args("p"), nullptr, "failed");
  topology::Placement placement{"n1", "acme", "untrusted", "", std::nullopt, ""};
  binder.Report(Args("q"), &placement, "");
  // Report() posts synchronously to a recorder or not at all: nothing can arrive later.
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/events"), 0);
}

}  // namespace
}  // namespace kube_test
