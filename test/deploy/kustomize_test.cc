// Every kustomization under manifests/ renders offline, and each overlay carries the whole
// service.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"

namespace {

using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::Render;
using deploy_test::Str;
using rapidjson::Value;

TEST_F(DeployTest, EveryKustomizationRendersOffline) {
  for (const std::string& name : RenderNames()) {
    SCOPED_TRACE(name);
    const Render& render = Get(name);
    EXPECT_FALSE(render.docs.empty());
    for (const rapidjson::Document& d : render.docs) {
      EXPECT_FALSE(Str(&d, "/apiVersion").empty()) << Json(&d).substr(0, 200);
      EXPECT_FALSE(Str(&d, "/kind").empty()) << Json(&d).substr(0, 200);
      EXPECT_FALSE(Str(&d, "/metadata/name").empty()) << Json(&d).substr(0, 200);
    }
  }
}

TEST_F(DeployTest, OverlaysCarryTheWholeService) {
  // kind, name (namespace-scoped objects are all in gpu-tenancy-system)
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"Namespace", kNamespace},
      {"ServiceAccount", "gpu-tenancy"},
      {"ClusterRole", "gpu-tenancy"},
      {"ClusterRoleBinding", "gpu-tenancy"},
      {"Role", "gpu-tenancy-leader-election"},
      {"RoleBinding", "gpu-tenancy-leader-election"},
      {"Role", "gpu-tenancy-usage-records"},
      {"RoleBinding", "gpu-tenancy-usage-records"},
      {"Deployment", "gpu-tenancy"},
      {"PodDisruptionBudget", "gpu-tenancy"},
      {"Service", "gpu-tenancy"},
      {"ConfigMap", "gpu-tenancy-policy"},
      {"ValidatingWebhookConfiguration", "gpu-tenancy"},
      {"MutatingWebhookConfiguration", "gpu-tenancy"},
      {"ServiceAccount", "gpu-tenancy-scheduler"},
      {"Deployment", "gpu-tenancy-scheduler"},
  };
  for (const char* overlay : {"cert-manager", "static-certs"}) {
    SCOPED_TRACE(overlay);
    const Render& r = Get(overlay);
    for (const auto& [kind, name] : wanted) {
      const Value* obj = r.Find(kind, name);
      ASSERT_NE(obj, nullptr) << kind << " " << name;
      std::string ns = Str(obj, "/metadata/namespace");
      EXPECT_TRUE(ns.empty() || ns == kNamespace) << kind << " " << name << " in " << ns;
    }
    // Both overlays deliver the Secret the Deployment mounts: cert-manager through a
    // Certificate, static-certs as a Secret.
    bool secret = r.Find("Secret", "gpu-tenancy-tls") != nullptr;
    for (const Value* c : r.All("Certificate")) {
      secret |= Str(c, "/spec/secretName") == "gpu-tenancy-tls";
    }
    EXPECT_TRUE(secret) << "nothing provides Secret gpu-tenancy-tls";
  }
}

}  // namespace
