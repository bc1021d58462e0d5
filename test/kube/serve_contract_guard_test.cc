// The contract guard through the real binary, live against the kube-apiserver emulation: a pod
// bound while no webhook looked is reported (Event, metric, /debug/contract) after one pass and
// forgotten once deleted; a reload that demotes a tenant reports its pods and, where the policy
// says evict, evicts them newest first at the policy's rate; a dry run evicts nothing.
#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace serve_contract_guard_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

// acme may time-slice (trusted) or may not (untrusted); `guard` is the policy's guard section.
std::string Policy(const std::string& acme_tier, const std::string& guard) {
  return absl::StrCat(R"(tiers:
  - {name: untrusted, modes: [exclusive, mig]}
  - {name: trusted, modes: [exclusive, mig, mig-shared, mps, timeslice]}
tenants:
  - {name: acme, tier: )",
                      acme_tier, R"(, namespaces: [acme]}
unknownTenant: deny
poolLabel: gpu-tenancy.io/pool
pools:
  - {name: gpu-exclusive, mode: exclusive}
  - {name: gpu-timeslice, mode: timeslice}
)",
                      guard);
}

constexpr char kTimeslicedNode[] = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"ts-1",
  "labels":{"gpu-tenancy.io/pool":"gpu-timeslice","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-40GB-SHARED",
  "nvidia.com/gpu.count":"2","nvidia.com/gpu.replicas":"4","nvidia.com/gpu.sharing-strategy":"time-slicing"}},
  "status":{"allocatable":{"cpu":"31","nvidia.com/gpu.shared":"8"}}})";

// A time-sliced pod of acme, already bound to ts-1 (no scheduler, no webhook on its way).
std::string BoundPod(const std::string& name, const std::string& created) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"(","namespace":"acme","uid":"uid-)", name, R"(","creationTimestamp":")",
                      created,
                      R"("},"spec":{"nodeName":"ts-1","containers":[{"name":"main","image":"x",
        "resources":{"limits":{"nvidia.com/gpu.shared":"1"},"requests":{"nvidia.com/gpu.shared":"1"}}}]},
        "status":{"phase":"Running"}})");
}

template <typename Pred>
bool Eventually(Pred done, std::chrono::milliseconds limit = 15s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

class ServeContractGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace("acme").ok());
    ASSERT_TRUE(api_->AddNode(kTimeslicedNode).ok());
  }
  void StartServe(const std::string& policy) {
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    WritePolicy(policy);
    absl::StatusOr<std::unique_ptr<ServeProcess>> s =
        ServeProcess::Start({"--kubeconfig", dir_.File("kubeconfig"), "--policy",
                             dir_.File("policy.yaml"), "--leader-elect", "false"},
                            dir_.File("serve.log"));
    ASSERT_TRUE(s.ok()) << s.status();
    serve_ = *std::move(s);
  }
  void WritePolicy(const std::string& policy) {
    // Written aside and renamed, so the reload never reads half a file.
    std::ofstream(dir_.File("policy.next")) << policy;
    std::rename(dir_.File("policy.next").c_str(), dir_.File("policy.yaml").c_str());
  }
  // /debug/contract's violations as "<name> <rule>" and evictions as "<name> <result>".
  std::vector<std::string> Violations() { return Read("violations", "rule"); }
  std::vector<std::string> Evictions() { return Read("evictions", "result"); }
  std::vector<std::string> Read(const char* list, const char* what) {
    ServeProcess::Response r = serve_->Get("/debug/contract");
    std::vector<std::string> out;
    if (r.status != 200) return out;
    rapidjson::Document doc = ParseOrDie(r.body);
    for (const auto& v : doc[list].GetArray()) {
      out.push_back(absl::StrCat(v["name"].GetString(), " ", v[what].GetString()));
    }
    return out;
  }
  std::vector<std::string> EvictionPosts() {
    std::vector<std::string> out;
    for (const auto& r : api_->Requests()) {
      if (r.method == "POST" && absl::EndsWith(r.path, "/eviction")) out.push_back(r.path);
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeContractGuardTest, APodPastAdmissionIsReportedAndForgottenOnceGone) {
  ASSERT_TRUE(api_->AddPod(BoundPod("sneaky", "2026-12-01T10:00:00Z")).ok());
  ASSERT_NO_FATAL_FAILURE(StartServe(Policy("untrusted", "")));
  const std::vector<std::string> want = {"sneaky tier-pool", "sneaky tier-shared"};
  ASSERT_TRUE(Eventually([&] { return Violations() == want; }))
      << ::testing::PrintToString(Violations());
  // kubectl describe pod shows why: a Warning Event on the pod, naming the rule and the fix.
  ASSERT_TRUE(Eventually([&] {
    for (const std::string& e : api_->Events()) {
      if (absl::StrContains(e, "\"reason\":\"ContractViolation\"") &&
          absl::StrContains(e,
                            "[tier-shared] container \\\"main\\\" requests "
                            "nvidia.com/gpu.shared") &&
          absl::StrContains(e, "\"name\":\"sneaky\"")) {
        return true;
      }
    }
    return false;
  }));
  const std::string series = R"(gpu_tenancy_contract_violations{tenant="acme",rule="tier-shared"})";
  EXPECT_EQ(SampleValue(serve_->Get("/metrics").body, series), 1.0);
  EXPECT_TRUE(EvictionPosts().empty()) << "report is the default action";

  // Deleted: it leaves the list and the metric.
  ASSERT_TRUE(api_->DeletePod("acme", "sneaky").ok());
  ASSERT_TRUE(Eventually([&] { return Violations().empty(); }))
      << ::testing::PrintToString(Violations());
  EXPECT_EQ(SampleValue(serve_->Get("/metrics").body, series), std::nullopt);
}

TEST_F(ServeContractGuardTest, ADemotionEvictsTheTenantsPodsNewestFirstAtThePolicysRate) {
  for (const auto& [name, created] :
       std::vector<std::pair<std::string, std::string>>{{"old", "2026-12-01T10:00:00Z"},
                                                        {"newest", "2026-12-03T10:00:00Z"},
                                                        {"middle", "2026-12-02T10:00:00Z"}}) {
    ASSERT_TRUE(api_->AddPod(BoundPod(name, created)).ok());
  }
  ASSERT_NO_FATAL_FAILURE(StartServe(Policy("trusted", "")));
  ASSERT_TRUE(Eventually([&] { return serve_->Get("/readyz").status == 200; }));
  std::this_thread::sleep_for(2s);  // a round or two: nothing breaks the contract yet
  EXPECT_TRUE(Violations().empty()) << ::testing::PrintToString(Violations());

  // A misspelt rule id would leave the evictions asked for off: the reload is refused, naming
  // it, and the policy in force stays (the tenant is still trusted).
  WritePolicy(Policy("untrusted", "guard: {actions: {tier_shared: evict}}\n"));
  ASSERT_TRUE(Eventually([&] {
    std::ifstream in(dir_.File("serve.log"));
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return absl::StrContains(log, "policy reload rejected") &&
           absl::StrContains(log, "guard.actions.tier_shared: not a rule the contract guard");
  }));
  EXPECT_TRUE(Violations().empty()) << ::testing::PrintToString(Violations());

  // The tenant is demoted; the policy evicts for tier-shared, two a minute.
  WritePolicy(
      Policy("untrusted", "guard: {actions: {tier-shared: evict}, evictionsPerMinute: 2}\n"));
  ASSERT_TRUE(Eventually([&] { return EvictionPosts().size() == 2; }))
      << ::testing::PrintToString(EvictionPosts());
  EXPECT_EQ(EvictionPosts(),
            (std::vector<std::string>{"/api/v1/namespaces/acme/pods/newest/eviction",
                                      "/api/v1/namespaces/acme/pods/middle/eviction"}));
  // The third waits for the next minute; it is reported all the same.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(EvictionPosts().size(), 2u);
  EXPECT_TRUE(absl::StrContains(::testing::PrintToString(Violations()), "old tier-shared"));
}

TEST_F(ServeContractGuardTest, ADryRunListsWhatWouldGoAndEvictsNothing) {
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(api_->AddPod(BoundPod(name, absl::StrCat("2026-12-0", name, "T10:00:00Z"))).ok());
  }
  ASSERT_NO_FATAL_FAILURE(
      StartServe(Policy("untrusted", "guard: {actions: {tier-shared: evict}, dryRun: true}\n")));
  const std::vector<std::string> want = {"b dry-run", "a dry-run"};
  ASSERT_TRUE(Eventually([&] { return Evictions() == want; }))
      << ::testing::PrintToString(Evictions());
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(EvictionPosts().empty());
  EXPECT_EQ(Evictions(), want) << "each listed once";
  EXPECT_EQ(SampleValue(serve_->Get("/metrics").body,
                        R"(gpu_tenancy_contract_evictions_total{result="dry-run"})"),
            2.0);
}

}  // namespace
}  // namespace serve_contract_guard_test
