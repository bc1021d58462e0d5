// The admission webhook over real HTTPS: the gpu-tenancy binary serves the demo policy on
// loopback port 0 and is sent AdmissionReviews as kube-apiserver sends them.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"
#include "test/support/test_inputs.h"

namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::ServeProcess;
using testing_support::SharedServeSuite;

// The captured pod CREATE review, moved into `ns` and given `limits`.
std::string PodReview(const std::string& ns, const std::string& limits_json) {
  rapidjson::Document review =
      ParseOrDie(ReadTestData("admission/pod-create.validating.request.json"));
  rapidjson::Document limits = ParseOrDie(limits_json);
  auto& alloc = review.GetAllocator();
  rapidjson::Value& request = review["request"];
  request["namespace"].SetString(ns.c_str(), alloc);
  rapidjson::Value& pod = request["object"];
  pod["metadata"]["namespace"].SetString(ns.c_str(), alloc);
  rapidjson::Value& resources = pod["spec"]["containers"][0]["resources"];
  resources["limits"].CopyFrom(limits, alloc);
  resources["requests"].CopyFrom(limits, alloc);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  review.Accept(w);
  return out.GetString();
}

class WebhookOverHttpsTest : public SharedServeSuite<WebhookOverHttpsTest> {
 public:
  static std::vector<std::string> ServeArgs() { return {"--demo"}; }
};

TEST_F(WebhookOverHttpsTest, ValidateDeniesAnUntrustedTenantOnASharedGpu) {
  ServeProcess::Response r = server_->Post("/webhook/validate?timeout=10s",
                                           PodReview("acme", R"({"nvidia.com/gpu.shared":"1"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document reply = ParseOrDie(r.body);
  EXPECT_STREQ(reply["apiVersion"].GetString(), "admission.k8s.io/v1");
  EXPECT_STREQ(reply["kind"].GetString(), "AdmissionReview");
  const rapidjson::Value& response = reply["response"];
  EXPECT_STREQ(response["uid"].GetString(), "a6f9752d-63da-4a05-bb99-5816e5685f28");
  EXPECT_FALSE(response["allowed"].GetBool());
  EXPECT_EQ(response["status"]["code"].GetInt(), 403);
  EXPECT_STREQ(response["status"]["reason"].GetString(), "Forbidden");
  EXPECT_EQ(std::string(response["status"]["message"].GetString()),
            "[tier-shared] container \"main\" requests nvidia.com/gpu.shared, but tenant \"acme\" "
            "(tier untrusted) may use only exclusive, mig; request a MIG slice such as "
            "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(common::FindMember(response, "patch"), nullptr);
  EXPECT_EQ(common::FindMember(response, "patchType"), nullptr);
}

// Denials are appended to the audit log with who asked and why; allowed reviews are not.
TEST(WebhookAuditTest, DenialsAreAuditedWithTenantRuleAndReason) {
  testing_support::TempDir dir;
  const std::string audit = dir.File("audit.jsonl");
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--audit-log", audit});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  ASSERT_EQ(server.Post("/webhook/validate", PodReview("acme", R"({"nvidia.com/gpu.shared":"1"})"))
                .status,
            200);
  ASSERT_EQ(server.Post("/webhook/validate", PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})"))
                .status,
            200);
  ASSERT_EQ(
      server.Post("/webhook/validate", PodReview("default", R"({"nvidia.com/gpu":"1"})")).status,
      200);
  std::string metrics = server.Get("/metrics").body;
  EXPECT_EQ(testing_support::SampleValue(metrics, "gpu_tenancy_audit_records_total"), 2) << metrics;
  EXPECT_EQ(testing_support::SampleValue(metrics, "gpu_tenancy_audit_write_errors_total"), 0);

  std::ifstream in(audit);
  std::vector<rapidjson::Document> records;
  for (std::string line; std::getline(in, line);) records.push_back(ParseOrDie(line));
  ASSERT_EQ(records.size(), 2u);
  const rapidjson::Document& shared = records[0];
  EXPECT_EQ(common::StringOr(shared, "action"), "admission");
  EXPECT_EQ(common::StringOr(shared, "decision"), "denied");
  EXPECT_EQ(common::StringOr(shared, "webhook"), "validate");
  EXPECT_EQ(common::StringOr(shared, "kind"), "Pod");
  EXPECT_EQ(common::StringOr(shared, "namespace"), "acme");
  EXPECT_FALSE(common::StringOr(shared, "pod").empty());
  EXPECT_EQ(common::StringOr(shared, "tenant"), "acme");
  EXPECT_EQ(common::StringOr(shared, "tier"), "untrusted");
  EXPECT_EQ(common::StringOr(shared, "rule"), "tier-shared");
  EXPECT_TRUE(
      absl::StrContains(common::StringOr(shared, "reason"), "requests nvidia.com/gpu.shared"));
  // A namespace no tenant claims: denied by policy, recorded without a tier.
  EXPECT_EQ(common::StringOr(records[1], "namespace"), "default");
  EXPECT_EQ(common::StringOr(records[1], "tenant"), "unknown");
  EXPECT_EQ(common::FindMember(records[1], "tier"), nullptr);
  EXPECT_FALSE(common::StringOr(records[1], "rule").empty());
}

TEST(WebhookAuditTest, AnUnwritableAuditLogIsAStartupError) {
  testing_support::TempDir dir;
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
      {"--demo", "--audit-log", "/nonexistent-dir/audit.jsonl"}, dir.File("serve.log"));
  ASSERT_FALSE(s.ok());
  // Refused for the audit log, and naming it.
  EXPECT_TRUE(absl::StrContains(testing_support::ReadFile(dir.File("serve.log")),
                                "error: audit log /nonexistent-dir/audit.jsonl: No such file or "
                                "directory"))
      << testing_support::ReadFile(dir.File("serve.log"));
}

TEST_F(WebhookOverHttpsTest, ValidateAllowsAMigSliceAndMutateAddsTenantAndPoolAffinity) {
  std::string review = PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})");
  ServeProcess::Response v = server_->Post("/webhook/validate", review);
  ASSERT_EQ(v.status, 200);
  rapidjson::Document validated = ParseOrDie(v.body);
  EXPECT_TRUE(validated["response"]["allowed"].GetBool()) << v.body;
  // The demo's acme already holds the two 1g.10gb slices its quota allows: admitted, with the
  // warning kubectl prints.
  ASSERT_TRUE(validated["response"].HasMember("warnings")) << v.body;
  EXPECT_EQ(std::string(validated["response"]["warnings"][0].GetString()),
            "tenant acme quota: nvidia.com/mig-1g.10gb 2 of 2 held, 1 requested; the pod will stay "
            "Pending until the tenant's other GPU pods release enough");

  ServeProcess::Response m = server_->Post("/webhook/mutate", review);
  ASSERT_EQ(m.status, 200);
  rapidjson::Document reply = ParseOrDie(m.body);
  const rapidjson::Value& response = reply["response"];
  ASSERT_TRUE(response["allowed"].GetBool());
  ASSERT_STREQ(response["patchType"].GetString(), "JSONPatch");
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(response["patch"].GetString(), &patch));
  rapidjson::Document ops = ParseOrDie(patch);
  ASSERT_TRUE(ops.IsArray());
  bool tenant_label = false, affinity = false;
  for (const auto& op : ops.GetArray()) {
    std::string path = op["path"].GetString();
    tenant_label |= path == "/metadata/labels/gpu-tenancy.io~1tenant" &&
                    std::string(op["value"].GetString()) == "acme";
    affinity |= path.rfind("/spec/affinity", 0) == 0;
  }
  EXPECT_TRUE(tenant_label) << patch;
  EXPECT_TRUE(affinity) << patch;
}

TEST_F(WebhookOverHttpsTest, CapturedReviewsGetAReplyForTheirUid) {
  for (const char* file : {"admission/pod-create.validating.request.json",
                           "admission/pod-update.validating.request.json",
                           "admission/pod-dryrun.validating.request.json",
                           "admission/resourceclaim-v1alpha2-create.validating.request.json"}) {
    SCOPED_TRACE(file);
    std::string body = ReadTestData(file);
    ServeProcess::Response r = server_->Post("/webhook/validate?timeout=10s", body);
    ASSERT_EQ(r.status, 200) << r.body;
    rapidjson::Document reply = ParseOrDie(r.body);
    rapidjson::Document request = ParseOrDie(body);
    EXPECT_STREQ(reply["response"]["uid"].GetString(), request["request"]["uid"].GetString());
    EXPECT_TRUE(reply["response"]["allowed"].IsBool());
  }
}

TEST_F(WebhookOverHttpsTest, MalformedReviewsGet400AndTheServerKeepsServing) {
  struct Bad {
    const char* name;
    std::string body;
  };
  for (const Bad& c :
       {Bad{"not JSON", "{\"request\":"},
        Bad{"no request", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"},
        Bad{"wrong kind", R"({"apiVersion":"v1","kind":"Pod","request":{"uid":"x"}})"}}) {
    SCOPED_TRACE(c.name);
    ServeProcess::Response r = server_->Post("/webhook/validate", c.body);
    EXPECT_EQ(r.status, 400);
    EXPECT_FALSE(std::string(common::StringOr(ParseOrDie(r.body), "error")).empty()) << r.body;
  }
  ServeProcess::Response ok =
      server_->Post("/webhook/validate", PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})"));
  EXPECT_EQ(ok.status, 200);
}

// A hand-written claim review from test/testdata/webhook/ with admin access, moved into `ns`.
std::string AdminAccessReview(const std::string& file, const std::string& ns) {
  rapidjson::Document review = ParseOrDie(ReadTestData(absl::StrCat("webhook/", file)));
  auto& alloc = review.GetAllocator();
  review["request"]["namespace"].SetString(ns.c_str(), alloc);
  review["request"]["object"]["metadata"]["namespace"].SetString(ns.c_str(), alloc);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  review.Accept(w);
  return out.GetString();
}

// DRA admin access reaches devices allocated to other tenants: denied by device-access for a
// tier without deviceAccess (acme, untrusted), allowed for the platform tier (gpu-ops).
TEST_F(WebhookOverHttpsTest, AdminAccessClaimsNeedATierWithDeviceAccess) {
  struct Case {
    const char* file;
    const char* message;
  };
  const Case cases[] = {
      {"resourceclaim-v1-admin-access.request.json",
       "[device-access] ResourceClaim \"all-gpus\" request \"gpus\" asks for admin access to "
       "all matching devices of class gpu.nvidia.com, including devices allocated to other "
       "tenants, but tenant \"acme\" (tier untrusted) has no device access; remove adminAccess "
       "to claim free devices only"},
      {"resourceclaimtemplate-v1beta1-admin-access.request.json",
       "[device-access] ResourceClaimTemplate \"mig-watch\" request \"mig\" asks for admin "
       "access to 2 devices of class mig.nvidia.com, including devices allocated to other "
       "tenants, but tenant \"acme\" (tier untrusted) has no device access; remove adminAccess "
       "to claim free devices only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    ServeProcess::Response denied =
        server_->Post("/webhook/validate?timeout=10s", AdminAccessReview(c.file, "acme"));
    ASSERT_EQ(denied.status, 200) << denied.body;
    rapidjson::Document reply = ParseOrDie(denied.body);
    const rapidjson::Value& response = reply["response"];
    EXPECT_FALSE(response["allowed"].GetBool()) << denied.body;
    EXPECT_EQ(response["status"]["code"].GetInt(), 403);
    EXPECT_EQ(std::string(response["status"]["message"].GetString()), c.message);

    ServeProcess::Response allowed =
        server_->Post("/webhook/validate?timeout=10s", AdminAccessReview(c.file, "gpu-ops"));
    ASSERT_EQ(allowed.status, 200) << allowed.body;
    EXPECT_TRUE(ParseOrDie(allowed.body)["response"]["allowed"].GetBool()) << allowed.body;
  }
}

}  // namespace
