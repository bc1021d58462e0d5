// DraSource against the kube-apiserver emulation over HTTPS: discovery picks the newest version
// offered (v1, else v1beta2, else v1beta1), the captured ResourceSlice, ResourceClaim and
// DeviceClasses reach the published state, claim allocations and releases are audited (not
// those of the first list), a 410 on the watches relists and reports what the watch missed,
// and a server without the group, or whose discovery fails for a while, holds nothing up for
// longer than it must. The reflectors run on a FakeClock, as in live_source_test.cc.
#include "kube/dra_source.h"

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/audit_log.h"
#include "gtest/gtest.h"
#include "test/kube/dra_test_objects.h"
#include "test/kube/fake_clock.h"
#include "test/kube/live_test_util.h"

namespace dra_source_test {
namespace {

using namespace std::chrono_literals;
using dra_test_objects::kCapturedClaim;
using dra_test_objects::kCapturedUuid;
using dra_test_objects::kTrainingClaim;
using dra_test_objects::kTrainingDevice;
using dra_test_objects::kTrainingUuid;
using dra_test_objects::TrainingClaimJson;
using kube_test::ConfigFor;
using kube_test::FakeApiServer;
using kube_test::FakeClock;
using kube_test::Replica;
using kube_test::WaitFor;
using testing_support::Resource;

// The published DRA state; null before the first publication.
const topology::DraState* Dra(const std::shared_ptr<const topology::ModelState>& s) {
  return s ? &s->snapshot->dra() : nullptr;
}

const topology::DraClaim* FindClaim(const topology::DraState& dra, const std::string& name) {
  const topology::DraClaim* found = nullptr;
  dra.claims.ForEach([&](const topology::DraClaim& c) {
    if (c.name == name) found = &c;
  });
  return found;
}

// The UUID of the device `claim` holds in the published state; "" when it holds none.
std::string HeldUuid(const kube::ClusterState& state, const std::string& claim) {
  std::shared_ptr<const topology::ModelState> s = state.Current();
  if (!s) return "";
  const topology::DraClaim* c = FindClaim(s->snapshot->dra(), claim);
  if (!c || !c->allocated || c->results.empty()) return "";
  const topology::DraDevice* d = s->snapshot->dra().Find(c->results[0]);
  return d ? d->uuid : "";
}

std::vector<rapidjson::Document> AuditLines(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<rapidjson::Document> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    out.push_back(testing_support::ParseOrDie(std::string(line)));
  }
  return out;
}

int64_t DiscoveryRequests(const FakeApiServer& api) {
  int64_t n = 0;
  for (const testing_support::RequestRecord& r : api.Requests()) {
    n += r.path == "/apis/resource.k8s.io";
  }
  return n;
}

class DraSourceTest : public ::testing::Test {
 protected:
  void StartApi(std::vector<std::string> versions, const std::string& shape = "v1") {
    testing_support::FakeApiServerOptions options;
    options.resource_api_versions = std::move(versions);
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace("team-a").ok());
    ASSERT_TRUE(api_->AddNode(kube_test::MigNodeJson("node-a", 0)).ok());
    if (shape.empty()) return;
    for (const char* kind : {"resourceslices", "resourceclaims", "deviceclasses"}) {
      absl::Status loaded =
          api_->LoadTestData(absl::StrCat("dra/list-", kind, ".", shape, ".json"));
      ASSERT_TRUE(loaded.ok()) << loaded;
    }
  }
  Replica& MakeReplica() {
    kube::LiveSourceOptions options = kube_test::FastOptions(&clock_);
    replica_ = std::make_unique<Replica>(ConfigFor(*api_), options);
    absl::StatusOr<std::unique_ptr<common::AuditLog>> audit = common::AuditLog::Open(audit_path_);
    EXPECT_TRUE(audit.ok()) << audit.status();
    if (audit.ok()) audit_ = *std::move(audit);
    replica_->source->SetClaimAudit(audit_.get());
    return *replica_;
  }
  // WaitFor, skipping over backoffs on the fake clock (live_source_test.cc's Eventually).
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
  void TearDown() override {
    replica_.reset();
    api_.reset();
  }

  FakeClock clock_;
  testing_support::TempDir dir_;
  std::string audit_path_ = dir_.File("audit.jsonl");
  std::unique_ptr<common::AuditLog> audit_;  // outlives the replica
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<Replica> replica_;
};

TEST_F(DraSourceTest, ReadsTheCapturedObjectsAndAuditsAllocationsAndReleases) {
  StartApi({"v1beta1", "v1"});  // discovery order must not matter: v1 is the newest
  Replica& r = MakeReplica();
  ASSERT_TRUE(Eventually([&] { return r.Start(); }));
  kube::ClusterState& state = *r.state;
  EXPECT_EQ(r.source->dra()->version(), "v1");
  EXPECT_TRUE(r.source->synced());
  const topology::DraState* dra = Dra(state.Current());
  ASSERT_NE(dra, nullptr);
  EXPECT_EQ(dra->devices().size(), 3u);
  EXPECT_EQ(dra->classes().size(), 2u);
  EXPECT_EQ(HeldUuid(state, kCapturedClaim), kCapturedUuid);
  EXPECT_GE(api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceslices", "limit=2"), 1);
  EXPECT_GE(api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceclaimtemplates"), 1);
  EXPECT_EQ(api_->CountRequests("GET", "/apis/resource.k8s.io/v1beta1"), 0);
  EXPECT_TRUE(AuditLines(audit_path_).empty()) << "the first list is the baseline";

  // Created pending, then allocated by the scheduler: one "allocated" record.
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, TrainingClaimJson(false)).ok());
  ASSERT_TRUE(Eventually([&] { return FindClaim(*Dra(state.Current()), kTrainingClaim); }));
  EXPECT_TRUE(AuditLines(audit_path_).empty());
  ASSERT_TRUE(api_->Upsert(Resource::kResourceClaims, TrainingClaimJson(true)).ok());
  ASSERT_TRUE(Eventually([&] { return HeldUuid(state, kTrainingClaim) == kTrainingUuid; }));
  ASSERT_TRUE(Eventually([&] { return AuditLines(audit_path_).size() == 1; }));
  {
    rapidjson::Document line = std::move(AuditLines(audit_path_)[0]);
    EXPECT_EQ(common::StringOr(line, "action"), "claim");
    EXPECT_EQ(common::StringOr(line, "decision"), "allocated");
    EXPECT_EQ(common::StringOr(line, "kind"), "ResourceClaim");
    EXPECT_EQ(common::StringOr(line, "namespace"), "team-a");
    EXPECT_EQ(common::StringOr(line, "claim"), kTrainingClaim);
    EXPECT_EQ(common::StringOr(line, "node"), "node-a");
    // AllowAll has no tenants: the namespace resolves to the unknown tenant, in tier default.
    EXPECT_EQ(common::StringOr(line, "tenant"), "unknown");
    EXPECT_EQ(common::StringOr(line, "tier"), "default");
    ASSERT_EQ(line["devices"].Size(), 1u);
    EXPECT_EQ(common::StringOr(line["devices"][0], "device"),
              absl::StrCat("gpu.nvidia.com/node-a/", kTrainingDevice));
    EXPECT_EQ(common::StringOr(line["devices"][0], "uuid"), kTrainingUuid);
    EXPECT_EQ(common::StringOr(line["devices"][0], "migProfile"), "3g.40gb");
    ASSERT_EQ(line["reservedFor"].Size(), 1u);
    EXPECT_EQ(std::string(line["reservedFor"][0].GetString()), "training");
  }

  // Deleted while allocated: "released", with the devices it held.
  ASSERT_TRUE(api_->Delete(Resource::kResourceClaims, "team-a", kTrainingClaim).ok());
  ASSERT_TRUE(Eventually([&] { return !FindClaim(*Dra(state.Current()), kTrainingClaim); }));
  ASSERT_TRUE(Eventually([&] { return AuditLines(audit_path_).size() == 2; }));
  rapidjson::Document released = std::move(AuditLines(audit_path_)[1]);
  EXPECT_EQ(common::StringOr(released, "decision"), "released");
  EXPECT_EQ(common::StringOr(released, "reason"), "claim deleted");
  EXPECT_EQ(common::StringOr(released["devices"][0], "uuid"), kTrainingUuid);

  // A slice deleted takes its devices out of the state; the claim still names its device.
  ASSERT_TRUE(api_->Delete(Resource::kResourceSlices, "", "node-a-gpu.nvidia.com-k2x9q").ok());
  EXPECT_TRUE(Eventually([&] { return Dra(state.Current())->devices().empty(); }));
  EXPECT_EQ(HeldUuid(state, kCapturedClaim), "");
  EXPECT_TRUE(FindClaim(*Dra(state.Current()), kCapturedClaim)->allocated);
}

TEST_F(DraSourceTest, GoneOnTheWatchesRelistsAndReportsWhatTheWatchMissed) {
  StartApi({"v1"});
  Replica& r = MakeReplica();
  ASSERT_TRUE(Eventually([&] { return r.Start(); }));
  ASSERT_TRUE(api_->WaitForWatches(7, 5s));  // nodes, pods, namespaces and the four DRA kinds
  const int64_t lists =
      api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceclaims", "limit=");
  // The watches are cut; while the reflectors back off, the claim is allocated and history
  // compacted: resuming gets 410, and only the relist sees the allocation.
  // The first rewatches are refused, so none can resume before the compaction.
  api_->InjectFailure("GET", "/apis/resource.k8s.io/v1/resourceclaims", 503, 2);
  api_->DropWatches();
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, TrainingClaimJson(true)).ok());
  api_->Compact();
  EXPECT_TRUE(Eventually([&] {
    return api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceclaims", "limit=") > lists;
  })) << "no relist after 410";
  EXPECT_TRUE(Eventually([&] { return HeldUuid(*r.state, kTrainingClaim) == kTrainingUuid; }));
  EXPECT_EQ(HeldUuid(*r.state, kCapturedClaim), kCapturedUuid);
  ASSERT_TRUE(Eventually([&] { return AuditLines(audit_path_).size() == 1; }));
  EXPECT_EQ(common::StringOr(AuditLines(audit_path_)[0], "decision"), "allocated");
  EXPECT_GE(r.source->watch_restarts(), 1u);

  // And the watch goes on from the relist.
  ASSERT_TRUE(api_->Delete(Resource::kResourceClaims, "team-a", kCapturedClaim).ok());
  EXPECT_TRUE(Eventually([&] { return !FindClaim(*Dra(r.state->Current()), kCapturedClaim); }));
  EXPECT_TRUE(Eventually([&] { return AuditLines(audit_path_).size() == 2; }));
}

TEST_F(DraSourceTest, AV1beta1OnlyServerIsReadInItsShape) {
  StartApi({"v1beta1"}, "v1beta1");
  Replica& r = MakeReplica();
  ASSERT_TRUE(Eventually([&] { return r.Start(); }));
  EXPECT_EQ(r.source->dra()->version(), "v1beta1");
  EXPECT_EQ(HeldUuid(*r.state, kCapturedClaim), kCapturedUuid) << "devices in the basic wrapper";
  const topology::DraClaim* captured = FindClaim(*Dra(r.state->Current()), kCapturedClaim);
  ASSERT_NE(captured, nullptr);
  ASSERT_EQ(captured->requests.size(), 1u);
  EXPECT_EQ(captured->requests[0].device_class, "mig.nvidia.com") << "the flat v1beta1 request";
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, TrainingClaimJson(true, "v1beta1")).ok());
  EXPECT_TRUE(Eventually([&] { return HeldUuid(*r.state, kTrainingClaim) == kTrainingUuid; }));
  EXPECT_EQ(api_->CountRequests("GET", "/apis/resource.k8s.io/v1/"), 0);
}

TEST_F(DraSourceTest, WithoutTheGroupNothingWaitsAndDiscoveryIsAskedAgainLater) {
  StartApi({}, "");
  Replica& r = MakeReplica();
  ASSERT_TRUE(Eventually([&] { return r.Start(); })) << "a cluster without DRA must sync";
  EXPECT_TRUE(r.source->synced());
  EXPECT_EQ(r.source->dra()->version(), "");
  EXPECT_TRUE(Dra(r.state->Current())->empty());
  EXPECT_EQ(api_->CountRequests("GET", "/apis/resource.k8s.io/"), 0) << "no list of a 404 group";
  const int64_t asked = DiscoveryRequests(*api_);
  EXPECT_GE(asked, 1);
  clock_.Advance(kube_test::FastOptions().reflector.resync);
  EXPECT_TRUE(WaitFor([&] { return DiscoveryRequests(*api_) > asked; }));
}

TEST_F(DraSourceTest, FailingDiscoveryIsRetriedAndNothingIsPublishedMeanwhile) {
  StartApi({"v1"});
  api_->InjectFailure("GET", "/apis/resource.k8s.io", 503, 3);
  Replica& r = MakeReplica();
  r.source->Start();
  // Time stands still: the first retry waits on the fake clock, so nothing can be published.
  ASSERT_TRUE(WaitFor([&] { return DiscoveryRequests(*api_) >= 1; }));
  ASSERT_TRUE(WaitFor([&] {
    return api_->CountRequests("GET", "/api/v1/pods", "watch=1") >= 1 &&
           api_->CountRequests("GET", "/api/v1/namespaces", "watch=1") >= 1;
  }));
  EXPECT_EQ(r.state->Current(), nullptr) << "published before DRA was known";
  EXPECT_FALSE(r.source->synced());
  EXPECT_TRUE(Eventually([&] { return r.state->Current() != nullptr; }));
  EXPECT_GE(DiscoveryRequests(*api_), 4);
  EXPECT_EQ(HeldUuid(*r.state, kCapturedClaim), kCapturedUuid);
}

TEST(DraVersionTest, TheNewestKnownVersionIsChosen) {
  struct Case {
    const char* name;
    const char* group;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"v1.36: v1 alone", R"({"versions":[{"version":"v1"}]})", "v1"},
      {"v1.34 with betas enabled",
       R"({"versions":[{"version":"v1beta1"},{"version":"v1beta2"},{"version":"v1"}]})", "v1"},
      {"v1.33", R"({"versions":[{"version":"v1beta2"},{"version":"v1beta1"}]})", "v1beta2"},
      {"v1.32", R"({"versions":[{"version":"v1beta1"},{"version":"v1alpha3"}]})", "v1beta1"},
      {"v1.31: classic alpha only", R"({"versions":[{"version":"v1alpha3"}]})", ""},
      {"no versions", R"({"kind":"APIGroup"})", ""},
      {"versions not a list", R"({"versions":"v1"})", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(c.group);
    ASSERT_TRUE(doc.ok());
    EXPECT_EQ(kube::ChooseDraVersion(*doc), c.want);
  }
  absl::StatusOr<rapidjson::Document> captured =
      common::ParseJson(testing_support::ReadTestData("dra/discovery-resource.k8s.io.json"));
  ASSERT_TRUE(captured.ok());
  EXPECT_EQ(kube::ChooseDraVersion(*captured), "v1");
}

TEST(DraVersionTest, AReleaseOfAnUnpublishedDeviceStillNamesIt) {
  topology::DraClaim claim;
  claim.namespace_name = "team-a";
  claim.name = "c";
  claim.allocated = true;
  topology::DraAllocationResult result;
  result.request = "gpu";
  result.driver = "gpu.nvidia.com";
  result.pool = "node-z";
  result.device = "gpu-3";
  claim.results.push_back(result);
  topology::ClaimTransition t{topology::ClaimTransition::Kind::kReleased,
                              std::make_shared<const topology::DraClaim>(claim), false};
  common::ClaimAudit r = kube::ClaimAuditEvent(t, topology::DraState{}, nullptr);
  EXPECT_EQ(r.change, common::ClaimAudit::Change::kAllocationRemoved);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].device, "gpu.nvidia.com/node-z/gpu-3");
  EXPECT_EQ(r.devices[0].uuid, "");
  EXPECT_EQ(r.tenant.name, "") << "no published model to resolve the tenant in";
}

}  // namespace
}  // namespace dra_source_test
