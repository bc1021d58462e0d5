// The fixture and helpers the deploy tests share (test/deploy/*_test.cc): the service's names,
// `kubectl kustomize` renders parsed to JSON, JSON-pointer lookups, and DeployTest, which makes
// every render once per process. Everything runs offline with the kubectl on PATH (or $KUBECTL):
// `kubectl kustomize` of Debian's kubectl 1.20 (kustomize v2) and of current ones (v5) must both
// work.
#ifndef GPU_TENANCY_TEST_DEPLOY_DEPLOY_FIXTURE_H_
#define GPU_TENANCY_TEST_DEPLOY_DEPLOY_FIXTURE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/serve_process.h"

namespace deploy_test {

using rapidjson::Value;

inline constexpr char kNamespace[] = "gpu-tenancy-system";
inline constexpr char kService[] = "gpu-tenancy";
inline constexpr char kServiceHost[] = "gpu-tenancy.gpu-tenancy-system.svc";

// A path under the source tree.
std::string Source(const std::string& relative);
// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);
// $KUBECTL, else kubectl.
std::string Kubectl();

// One `kubectl kustomize` render, parsed.
struct Render {
  std::string dir;
  std::string error;  // empty when the render parsed
  std::vector<rapidjson::Document> docs;

  const Value* Find(const std::string& kind, const std::string& name) const {
    for (const rapidjson::Document& d : docs) {
      if (common::StringOr(d, "kind") == kind &&
          common::StringOr(*common::FindMember(d, "metadata"), "name") == name) {
        return &d;
      }
    }
    return nullptr;
  }
  std::vector<const Value*> All(const std::string& kind) const {
    std::vector<const Value*> out;
    for (const rapidjson::Document& d : docs) {
      if (common::StringOr(d, "kind") == kind) out.push_back(&d);
    }
    return out;
  }
};

// Renders `dir`; a failure is in Render::error, not a failed test.
Render Kustomize(const std::string& dir);

// JSON-pointer lookups ("/spec/replicas") that never assert.
const Value* At(const Value* root, const char* pointer);
std::string Str(const Value* root, const char* pointer);
std::vector<std::string> Strings(const Value* root, const char* pointer);
std::string Json(const Value* v);

// The PrometheusRule of manifests/monitoring (tenant-gpu-use-rules.yaml).
inline constexpr char kTenantGpuUseRules[] = "gpu-tenancy-tenant-gpu-use";

// A recording rule of a PrometheusRule: spec.groups[].rules[] that have a record.
struct RecordingRule {
  std::string record;
  std::string expr;
};
std::vector<RecordingRule> RecordingRules(const Value* prometheus_rule);

// The renders the tests read, each made on first use (ctest runs every test in a process of
// its own, so rendering all of them up front cost each test seconds): the base, the second
// scheduler, the cert-manager, monitoring, network-policy and reconfigure trees, and the
// static-certs overlay after running certs/make-certs.sh and certs/render-ca-bundle.sh against a
// copy of manifests/ in a temporary directory.
class DeployTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();

  // Every render's name, in the order EveryKustomizationRendersOffline reads them.
  static std::vector<std::string> RenderNames();
  static std::string Certs() {
    PrepareStaticCerts();
    return work_->File("certs");
  }
  static std::string Manifests() {
    PrepareStaticCerts();
    return work_->File("manifests");
  }
  static std::string CaBase64() { return absl::Base64Escape(ReadFile(Certs() + "/ca.crt")); }

  // The render, or a failed test naming why it is missing.
  static const Render& Get(const std::string& name);

 private:
  // Copies manifests/ and runs the certificate scripts against the copy, once.
  static void PrepareStaticCerts();

  static testing_support::TempDir* work_;
  static bool certs_prepared_;
  static std::map<std::string, Render>* renders_;
};

}  // namespace deploy_test

#endif  // GPU_TENANCY_TEST_DEPLOY_DEPLOY_FIXTURE_H_
