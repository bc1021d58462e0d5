// The AdmissionReview wire: replies to kube-apiserver's captured requests (golden, compared as
// parsed DOMs), malformed reviews, requests the webhook does not handle, and the invariants the
// API server checks on every reply.
#include "webhook/review.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"

namespace {

using webhook::ReviewKind;
using webhook_test::Json;
using webhook_test::ReadTestData;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

topology::Policy PolicyWithoutGpuTeam() {
  topology::Policy policy = TestPolicy();
  for (auto it = policy.tenants.begin(); it != policy.tenants.end(); ++it) {
    if (it->name == "gpu-team") {
      policy.tenants.erase(it);
      break;
    }
  }
  return policy;
}

// The reply with its base64 patch replaced by the decoded JSON Patch array, so a golden file can
// state the patch readably.
rapidjson::Document ReadableReply(const std::string& body) {
  rapidjson::Document doc = Json(body);
  auto response = doc.FindMember("response");
  if (response == doc.MemberEnd()) return doc;
  auto patch = response->value.FindMember("patch");
  if (patch != response->value.MemberEnd() && patch->value.IsString()) {
    std::string decoded;
    EXPECT_TRUE(absl::Base64Unescape(common::AsStringView(patch->value), &decoded));
    rapidjson::Document ops = Json(decoded);
    patch->value.CopyFrom(ops, doc.GetAllocator());
  }
  return doc;
}

TEST(ReviewGoldenTest, CapturedRequestsGetExactReplies) {
  struct Case {
    std::string fixture;
    ReviewKind kind;
    bool without_gpu_team;
    std::string golden;
  } cases[] = {
      {"pod-create.validating", ReviewKind::kValidate, false, "pod-create.validating"},
      {"pod-create.validating", ReviewKind::kValidate, true,
       "pod-create.validating.unknown-tenant"},
      {"pod-create.mutating", ReviewKind::kMutate, false, "pod-create.mutating"},
      {"pod-update.validating", ReviewKind::kValidate, false, "pod-update.validating"},
      {"pod-dryrun.validating", ReviewKind::kValidate, false, "pod-dryrun.validating"},
      {"resourceclaim-v1alpha2-create.validating", ReviewKind::kValidate, false,
       "resourceclaim-v1alpha2-create.validating"},
      {"resourceclaim-v1alpha2-create.validating", ReviewKind::kMutate, false,
       "resourceclaim-v1alpha2-create.mutating"},
      {"resourceclaim-v1alpha2-create.validating", ReviewKind::kValidate, true,
       "resourceclaim-v1alpha2-create.validating.unknown-tenant"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.golden);
    topology::Policy policy = c.without_gpu_team ? PolicyWithoutGpuTeam() : TestPolicy();
    std::string request = ReadTestData(absl::StrCat("admission/", c.fixture, ".request.json"));
    webhook::ReviewOutcome out =
        webhook::Review(request, c.kind, policy, topology::ClusterSnapshot());
    ASSERT_EQ(out.http_status, 200) << out.body;
    rapidjson::Document got = ReadableReply(out.body);
    rapidjson::Document want =
        Json(ReadTestData(absl::StrCat("webhook/golden/", c.golden, ".reply.json")));
    EXPECT_TRUE(got == want) << "got:  " << common::ToJson(got)
                             << "\nwant: " << common::ToJson(want);
  }
}

// The captured mutating request, patched with our reply, is what our validating webhook passes;
// and the patched pod needs no further mutation.
TEST(ReviewGoldenTest, MutatedFixturePassesValidationAndIsStable) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document review = Json(ReadTestData("admission/pod-create.mutating.request.json"));
  const rapidjson::Value* object = webhook_test::At(review, "/request/object");
  ASSERT_NE(object, nullptr);
  ReviewOptions o;
  o.ns = "gpu-team";
  webhook_test::Mutated m = webhook_test::MutateAndApply(*object, policy, o);
  ASSERT_TRUE(m.reply.has_patch);
  EXPECT_EQ(
      common::ToJson(*webhook_test::At(m.object, "/metadata/labels")),
      R"({"app":"harness","gpu-tenancy.io/tenant":"gpu-team","gpu-tenancy.io/tier":"untrusted"})");
  EXPECT_EQ(webhook_test::At(m.object, "/spec/tolerations")->Size(), 3u);
  Reply v = RunReview(m.object, ReviewKind::kValidate, policy, o);
  EXPECT_TRUE(v.allowed) << v.message;
}

TEST(ReviewTest, DryRunDoesNotChangeTheVerdict) {
  struct Case {
    std::string name, ns;
    std::string pod_limits;
  } cases[] = {
      {"allowed", "acme", "{nvidia.com/mig-1g.10gb: 1}"},
      {"denied", "acme", "{nvidia.com/gpu.shared: 1}"},
      {"warned", "research", "{nvidia.com/gpu.shared: 1}"},
  };
  topology::Policy policy = TestPolicy();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod =
        Yaml(absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                          "  - {name: main, resources: {limits: ",
                          c.pod_limits, "}}\n"));
    for (ReviewKind kind : {ReviewKind::kValidate, ReviewKind::kMutate}) {
      ReviewOptions real;
      real.ns = c.ns;
      ReviewOptions dry = real;
      dry.dry_run = true;
      Reply a = RunReview(pod, kind, policy, real);
      Reply b = RunReview(pod, kind, policy, dry);
      EXPECT_TRUE(a.body == b.body) << common::ToJson(a.body) << "\n" << common::ToJson(b.body);
    }
  }
  // The captured dry run, read as a real request, gets the same reply.
  std::string dry = ReadTestData("admission/pod-dryrun.validating.request.json");
  std::string real = dry;
  real.replace(real.find("\"dryRun\":true"), 13, "\"dryRun\":false");
  EXPECT_TRUE(Json(webhook::Review(dry, ReviewKind::kValidate, policy, {}).body) ==
              Json(webhook::Review(real, ReviewKind::kValidate, policy, {}).body));
}

TEST(ReviewTest, MalformedReviewsAre400) {
  topology::Policy policy = TestPolicy();
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"main"}]}})";
  auto review = [](const std::string& request) {
    return absl::StrCat(
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)", request, "}");
  };
  auto pod_request = [&](const std::string& object) {
    return review(absl::StrCat(
        R"({"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"acme","operation":"CREATE","object":)",
        object, "}"));
  };
  struct Case {
    std::string name, body, error;
  } cases[] = {
      {"not JSON", "{nope", "invalid JSON at byte"},
      {"empty body", "", "invalid JSON"},
      {"trailing junk", absl::StrCat(pod_request(pod), "x"), "invalid JSON"},
      {"not an object", "[]", "body: expected an AdmissionReview object"},
      {"v1beta1 envelope",
       R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}})",
       "apiVersion: expected admission.k8s.io/v1, got \"admission.k8s.io/v1beta1\""},
      {"no apiVersion", R"({"kind":"AdmissionReview","request":{"uid":"u"}})",
       "apiVersion: expected admission.k8s.io/v1, got \"\""},
      {"wrong kind", R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"u"}})",
       "kind: expected AdmissionReview, got \"Pod\""},
      {"no request", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
       "request: missing"},
      {"response instead of request",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u"}})",
       "request: missing"},
      {"null request", review("null"), "request: expected object, got null"},
      {"no uid", review(R"({"operation":"CREATE"})"), "request.uid: missing"},
      {"numeric uid", review(R"({"uid":7,"operation":"CREATE"})"),
       "request.uid: expected string, got number"},
      {"empty uid", review(R"({"uid":"","operation":"CREATE"})"), "request.uid: empty"},
      {"no operation", review(R"({"uid":"u"})"), "request.operation: missing"},
      {"kind is not an object",
       review(R"({"uid":"u","operation":"CREATE","kind":"Pod","object":{}})"),
       "request.kind: expected object"},
      {"object is a string", pod_request(R"("pod")"), "request.object: expected object"},
      {"object is null on CREATE", pod_request("null"), "request.object: expected object"},
      {"object missing on CREATE",
       review(
           R"({"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE"})"),
       "request.object: expected object"},
      {"pod without spec", pod_request(R"({"metadata":{"name":"p"}})"),
       "request.object.spec: missing"},
      {"pod without metadata", pod_request(R"({"spec":{}})"), "request.object.metadata: missing"},
      {"quantity that does not parse",
       pod_request(
           R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":"one"}}}]}})"),
       "request.object.spec.containers[0].resources.limits.nvidia.com/gpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (ReviewKind kind : {ReviewKind::kValidate, ReviewKind::kMutate}) {
      webhook::ReviewOutcome out = webhook::Review(c.body, kind, policy, {});
      EXPECT_EQ(out.http_status, 400) << out.body;
      EXPECT_FALSE(out.allowed);
      rapidjson::Document body = Json(out.body);
      ASSERT_TRUE(body.IsObject());
      EXPECT_EQ(body.MemberCount(), 1u) << out.body;
      std::string error(common::StringOr(body, "error"));
      EXPECT_NE(error.find(c.error), std::string::npos)
          << "want \"" << c.error << "\" in " << error;
    }
  }
}

TEST(ReviewTest, UnhandledRequestsAreAllowedUnchanged) {
  topology::Policy policy = TestPolicy();
  // A pod that every rule would deny and every mutation would touch.
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostIPC: true\n  containers:\n"
      "  - name: main\n    resources: {limits: {nvidia.com/gpu.shared: 8}}\n"
      "    securityContext: {privileged: true}\n");
  rapidjson::Document deployment = Yaml(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
      "    spec:\n      containers:\n      - {name: main, securityContext: {privileged: true}}\n");
  rapidjson::Document null_object;
  struct Case {
    std::string name;
    const rapidjson::Value* object;
    std::string operation, group, version, kind, sub_resource, ns;
  } cases[] = {
      {"DELETE", &null_object, "DELETE", "", "v1", "Pod", "", "acme"},
      {"CONNECT (exec)", &null_object, "CONNECT", "", "v1", "Pod", "exec", "acme"},
      {"another kind", &deployment, "CREATE", "apps", "v1", "Deployment", "", "acme"},
      {"a pod status update", &pod, "UPDATE", "", "v1", "Pod", "status", "acme"},
      {"a pod binding", &pod, "CREATE", "", "v1", "Pod", "binding", "acme"},
      {"an older pod API group/version", &pod, "CREATE", "", "v2", "Pod", "", "acme"},
      {"an unknown DRA version", &pod, "CREATE", "resource.k8s.io", "v9", "ResourceClaim", "",
       "acme"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ReviewOptions o;
    o.operation = c.operation;
    o.group = c.group;
    o.version = c.version;
    o.kind = c.kind;
    o.sub_resource = c.sub_resource;
    o.ns = c.ns;
    for (ReviewKind kind : {ReviewKind::kValidate, ReviewKind::kMutate}) {
      webhook::ReviewOutcome out =
          webhook::Review(webhook_test::MakeReview(*c.object, o), kind, policy, {});
      ASSERT_EQ(out.http_status, 200) << out.body;
      EXPECT_TRUE(
          Json(out.body) ==
          Json(absl::StrCat(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                            R"("response":{"uid":")",
                            o.uid, R"(","allowed":true}})")))
          << out.body;
      EXPECT_TRUE(out.allowed);
      EXPECT_EQ(out.rule, "");
    }
  }
}

TEST(ReviewTest, ReplyInvariants) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, ns, limits;
  } cases[] = {
      {"allowed GPU pod", "acme", "{nvidia.com/mig-1g.10gb: 1}"},
      {"denied GPU pod", "acme", "{nvidia.com/gpu.shared: 1}"},
      {"warned GPU pod", "research", "{nvidia.com/gpu.shared: 1}"},
      {"CPU pod", "acme", "{cpu: 1}"},
      {"unknown tenant", "nowhere", "{nvidia.com/gpu: 1}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod =
        Yaml(absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                          "  - {name: main, resources: {limits: ",
                          c.limits, "}}\n"));
    ReviewOptions o;
    o.ns = c.ns;
    o.uid = "uid-" + c.name;
    for (ReviewKind kind : {ReviewKind::kValidate, ReviewKind::kMutate}) {
      webhook::ReviewOutcome out =
          webhook::Review(webhook_test::MakeReview(pod, o), kind, policy, {});
      ASSERT_EQ(out.http_status, 200);
      rapidjson::Document body = Json(out.body);
      EXPECT_EQ(common::StringOr(body, "apiVersion"), "admission.k8s.io/v1");
      EXPECT_EQ(common::StringOr(body, "kind"), "AdmissionReview");
      const rapidjson::Value* response = common::FindMember(body, "response");
      ASSERT_NE(response, nullptr);
      EXPECT_EQ(common::StringOr(*response, "uid"), o.uid);
      const rapidjson::Value* allowed = common::FindMember(*response, "allowed");
      ASSERT_TRUE(allowed && allowed->IsBool());
      EXPECT_EQ(allowed->GetBool(), out.allowed);
      if (kind == ReviewKind::kValidate) {
        EXPECT_EQ(common::FindMember(*response, "patch"), nullptr);
        EXPECT_EQ(common::FindMember(*response, "patchType"), nullptr);
      } else {
        EXPECT_TRUE(out.allowed) << "the mutating webhook never denies";
        EXPECT_EQ(common::FindMember(*response, "status"), nullptr);
      }
      const rapidjson::Value* status = common::FindMember(*response, "status");
      EXPECT_EQ(status != nullptr, !out.allowed);
      if (status) {
        EXPECT_TRUE(*status == Json(absl::StrCat(R"({"code":403,"reason":"Forbidden","message":)",
                                                 common::ToJson(rapidjson::Value(
                                                     out.message.c_str(), body.GetAllocator())),
                                                 "}")));
        EXPECT_EQ(out.message.find('\n'), std::string::npos);
        EXPECT_EQ(out.message.rfind(absl::StrCat("[", out.rule, "] "), 0), 0u);
        const rapidjson::Value* audit = common::FindMember(*response, "auditAnnotations");
        ASSERT_NE(audit, nullptr);
        EXPECT_EQ(common::StringOr(*audit, "rule"), out.rule);
      }
      if (const rapidjson::Value* warnings = common::FindMember(*response, "warnings")) {
        ASSERT_TRUE(warnings->IsArray());
        EXPECT_GT(warnings->Size(), 0u) << "no empty warnings list";
        for (const auto& w : warnings->GetArray()) EXPECT_LE(w.GetStringLength(), 120u);
      }
    }
  }
}

TEST(ReviewTest, NamespaceLabelsComeFromTheSnapshot) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/mig-3g.40gb: 1}}}\n");
  ReviewOptions o;
  o.ns = "bank-prod";
  Reply without = RunReview(pod, ReviewKind::kValidate, policy, o);
  EXPECT_FALSE(without.allowed) << "an unlabelled namespace is nobody's";
  EXPECT_EQ(without.message.rfind("[unknown-tenant]", 0), 0u);
  topology::ClusterSnapshot snapshot =
      webhook_test::SnapshotWithNamespace("bank-prod", {{"gpu-tenancy.io/tenant", "bank"}});
  Reply with = RunReview(pod, ReviewKind::kValidate, policy, o, snapshot);
  EXPECT_TRUE(with.allowed) << with.message;
  EXPECT_EQ(common::StringOr(*webhook_test::At(with.body, "/response/auditAnnotations"), "tenant"),
            "bank");
}

TEST(ReviewTest, OutcomeCarriesPatchJson) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: main, "
      "resources: {limits: {nvidia.com/gpu.memory: 1024}}}\n");
  ReviewOptions o;
  o.operation = "UPDATE";  // metadata only
  o.old_object = &pod;
  webhook::ReviewOutcome out =
      webhook::Review(webhook_test::MakeReview(pod, o), ReviewKind::kMutate, policy, {});
  EXPECT_TRUE(
      Json(out.patch_json) ==
      Json(
          R"([{"op":"add","path":"/metadata/labels","value":{"gpu-tenancy.io/tenant":"acme","gpu-tenancy.io/tier":"untrusted"}},
              {"op":"add","path":"/metadata/annotations","value":{"gpu-tenancy.io/gpu-memory":"1024Mi"}}])"))
      << out.patch_json;
  webhook::ReviewOutcome v =
      webhook::Review(webhook_test::MakeReview(pod, o), ReviewKind::kValidate, policy, {});
  EXPECT_EQ(v.patch_json, "");
}

}  // namespace
