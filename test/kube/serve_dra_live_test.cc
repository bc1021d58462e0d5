// DRA through the binary against the kube-apiserver emulation: `serve --kubeconfig` reads the
// captured ResourceSlice, ResourceClaim and DeviceClasses from resource.k8s.io (v1 as v1.36
// serves it, or a v1beta1-only server), follows claims as kube-scheduler allocates and they are
// deleted (in /debug/allocations, the tenant's DRA gauge and the audit log), relists after a
// 410, and serves a cluster without the group as one without DRA.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/kube/dra_test_objects.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace serve_dra_live_test {
namespace {

using namespace std::chrono_literals;
using dra_test_objects::kCapturedClaim;
using dra_test_objects::kCapturedUuid;
using dra_test_objects::kTrainingClaim;
using dra_test_objects::kTrainingUuid;
using dra_test_objects::TrainingClaimJson;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kPolicy[] = R"(tiers:
  - name: trusted
    modes: [exclusive, mig, mig-shared, mps, timeslice]
tenants:
  - name: team-a
    tier: trusted
    namespaces: [team-a]
unknownTenant: deny
)";

template <typename Pred>
bool WaitUntil(Pred done, std::chrono::milliseconds limit = 15s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Claim name -> UUID of its first device, for team-a's claims in /debug/allocations.
std::map<std::string, std::string> TeamClaims(ServeProcess& serve) {
  std::map<std::string, std::string> out;
  ServeProcess::Response r = serve.Get("/debug/allocations");
  if (r.status != 200) return {{"HTTP", absl::StrCat(r.status)}};
  rapidjson::Document doc = ParseOrDie(r.body);
  for (const auto& t : doc["tenants"].GetArray()) {
    if (common::StringOr(t, "tenant") != "team-a") continue;
    const common::JsonValue* claims = common::FindMember(t, "claims");
    if (!claims) continue;
    for (const auto& c : claims->GetArray()) {
      const common::JsonValue* devices = common::FindMember(c, "devices");
      std::string uuid = devices && devices->Size() > 0
                             ? std::string(common::StringOr((*devices)[0], "uuid"))
                             : std::string();
      out[std::string(common::StringOr(c, "name"))] = uuid;
    }
  }
  return out;
}

// The audit log's claim records, each as "decision claim uuid".
std::vector<std::string> ClaimRecords(const std::string& path) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty())) {
    rapidjson::Document a = ParseOrDie(std::string(line));
    if (common::StringOr(a, "action") != "claim") continue;
    const common::JsonValue* devices = common::FindMember(a, "devices");
    out.push_back(
        absl::StrCat(common::StringOr(a, "decision"), " ", common::StringOr(a, "claim"), " ",
                     devices && devices->Size() > 0 ? common::StringOr((*devices)[0], "uuid")
                                                    : absl::string_view()));
  }
  return out;
}

class ServeDraLiveTest : public ::testing::Test {
 protected:
  // The captured cluster (test/testdata/dra/cluster-with-claims.json), with the DRA objects
  // replaced by their v1beta1 forms when `versions` offers only that.
  void StartApi(std::vector<std::string> versions) {
    testing_support::FakeApiServerOptions options;
    options.resource_api_versions = versions;
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->LoadTestData("dra/cluster-with-claims.json").ok());
    if (versions == std::vector<std::string>{"v1beta1"}) {
      for (const char* kind : {"resourceslices", "resourceclaims", "deviceclasses"}) {
        ASSERT_TRUE(api_->LoadTestData(absl::StrCat("dra/list-", kind, ".v1beta1.json")).ok());
      }
    }
  }
  // Without a periodic relist in the test's time (--resync 1m), only a 410 makes one.
  void StartServe(const std::string& resync = "1m") {
    std::ofstream(dir_.File("policy.yaml")) << kPolicy;
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
        {"--kubeconfig", dir_.File("kubeconfig"), "--policy", dir_.File("policy.yaml"),
         "--leader-elect", "false", "--resync", resync, "--audit-log", audit_},
        dir_.File("serve.log"));
    ASSERT_TRUE(s.ok()) << s.status();
    serve_ = *std::move(s);
    ASSERT_TRUE(WaitUntil([&] { return serve_->Get("/readyz").status == 200; }))
        << ReadAll(dir_.File("serve.log"));
  }

  TempDir dir_;
  const std::string audit_ = dir_.File("audit.jsonl");
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeDraLiveTest, ClaimsFollowTheWatchIntoTheInventoryAndTheAuditLog) {
  StartApi({"v1"});
  StartServe();
  using Claims = std::map<std::string, std::string>;
  EXPECT_EQ(TeamClaims(*serve_), (Claims{{kCapturedClaim, kCapturedUuid}}));
  EXPECT_TRUE(ClaimRecords(audit_).empty()) << "claims allocated before serve started";
  const std::string gauge =
      R"(gpu_tenancy_tenant_dra_devices{tenant="team-a",tier="trusted",type="mig",profile="3g.40gb"})";
  EXPECT_EQ(SampleValue(serve_->Get("/metrics").body, gauge).value_or(0), 0);

  // The resourceclaim controller creates the claim; kube-scheduler allocates it in PreBind.
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, TrainingClaimJson(false)).ok());
  ASSERT_TRUE(api_->Upsert(Resource::kResourceClaims, TrainingClaimJson(true)).ok());
  EXPECT_TRUE(WaitUntil([&] {
    return TeamClaims(*serve_) ==
           Claims{{kCapturedClaim, kCapturedUuid}, {kTrainingClaim, kTrainingUuid}};
  })) << serve_->Get("/debug/allocations").body;
  EXPECT_TRUE(WaitUntil([&] { return SampleValue(serve_->Get("/metrics").body, gauge) == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return ClaimRecords(audit_).size() == 1; })) << ReadAll(audit_);
  EXPECT_EQ(ClaimRecords(audit_)[0],
            absl::StrCat("allocated ", kTrainingClaim, " ", kTrainingUuid));
  rapidjson::Document record = ParseOrDie(std::string(absl::StripSuffix(ReadAll(audit_), "\n")));
  EXPECT_EQ(common::StringOr(record, "tenant"), "team-a");
  EXPECT_EQ(common::StringOr(record, "tier"), "trusted");
  EXPECT_EQ(common::StringOr(record, "node"), "node-a");

  // Deleted: released, and out of the inventory.
  ASSERT_TRUE(api_->Delete(Resource::kResourceClaims, "team-a", kTrainingClaim).ok());
  EXPECT_TRUE(WaitUntil([&] {
    return TeamClaims(*serve_) == Claims{{kCapturedClaim, kCapturedUuid}};
  }));
  ASSERT_TRUE(WaitUntil([&] { return ClaimRecords(audit_).size() == 2; })) << ReadAll(audit_);
  EXPECT_EQ(ClaimRecords(audit_)[1], absl::StrCat("released ", kTrainingClaim, " ", kTrainingUuid));

  // Compacted while the watches were down: 410, a relist, and the state is right again.
  const int64_t lists =
      api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceclaims", "limit=");
  // The first rewatches are refused, so none can resume before the compaction.
  api_->InjectFailure("GET", "/apis/resource.k8s.io/v1/resourceclaims", 503, 2);
  api_->DropWatches();
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, TrainingClaimJson(true)).ok());
  ASSERT_TRUE(api_->Delete(Resource::kResourceClaims, "team-a", kCapturedClaim).ok());
  api_->Compact();
  EXPECT_TRUE(WaitUntil([&] {
    return api_->CountRequests("GET", "/apis/resource.k8s.io/v1/resourceclaims", "limit=") > lists;
  })) << ReadAll(dir_.File("serve.log"));
  EXPECT_TRUE(WaitUntil([&] {
    return TeamClaims(*serve_) == Claims{{kTrainingClaim, kTrainingUuid}};
  })) << serve_->Get("/debug/allocations").body;
  EXPECT_TRUE(WaitUntil([&] { return ClaimRecords(audit_).size() == 4; })) << ReadAll(audit_);
  EXPECT_GE(
      SampleValue(serve_->Get("/metrics").body, "gpu_tenancy_watch_restarts_total").value_or(0), 1);
  EXPECT_TRUE(absl::StrContains(ReadAll(dir_.File("serve.log")), "too old resource version"));
  EXPECT_EQ(serve_->Terminate(), 0);
}

// The names `top -H` and perf show, one per thread role: what bench/dra_floor splits CPU by.
std::multiset<std::string> ThreadNames(pid_t pid) {
  std::multiset<std::string> names;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  for (const std::filesystem::directory_entry& task : std::filesystem::directory_iterator(dir)) {
    std::string name = ReadAll((task.path() / "comm").string());
    names.insert(std::string(absl::StripSuffix(name, "\n")));
  }
  return names;
}

TEST_F(ServeDraLiveTest, EachThreadIsNamedForItsRole) {
  StartApi({"v1"});
  StartServe();
  const std::multiset<std::string> names = ThreadNames(serve_->pid());
  for (const char* role :
       {"loop", "worker", "op-handler", "w-nodes", "w-pods", "w-namespaces", "w-poddisruption",
        "w-slices", "w-claims", "w-claimtemplate", "w-deviceclasses", "assume-expiry", "guard",
        "webhook-guard", "budget-refill"}) {
    EXPECT_GE(names.count(role), 1u) << role << " among " << absl::StrJoin(names, ", ");
  }
  // The main thread keeps the program's name, and so does ThreadSanitizer's own background
  // thread in a TSan build; every thread serve starts has a role.
  EXPECT_LE(names.count("gpu-tenancy"), 2u)
      << "only the main thread keeps the program's name: " << absl::StrJoin(names, ", ");
}

TEST_F(ServeDraLiveTest, AV1beta1OnlyServerIsReadInItsShape) {
  StartApi({"v1beta1"});
  StartServe();
  EXPECT_EQ(TeamClaims(*serve_),
            (std::map<std::string, std::string>{{kCapturedClaim, kCapturedUuid}}));
  EXPECT_EQ(api_->CountRequests("GET", "/apis/resource.k8s.io/v1/"), 0);
  EXPECT_GE(api_->CountRequests("GET", "/apis/resource.k8s.io/v1beta1/resourceslices"), 1);
}

TEST_F(ServeDraLiveTest, WithoutTheGroupServeIsReadyAndKnowsNoClaims) {
  StartApi({});
  StartServe();
  EXPECT_TRUE(TeamClaims(*serve_).empty()) << serve_->Get("/debug/allocations").body;
  EXPECT_EQ(serve_->Get("/readyz/extender").status, 200);
  EXPECT_EQ(api_->CountRequests("GET", "/apis/resource.k8s.io/"), 0);
  EXPECT_TRUE(ClaimRecords(audit_).empty());
}

}  // namespace
}  // namespace serve_dra_live_test
