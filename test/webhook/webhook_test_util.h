// Helpers shared by the webhook tests: the test policy, YAML objects, AdmissionReview envelopes,
// and decoding a reply (including its base64 JSON Patch) into something easy to assert on.
#ifndef GPU_TENANCY_TEST_WEBHOOK_WEBHOOK_TEST_UTIL_H_
#define GPU_TENANCY_TEST_WEBHOOK_WEBHOOK_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "topology/policy.h"
#include "topology/snapshot.h"
#include "webhook/json_patch.h"
#include "webhook/review.h"

namespace webhook_test {

inline std::string ReadTestData(const std::string& relative) {
  std::ifstream in(std::string(GT_TESTDATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read testdata " << relative;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// test/testdata/webhook/policy.yaml: tenants acme (untrusted, MIG profiles 1g/2g/3g, 80Gi),
// bank (untrusted, by namespace label), research (trusted, 40Gi, 1 replica, MPS 50%/20Gi),
// gpu-team (untrusted, 1g.10gb only), gpu-platform (device access in gpu-ops); unknown denied.
inline topology::Policy TestPolicy() {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(ReadTestData("webhook/policy.yaml"));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy();
}

inline rapidjson::Document Yaml(const std::string& text) {
  absl::StatusOr<rapidjson::Document> doc = common::YamlToJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  return doc.ok() ? *std::move(doc) : rapidjson::Document();
}

inline rapidjson::Document Json(const std::string& text) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  return doc.ok() ? *std::move(doc) : rapidjson::Document();
}

// A snapshot that knows one namespace's labels (tenant selectors read them).
inline topology::ClusterSnapshot SnapshotWithNamespace(const std::string& ns,
                                                       topology::Labels labels) {
  topology::ClusterData data;
  data.namespace_labels[ns] = std::move(labels);
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), topology::Policy::AllowAll());
}

struct ReviewOptions {
  std::string operation = "CREATE";
  std::string ns = "acme";
  std::string group = "";
  std::string version = "v1";
  std::string kind = "Pod";
  std::string resource = "pods";
  std::string sub_resource;
  const rapidjson::Value* old_object = nullptr;
  const rapidjson::Value* user_info = nullptr;  // request.userInfo; absent when null
  bool dry_run = false;
  std::string uid = "0d5c3a2e-0000-4000-8000-000000000001";
};

// An admission.k8s.io/v1 AdmissionReview as kube-apiserver sends it.
inline std::string MakeReview(const rapidjson::Value& object, const ReviewOptions& o = {}) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  auto str = [&](const std::string& s) { return rapidjson::Value(s.c_str(), a); };
  rapidjson::Value gvk(rapidjson::kObjectType);
  gvk.AddMember("group", str(o.group), a);
  gvk.AddMember("version", str(o.version), a);
  gvk.AddMember("kind", str(o.kind), a);
  rapidjson::Value gvr(rapidjson::kObjectType);
  gvr.AddMember("group", str(o.group), a);
  gvr.AddMember("version", str(o.version), a);
  gvr.AddMember("resource", str(o.resource), a);
  rapidjson::Value req(rapidjson::kObjectType);
  req.AddMember("uid", str(o.uid), a);
  req.AddMember("kind", rapidjson::Value(gvk, a), a);
  req.AddMember("resource", rapidjson::Value(gvr, a), a);
  if (!o.sub_resource.empty()) req.AddMember("subResource", str(o.sub_resource), a);
  req.AddMember("requestKind", gvk, a);
  req.AddMember("requestResource", gvr, a);
  req.AddMember("namespace", str(o.ns), a);
  req.AddMember("operation", str(o.operation), a);
  if (o.user_info) req.AddMember("userInfo", rapidjson::Value(*o.user_info, a), a);
  req.AddMember("object", rapidjson::Value(object, a), a);
  if (o.old_object) {
    req.AddMember("oldObject", rapidjson::Value(*o.old_object, a), a);
  } else {
    req.AddMember("oldObject", rapidjson::Value(), a);
  }
  req.AddMember("dryRun", o.dry_run, a);
  doc.AddMember("kind", "AdmissionReview", a);
  doc.AddMember("apiVersion", "admission.k8s.io/v1", a);
  doc.AddMember("request", req, a);
  return common::ToJson(doc);
}

// A reply taken apart.
struct Reply {
  int http_status = 0;
  rapidjson::Document body;
  bool allowed = false;
  std::string message;  // status.message
  std::vector<std::string> warnings;
  bool has_patch = false;
  rapidjson::Document patch;  // the decoded JSON Patch array (null when none)
};

inline Reply Decode(const webhook::ReviewOutcome& out) {
  Reply r;
  r.http_status = out.http_status;
  r.body = Json(out.body);
  if (out.http_status != 200) return r;
  const rapidjson::Value* response = common::FindMember(r.body, "response");
  EXPECT_NE(response, nullptr) << out.body;
  if (!response) return r;
  const rapidjson::Value* allowed = common::FindMember(*response, "allowed");
  EXPECT_TRUE(allowed && allowed->IsBool()) << out.body;
  r.allowed = allowed && allowed->IsBool() && allowed->GetBool();
  if (const rapidjson::Value* status = common::FindMember(*response, "status")) {
    r.message = std::string(common::StringOr(*status, "message"));
  }
  if (const rapidjson::Value* warnings = common::FindMember(*response, "warnings")) {
    for (const auto& w : warnings->GetArray()) r.warnings.emplace_back(w.GetString());
  }
  const rapidjson::Value* patch = common::FindMember(*response, "patch");
  const rapidjson::Value* patch_type = common::FindMember(*response, "patchType");
  EXPECT_EQ(patch == nullptr, patch_type == nullptr) << "patch and patchType go together";
  if (patch) {
    r.has_patch = true;
    std::string decoded;
    EXPECT_TRUE(absl::Base64Unescape(common::AsStringView(*patch), &decoded));
    EXPECT_EQ(common::StringOr(*response, "patchType"), "JSONPatch");
    r.patch = Json(decoded);
  }
  return r;
}

inline Reply RunReview(const rapidjson::Value& object, webhook::ReviewKind kind,
                       const topology::Policy& policy, const ReviewOptions& o = {},
                       const topology::ClusterSnapshot& snapshot = topology::ClusterSnapshot()) {
  return Decode(webhook::Review(MakeReview(object, o), kind, policy, snapshot));
}

// Mutates `object`, applies the patch, and checks that mutating the result changes nothing.
struct Mutated {
  Reply reply;
  rapidjson::Document object;  // after the patch
};

inline Mutated MutateAndApply(const rapidjson::Value& object, const topology::Policy& policy,
                              const ReviewOptions& o = {}) {
  Mutated m;
  m.reply = RunReview(object, webhook::ReviewKind::kMutate, policy, o);
  EXPECT_EQ(m.reply.http_status, 200);
  EXPECT_TRUE(m.reply.allowed) << "the mutating webhook never denies";
  m.object.CopyFrom(object, m.object.GetAllocator());
  if (m.reply.has_patch) {
    absl::Status applied = webhook::ApplyPatch(m.reply.patch, m.object);
    EXPECT_TRUE(applied.ok()) << applied << "\npatch: " << common::ToJson(m.reply.patch);
    Reply again = RunReview(m.object, webhook::ReviewKind::kMutate, policy, o);
    EXPECT_FALSE(again.has_patch) << "mutation is not idempotent; second patch: "
                                  << common::ToJson(again.patch);
  }
  return m;
}

// The value at a JSON pointer, or nullptr.
inline const rapidjson::Value* At(const rapidjson::Value& root, const std::string& pointer) {
  const rapidjson::Value* v = &root;
  size_t pos = 1;
  if (pointer.empty()) return v;
  while (pos <= pointer.size()) {
    size_t next = pointer.find('/', pos);
    if (next == std::string::npos) next = pointer.size();
    std::string token = webhook::UnescapePointerToken(pointer.substr(pos, next - pos));
    if (v->IsObject()) {
      v = common::FindMember(*v, token);
    } else if (v->IsArray()) {
      size_t index = std::stoul(token);
      v = index < v->Size() ? &(*v)[static_cast<rapidjson::SizeType>(index)] : nullptr;
    } else {
      v = nullptr;
    }
    if (!v) return nullptr;
    pos = next + 1;
  }
  return v;
}

}  // namespace webhook_test

#endif  // GPU_TENANCY_TEST_WEBHOOK_WEBHOOK_TEST_UTIL_H_
