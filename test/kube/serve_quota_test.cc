// Tenant quotas through the real binary, live against the kube-apiserver emulation over HTTPS:
// filter's golden replies for a tenant under its quota and at it (every candidate unresolvable
// with the one quota reason, other tenants unaffected), bind refusing before any Binding POST,
// admission's warning, use next to quota in /metrics and /debug/allocations, and 50 binds racing
// for a tenant with `gpus: 3` placing exactly 3.
#include <barrier>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace serve_quota_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kQuotaPolicy[] = R"(tiers:
  - name: untrusted
    modes: [exclusive, mig]
tenants:
  - name: acme
    tier: untrusted
    namespaces: [acme]
    quota:
      gpus: 3
      migInstances: {3g.40gb: 1}
  - name: bank
    tier: untrusted
    namespaces: [bank]
unknownTenant: deny
poolLabel: gpu-tenancy.io/pool
pools:
  - name: gpu-mig
    mode: mig
  - name: gpu-exclusive
    mode: exclusive
)";

std::string NodeJson(const std::string& name, const std::string& pool,
                     const std::string& extra_labels, const std::string& allocatable) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
                      R"(","labels":{"gpu-tenancy.io/pool":")", pool, R"(",)", extra_labels,
                      R"(}},"status":{"allocatable":{"cpu":"31",)", allocatable, "}}}");
}

std::string MigNodeJson(const std::string& name) {
  return NodeJson(
      name, "gpu-mig",
      R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/mig.strategy":"mixed",)"
      R"("nvidia.com/mig.config.state":"success")",
      R"("nvidia.com/mig-3g.40gb":"2")");
}

std::string GpuNodeJson(const std::string& name) {
  return NodeJson(name, "gpu-exclusive", R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3")",
                  R"("nvidia.com/gpu":"8")");
}

// The pod's metadata and spec as both the API server and ExtenderArgs carry them.
std::string PodBody(const std::string& ns, const std::string& name, const std::string& resource) {
  return absl::StrCat(
      R"("metadata":{"name":")", name, R"(","namespace":")", ns, R"(","uid":"uid-)", ns, "-", name,
      R"("},"spec":{"containers":[{"name":"main","image":"x","resources":{"limits":{")", resource,
      R"(":"1"},"requests":{")", resource, R"(":"1"}}}]},"status":{"phase":"Pending"})");
}

std::string PodJson(const std::string& ns, const std::string& name, const std::string& resource) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod",)", PodBody(ns, name, resource), "}");
}

std::string FilterBody(const std::string& ns, const std::string& name,
                       const std::string& resource) {
  return absl::StrCat(R"({"Pod":{)", PodBody(ns, name, resource),
                      R"(},"Nodes":null,"NodeNames":["mig-1","mig-2","gpu-1"]})");
}

std::string BindBody(const std::string& ns, const std::string& name, const std::string& node) {
  return absl::StrCat(R"({"PodName":")", name, R"(","PodNamespace":")", ns, R"(","PodUID":"uid-)",
                      ns, "-", name, R"(","Node":")", node, R"("})");
}

std::string Golden(const std::string& name) {
  std::ifstream in(std::string(GT_TESTDATA_DIR) + "/quota/" + name, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

template <typename Pred>
bool Eventually(Pred done, std::chrono::milliseconds limit = 10s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int BoundPods(const FakeApiServer& api) {
  int n = 0;
  for (const std::string& json : api.ListObjects(Resource::kPods)) {
    rapidjson::Document doc = ParseOrDie(json);
    const common::JsonValue* spec = common::FindMember(doc, "spec");
    if (spec && !common::StringOr(*spec, "nodeName").empty()) ++n;
  }
  return n;
}

class ServeQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"acme", "bank"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    for (const char* n : {"mig-1", "mig-2"}) ASSERT_TRUE(api_->AddNode(MigNodeJson(n)).ok());
    for (int i = 1; i <= 5; ++i) {
      ASSERT_TRUE(api_->AddNode(GpuNodeJson(absl::StrCat("gpu-", i))).ok());
    }
  }
  void StartServe() {
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    std::ofstream(dir_.File("policy.yaml")) << kQuotaPolicy;
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
        {"--kubeconfig", dir_.File("kubeconfig"), "--policy", dir_.File("policy.yaml"),
         "--leader-elect", "false", "--assume-ttl", "30s", "--audit-log", dir_.File("audit.log")},
        dir_.File("serve.log"));
    ASSERT_TRUE(s.ok()) << s.status();
    serve_ = *std::move(s);
    ASSERT_TRUE(Eventually([&] { return serve_->Get("/readyz").status == 200; }))
        << ReadText(dir_.File("serve.log"));
  }
  std::string BindError(const std::string& ns, const std::string& pod, const std::string& node) {
    ServeProcess::Response r = serve_->Post("/extender/bind", BindBody(ns, pod, node));
    if (r.status != 200) return absl::StrCat("HTTP ", r.status, ": ", r.body);
    return std::string(common::StringOr(ParseOrDie(r.body), "Error"));
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeQuotaTest, AtQuotaEveryCandidateIsUnresolvableWithTheQuotaReason) {
  for (const char* p : {"q1", "q2"}) {
    ASSERT_TRUE(api_->AddPod(PodJson("acme", p, "nvidia.com/mig-3g.40gb")).ok());
  }
  ASSERT_TRUE(api_->AddPod(PodJson("bank", "b1", "nvidia.com/mig-3g.40gb")).ok());
  ASSERT_NO_FATAL_FAILURE(StartServe());

  // Under quota (0 of 1 held): both MIG nodes kept; gpu-1 does not offer the profile.
  ServeProcess::Response under =
      serve_->Post("/extender/filter", FilterBody("acme", "q1", "nvidia.com/mig-3g.40gb"));
  ASSERT_EQ(under.status, 200);
  EXPECT_EQ(under.body, Golden("filter_under_quota.json"));

  ASSERT_EQ(BindError("acme", "q1", "mig-1"), "");

  // At quota: the tenant's one 3g.40gb is held (assumed at once, before the watch confirms), so
  // every node with room is unresolvable for the same reason; kube-scheduler will not preempt.
  ServeProcess::Response at =
      serve_->Post("/extender/filter", FilterBody("acme", "q2", "nvidia.com/mig-3g.40gb"));
  ASSERT_EQ(at.status, 200);
  EXPECT_EQ(at.body, Golden("filter_at_quota.json"));

  // Bind re-checks: refused with the reason, before any Binding POST.
  api_->ClearRequests();
  EXPECT_EQ(BindError("acme", "q2", "mig-2"),
            "gpu-tenancy bind: tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested");
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/acme/pods/q2/binding"), 0);
  // The audit log records the refusal with its reason and the tenant.
  ASSERT_TRUE(
      Eventually([&] { return absl::StrContains(ReadText(dir_.File("audit.log")), "q2"); }));
  bool audited = false;
  for (absl::string_view line : absl::StrSplit(ReadText(dir_.File("audit.log")), '\n')) {
    if (!absl::StrContains(line, R"("pod":"q2")")) continue;
    rapidjson::Document a = ParseOrDie(std::string(line));
    EXPECT_EQ(common::StringOr(a, "decision"), "failed");
    EXPECT_EQ(common::StringOr(a, "tenant"), "acme");
    EXPECT_TRUE(absl::StrContains(common::StringOr(a, "reason"), "tenant acme quota")) << line;
    audited = true;
  }
  EXPECT_TRUE(audited);

  // Admission says the same where the user sees it: kubectl prints the warning.
  ServeProcess::Response review = serve_->Post(
      "/webhook/validate",
      absl::StrCat(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)"
                   R"("uid":"0d5c3a2e-0000-4000-8000-0000000000q2","operation":"CREATE",)"
                   R"("kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"acme",)"
                   R"("object":)",
                   PodJson("acme", "q3", "nvidia.com/mig-3g.40gb"), "}}"));
  ASSERT_EQ(review.status, 200) << review.body;
  rapidjson::Document reply = ParseOrDie(review.body);
  EXPECT_TRUE(reply["response"]["allowed"].GetBool()) << review.body;
  ASSERT_TRUE(reply["response"].HasMember("warnings")) << review.body;
  EXPECT_EQ(std::string(reply["response"]["warnings"][0].GetString()),
            "tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested; the pod will "
            "stay Pending until the tenant's other GPU pods release enough");

  // Use next to quota, in /metrics and in the allocation inventory.
  std::string metrics = serve_->Get("/metrics").body;
  EXPECT_EQ(testing_support::PromtoolProblems(metrics), "");
  auto series = [](const char* name, const char* resource) {
    return absl::StrCat(name, R"({tenant="acme",resource=")", resource, R"("})");
  };
  EXPECT_EQ(SampleValue(metrics, series("gpu_tenancy_tenant_quota", "nvidia.com/mig-3g.40gb")), 1);
  EXPECT_EQ(SampleValue(metrics, series("gpu_tenancy_tenant_quota_used", "nvidia.com/mig-3g.40gb")),
            1);
  EXPECT_EQ(SampleValue(metrics, series("gpu_tenancy_tenant_quota", "nvidia.com/gpu")), 3);
  EXPECT_EQ(SampleValue(metrics, series("gpu_tenancy_tenant_quota_used", "nvidia.com/gpu")), 0);
  EXPECT_FALSE(absl::StrContains(metrics, R"(gpu_tenancy_tenant_quota{tenant="bank")"))
      << "a tenant without a quota has no quota series";
  rapidjson::Document inventory = ParseOrDie(serve_->Get("/debug/allocations").body);
  bool listed = false;
  for (const auto& t : inventory["tenants"].GetArray()) {
    if (std::string(t["tenant"].GetString()) != "acme") continue;
    ASSERT_TRUE(t.HasMember("quota"));
    ASSERT_EQ(t["quota"].Size(), 2u);
    EXPECT_EQ(std::string(t["quota"][1]["resource"].GetString()), "nvidia.com/mig-3g.40gb");
    EXPECT_EQ(t["quota"][1]["quota"].GetInt(), 1);
    EXPECT_EQ(t["quota"][1]["used"].GetInt(), 1);
    listed = true;
  }
  EXPECT_TRUE(listed);

  // Another tenant is not limited by acme's quota.
  ServeProcess::Response other =
      serve_->Post("/extender/filter", FilterBody("bank", "b1", "nvidia.com/mig-3g.40gb"));
  ASSERT_EQ(other.status, 200);
  rapidjson::Document doc = ParseOrDie(other.body);
  ASSERT_TRUE(doc["NodeNames"].IsArray()) << other.body;
  EXPECT_EQ(doc["NodeNames"].Size(), 2u) << other.body;

  // Deleting the held pod frees the quota.
  ASSERT_TRUE(api_->DeletePod("acme", "q1").ok());
  ASSERT_TRUE(Eventually([&] {
    ServeProcess::Response r =
        serve_->Post("/extender/filter", FilterBody("acme", "q2", "nvidia.com/mig-3g.40gb"));
    return r.status == 200 && !absl::StrContains(r.body, "quota");
  }));
}

// Fifty binds for fifty one-GPU pods of a tenant with `gpus: 3`, spread over five nodes with
// 40 free GPUs between them: capacity never decides, only the quota, and exactly 3 land.
TEST_F(ServeQuotaTest, FiftyConcurrentBindsForATenantWithThreeGpusPlaceExactlyThree) {
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) {
    names.push_back(absl::StrCat("race-", i));
    ASSERT_TRUE(api_->AddPod(PodJson("acme", names.back(), "nvidia.com/gpu")).ok());
  }
  ASSERT_NO_FATAL_FAILURE(StartServe());
  api_->SetLatency(20ms);
  api_->ClearRequests();

  std::vector<std::string> errors(names.size());
  std::barrier start(static_cast<std::ptrdiff_t>(names.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      httplib::SSLClient client("127.0.0.1", serve_->tls_port());
      client.set_ca_cert_path((serve_->cert_dir() + "/ca.crt").c_str());
      client.enable_server_certificate_verification(true);
      client.set_read_timeout(10, 0);
      start.arrive_and_wait();
      httplib::Result r =
          client.Post("/extender/bind", BindBody("acme", names[i], absl::StrCat("gpu-", i % 5 + 1)),
                      "application/json");
      if (!r) {
        errors[i] = "transport error";
      } else if (r->status != 200) {
        errors[i] = absl::StrCat("HTTP ", r->status);
      } else {
        errors[i] = std::string(common::StringOr(ParseOrDie(r->body), "Error"));
      }
    });
  }
  for (std::thread& t : threads) t.join();

  int won = 0;
  for (const std::string& e : errors) {
    if (e.empty()) {
      ++won;
    } else {
      EXPECT_EQ(e, "gpu-tenancy bind: tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested");
    }
  }
  EXPECT_EQ(won, 3);
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/acme/pods/"), 3)
      << "the losers must be refused before calling the API server";
  EXPECT_EQ(BoundPods(*api_), 3);
}

}  // namespace
}  // namespace serve_quota_test
