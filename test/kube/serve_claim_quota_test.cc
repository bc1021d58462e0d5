// DRA claim quotas through the binary, live against the kube-apiserver emulation over HTTPS,
// with two `serve` replicas sharing the tenant's usage record (ConfigMap
// gpu-tenancy-usage-acme): a claim under the quota is allowed and reserved, one over it is
// denied by either replica with the tenant-quota message, a dry run reserves nothing, and 50
// claims admitted at once across both replicas for a tenant with room for 3 GPUs admit exactly
// 3. Two hundred sequential claims are each reserved; that test prints what the quota path
// adds to an admission, against a tenant without a quota in the same run.
#include <barrier>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "webhook/claim_quota.h"

namespace serve_claim_quota_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kClaimQuotaServePolicy[] = R"(tiers:
  - name: training
    modes: [exclusive, mig]
tenants:
  - name: acme
    tier: training
    namespaces: [acme]
    quota:
      gpus: 3
  - name: bulk
    tier: training
    namespaces: [bulk]
    quota:
      gpus: 100000
  - name: open
    tier: training
    namespaces: [open]
unknownTenant: deny
quotaEnforcement: admission
)";

constexpr char kRecordNamespace[] = "gpu-tenancy-system";
constexpr int kSequentialClaims = 200;

std::string GpuSliceJson(const std::string& node) {
  std::string devices;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&devices, i ? "," : "", R"({"name":"gpu-)", i,
                    R"(","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-)", node, "-",
                    i, R"("}},"capacity":{"memory":{"value":"80Gi"}}})");
  }
  return absl::StrCat(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")", node,
      R"(-gpu.nvidia.com"},"spec":{"driver":"gpu.nvidia.com","nodeName":")", node,
      R"(","pool":{"name":")", node, R"(","generation":1,"resourceSliceCount":1},"devices":[)",
      devices, "]}}");
}

constexpr char kGpuDeviceClass[] =
    R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":)"
    R"("gpu.nvidia.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == )"
    R"('gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}})";

std::string ClaimJson(const std::string& name, int count, const std::string& ns = "acme") {
  return absl::StrCat(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")", name,
      R"(","namespace":")", ns, R"(","uid":"uid-)", name,
      R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":)"
      R"("gpu.nvidia.com","count":)",
      count, "}}]}}}");
}

std::string ClaimReview(const std::string& name, int count, bool dry_run = false,
                        const std::string& ns = "acme") {
  return absl::StrCat(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"review-)",
      name, R"(","operation":"CREATE","kind":{"group":"resource.k8s.io","version":"v1",)",
      R"("kind":"ResourceClaim"},"resource":{"group":"resource.k8s.io","version":"v1",)",
      R"("resource":"resourceclaims"},"namespace":")", ns, R"(","name":")", name, R"(","dryRun":)",
      dry_run ? "true" : "false", R"(,"object":)", ClaimJson(name, count, ns), "}}");
}

// "" when allowed, else the denial message (or the transport/HTTP failure).
std::string Verdict(int status, const std::string& body) {
  if (status != 200) return absl::StrCat("HTTP ", status, ": ", body);
  rapidjson::Document reply = ParseOrDie(body);
  const common::JsonValue& response = reply["response"];
  if (response["allowed"].GetBool()) return "";
  return std::string(common::StringOr(response["status"], "message"));
}

template <typename Pred>
bool ClaimQuotaEventually(Pred done, std::chrono::milliseconds limit = 60s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string ClaimQuotaLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class ServeClaimQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"acme", "bulk", "open", kRecordNamespace})
      ASSERT_TRUE(api_->AddNamespace(ns).ok());
    for (const char* node : {"node-a", "node-b"}) {
      ASSERT_TRUE(api_->Add(Resource::kResourceSlices, GpuSliceJson(node)).ok());
    }
    ASSERT_TRUE(api_->Add(Resource::kDeviceClasses, kGpuDeviceClass).ok());
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    std::ofstream(dir_.File("policy.yaml")) << kClaimQuotaServePolicy;
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
          {"--kubeconfig", dir_.File("kubeconfig"), "--policy", dir_.File("policy.yaml"),
           "--leader-elect", "false", "--lease-namespace", kRecordNamespace},
          dir_.File(absl::StrCat("serve-", i, ".log")));
      ASSERT_TRUE(s.ok()) << s.status();
      replicas_.push_back(*std::move(s));
      ASSERT_TRUE(ClaimQuotaEventually([&] {
        return replicas_.back()->Get("/readyz").status == 200;
      })) << ClaimQuotaLog(dir_.File(absl::StrCat("serve-", i, ".log")));
    }
  }
  std::string Admit(int replica, const std::string& name, int count, bool dry_run = false) {
    ServeProcess::Response r =
        replicas_[replica]->Post("/webhook/validate", ClaimReview(name, count, dry_run));
    return Verdict(r.status, r.body);
  }
  // The claims the usage record holds reservations for, as "key=value" lines.
  std::string RecordEntries() {
    std::string json =
        api_->GetObject(Resource::kConfigMaps, kRecordNamespace, "gpu-tenancy-usage-acme");
    if (json.empty()) return "<no record>";
    rapidjson::Document doc = ParseOrDie(json);
    std::string out;
    const common::JsonValue* data = common::FindNonNull(doc, "data");
    if (!data) return out;
    for (const auto& m : data->GetObject()) {
      absl::StrAppend(&out, common::AsStringView(m.name), "\n");
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::vector<std::unique_ptr<ServeProcess>> replicas_;
};

TEST_F(ServeClaimQuotaTest, UnderIsAllowedAndReservedOverIsDeniedByEitherReplica) {
  // A dry run is judged but reserves nothing.
  EXPECT_EQ(Admit(0, "dry", 2, /*dry_run=*/true), "");
  EXPECT_EQ(RecordEntries(), "<no record>");

  EXPECT_EQ(Admit(0, "two", 2), "");
  EXPECT_EQ(RecordEntries(), "acme.two\n");
  // The API server creates it; both replicas count it from then on, pending.
  ASSERT_TRUE(api_->Add(Resource::kResourceClaims, ClaimJson("two", 2)).ok());

  EXPECT_EQ(Admit(1, "more", 2),
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 2 of 3 held, 2 requested");
  EXPECT_EQ(Admit(1, "one", 1), "");
  EXPECT_EQ(RecordEntries(), "acme.one\nacme.two\n");
  EXPECT_EQ(Admit(0, "another", 1),
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested");
  EXPECT_EQ(Admit(0, "dry-over", 1, /*dry_run=*/true),
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested");
  EXPECT_EQ(RecordEntries(), "acme.one\nacme.two\n") << "denials reserve nothing";
}

// Fifty one-GPU claims, alternating between the two replicas, all at once, with a tenant that
// has room for 3 and a cluster with 8 GPUs: only the quota decides, and exactly 3 are admitted.
TEST_F(ServeClaimQuotaTest, FiftyConcurrentClaimsOnTwoReplicasAdmitExactlyThree) {
  api_->SetLatency(20ms);
  constexpr int kClaims = 50;
  std::vector<std::string> verdicts(kClaims);
  std::barrier start(kClaims);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaims; ++i) {
    threads.emplace_back([&, i] {
      const ServeProcess& replica = *replicas_[i % 2];
      httplib::SSLClient client("127.0.0.1", replica.tls_port());
      client.set_ca_cert_path((replica.cert_dir() + "/ca.crt").c_str());
      client.enable_server_certificate_verification(true);
      client.set_read_timeout(30, 0);
      start.arrive_and_wait();
      httplib::Result r = client.Post("/webhook/validate", ClaimReview(absl::StrCat("race-", i), 1),
                                      "application/json");
      verdicts[i] = r ? Verdict(r->status, r->body) : "transport error";
    });
  }
  for (std::thread& t : threads) t.join();
  int admitted = 0;
  for (const std::string& v : verdicts) {
    if (v.empty()) {
      ++admitted;
    } else {
      EXPECT_EQ(v, "[tenant-quota] tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested");
    }
  }
  EXPECT_EQ(admitted, 3);
  int reserved = 0;
  for (char c : RecordEntries()) reserved += c == '\n';
  EXPECT_EQ(reserved, 3) << RecordEntries();
}

// Two hundred claims one after another for a tenant with a quota far from it (a write to its
// usage record per admission budget) and for one without (no record): every one is admitted,
// and every quota claim is held in the record. Prints the mean admission time of each, the cost of
// the quota path (no assertion on it: timings are not a test's business).
TEST_F(ServeClaimQuotaTest, TwoHundredSequentialClaimsAreEachHeldInTheRecord) {
  httplib::SSLClient client("127.0.0.1", replicas_[0]->tls_port());
  client.set_ca_cert_path((replicas_[0]->cert_dir() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // else delayed ACKs, not the server, set the pace
  int round = 0;
  auto run = [&](const std::string& ns, int reviews = kSequentialClaims) {
    int admitted = 0;
    ++round;
    auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < reviews; ++i) {
      httplib::Result r = client.Post(
          "/webhook/validate", ClaimReview(absl::StrCat("seq-", round, "-", i), 1, false, ns),
          "application/json");
      if (r && Verdict(r->status, r->body).empty()) ++admitted;
    }
    auto spent = std::chrono::steady_clock::now() - begin;
    std::cout << "claim admission, tenant " << ns << ": "
              << std::chrono::duration_cast<std::chrono::microseconds>(spent).count() / reviews
              << " us per review over " << reviews << " sequential reviews\n";
    return admitted;
  };
  EXPECT_EQ(run("open", 20), 20);  // warms the connection and its TLS session
  // Interleaved rounds, so both see the same machine.
  EXPECT_EQ(run("open"), kSequentialClaims);
  EXPECT_EQ(run("bulk"), kSequentialClaims);
  EXPECT_EQ(run("open"), kSequentialClaims);
  std::string record =
      api_->GetObject(Resource::kConfigMaps, kRecordNamespace, "gpu-tenancy-usage-bulk");
  ASSERT_FALSE(record.empty());
  rapidjson::Document doc = ParseOrDie(record);
  // Every claim is held in the record: by its own reservation, or by the replica's admission
  // budget it was admitted from (webhook/claim_budget.h), written once per many claims.
  int reserved = 0, budgets = 0;
  int64_t budget_gpus = 0;
  for (const auto& entry : doc["data"].GetObject()) {
    const std::string key = entry.name.GetString();
    if (absl::StartsWith(key, "budget.")) {
      ++budgets;
      absl::StatusOr<webhook::ClaimReservation> b =
          webhook::DecodeReservation(entry.value.GetString());
      ASSERT_TRUE(b.ok()) << b.status();
      budget_gpus = b->usage.gpus;
    } else {
      ++reserved;
    }
  }
  EXPECT_EQ(budgets, 1) << record;
  EXPECT_GE(reserved, kSequentialClaims - webhook::kBudgetClaims) << record;
  EXPECT_GE(reserved + budget_gpus, kSequentialClaims) << record;
  const int64_t writes =
      api_->CountRequests(
          "PUT", "/api/v1/namespaces/gpu-tenancy-system/configmaps/gpu-tenancy-usage-bulk") +
      api_->CountRequests("POST", "/api/v1/namespaces/gpu-tenancy-system/configmaps");
  // The first claim's write and then one refill, ahead of need, per half budget spent.
  EXPECT_LE(writes, 1 + kSequentialClaims / (webhook::kBudgetClaims / 2) + 1);
  EXPECT_TRUE(
      api_->GetObject(Resource::kConfigMaps, kRecordNamespace, "gpu-tenancy-usage-open").empty());
}

}  // namespace
}  // namespace serve_claim_quota_test
