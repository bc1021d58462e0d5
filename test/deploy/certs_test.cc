// Serving certificates: the cert-manager overlay, the certs/ scripts (make-certs.sh,
// render-ca-bundle.sh) and the static-certs overlay they feed.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

namespace fs = std::filesystem;
using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::kService;
using deploy_test::kServiceHost;
using deploy_test::ReadFile;
using deploy_test::Render;
using deploy_test::Source;
using deploy_test::Str;
using deploy_test::Strings;
using rapidjson::Value;
using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

TEST_F(DeployTest, CertManagerOverlayIssuesAndInjects) {
  const Render& r = Get("cert-manager");
  const Value* serving = r.Find("Certificate", "gpu-tenancy-serving");
  ASSERT_NE(serving, nullptr);
  EXPECT_EQ(Str(serving, "/metadata/namespace"), kNamespace);
  EXPECT_EQ(Str(serving, "/spec/secretName"), "gpu-tenancy-tls");
  EXPECT_EQ(Str(serving, "/spec/privateKey/algorithm"), "ECDSA");
  std::vector<std::string> names = Strings(serving, "/spec/dnsNames");
  for (const std::string& want :
       {std::string(kService), absl::StrCat(kService, ".", kNamespace), std::string(kServiceHost),
        absl::StrCat(kServiceHost, ".cluster.local")}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // The serving Issuer is a CA issuer (so the Secret carries ca.crt) backed by a CA Certificate.
  std::string issuer = Str(serving, "/spec/issuerRef/name");
  const Value* ca_issuer = r.Find("Issuer", issuer);
  ASSERT_NE(ca_issuer, nullptr) << issuer;
  std::string ca_secret = Str(ca_issuer, "/spec/ca/secretName");
  bool ca_cert = false;
  for (const Value* c : r.All("Certificate")) {
    ca_cert |= Str(c, "/spec/secretName") == ca_secret && Json(At(c, "/spec/isCA")) == "true";
  }
  EXPECT_TRUE(ca_cert) << "no isCA Certificate writes " << ca_secret;

  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    SCOPED_TRACE(kind);
    const Value* config = r.Find(kind, "gpu-tenancy");
    ASSERT_NE(config, nullptr);
    const Value* annotations = At(config, "/metadata/annotations");
    ASSERT_NE(annotations, nullptr);
    EXPECT_EQ(common::StringOr(*annotations, "cert-manager.io/inject-ca-from"),
              absl::StrCat(kNamespace, "/gpu-tenancy-serving"));
    // cainjector owns caBundle: an applied value would fight it on every apply.
    EXPECT_EQ(At(config, "/webhooks/0/clientConfig/caBundle"), nullptr);
  }
}

TEST_F(DeployTest, CertScriptMakesAVerifiableServingCertificate) {
  CommandResult verify = RunShell(
      absl::StrCat("openssl verify -CAfile ", ShellQuote(Certs() + "/ca.crt"), " ",
                   ShellQuote(Certs() + "/tls.crt"), " ", ShellQuote(Certs() + "/client.crt")));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  CommandResult sans = RunShell(absl::StrCat("openssl x509 -noout -ext subjectAltName -in ",
                                             ShellQuote(Certs() + "/tls.crt")));
  ASSERT_EQ(sans.exit_code, 0) << sans.err;
  std::set<std::string> got;
  for (absl::string_view line : absl::StrSplit(sans.out, '\n')) {
    for (absl::string_view entry : absl::StrSplit(line, ',')) {
      entry = absl::StripAsciiWhitespace(entry);
      if (absl::StartsWith(entry, "DNS:") || absl::StartsWith(entry, "IP Address:")) {
        got.insert(std::string(entry));
      }
    }
  }
  const std::set<std::string> want = {
      "DNS:gpu-tenancy",
      "DNS:gpu-tenancy.gpu-tenancy-system",
      "DNS:gpu-tenancy.gpu-tenancy-system.svc",
      "DNS:gpu-tenancy.gpu-tenancy-system.svc.cluster.local",
      "DNS:localhost",
      "IP Address:127.0.0.1",
      "IP Address:0:0:0:0:0:0:0:1",
  };
  EXPECT_EQ(got, want) << sans.out;

  // ECDSA P-256 for the CA and the serving key; the CA really is a CA.
  for (const char* cert : {"ca.crt", "tls.crt"}) {
    CommandResult text =
        RunShell(absl::StrCat("openssl x509 -noout -text -in ", ShellQuote(Certs() + "/" + cert)));
    EXPECT_TRUE(absl::StrContains(text.out, "NIST CURVE: P-256") ||
                absl::StrContains(text.out, "prime256v1"))
        << cert;
  }
  CommandResult ca = RunShell(absl::StrCat(
      "openssl x509 -noout -ext basicConstraints,keyUsage -in ", ShellQuote(Certs() + "/ca.crt")));
  EXPECT_TRUE(absl::StrContains(ca.out, "CA:TRUE")) << ca.out;
  CommandResult leaf = RunShell(absl::StrCat("openssl x509 -noout -ext extendedKeyUsage -in ",
                                             ShellQuote(Certs() + "/tls.crt")));
  EXPECT_TRUE(absl::StrContains(leaf.out, "TLS Web Server Authentication")) << leaf.out;

  // Keys are private to their owner.
  for (const char* key : {"ca.key", "tls.key", "client.key"}) {
    fs::perms p = fs::status(Certs() + "/" + key).permissions();
    EXPECT_EQ(p & (fs::perms::group_all | fs::perms::others_all), fs::perms::none) << key;
  }
}

TEST_F(DeployTest, RerunningTheCertScriptRotatesUnderTheSameCa) {
  testing_support::TempDir tmp;
  const std::string& dir = tmp.path();
  std::string script =
      absl::StrCat("bash ", ShellQuote(Source("certs/make-certs.sh")), " ", ShellQuote(dir));
  ASSERT_EQ(RunShell(script).exit_code, 0);
  std::string ca = ReadFile(dir + "/ca.crt");
  std::string serving = ReadFile(dir + "/tls.crt");
  ASSERT_EQ(RunShell(script).exit_code, 0);
  EXPECT_EQ(ReadFile(dir + "/ca.crt"), ca)
      << "the CA must survive a rotation (caBundle stays valid)";
  EXPECT_NE(ReadFile(dir + "/tls.crt"), serving);
  EXPECT_EQ(RunShell(absl::StrCat("openssl verify -CAfile ", ShellQuote(dir + "/ca.crt"), " ",
                                  ShellQuote(dir + "/tls.crt")))
                .exit_code,
            0);
}

TEST_F(DeployTest, StaticCertsOverlayCarriesTheCaBundleAfterRendering) {
  const Render& r = Get("static-certs");
  std::string ca = CaBase64();
  ASSERT_FALSE(ca.empty());
  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    SCOPED_TRACE(kind);
    const Value* config = r.Find(kind, "gpu-tenancy");
    ASSERT_NE(config, nullptr);
    EXPECT_EQ(Str(config, "/webhooks/0/clientConfig/caBundle"), ca);
    // The patch merged into the webhook by name instead of replacing it.
    EXPECT_EQ(Str(config, "/webhooks/0/failurePolicy"), "Fail");
    EXPECT_EQ(Str(config, "/webhooks/0/clientConfig/service/name"), kService);
  }
  const Value* secret = r.Find("Secret", "gpu-tenancy-tls");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(Str(secret, "/type"), "kubernetes.io/tls");
  EXPECT_EQ(Str(secret, "/metadata/namespace"), kNamespace);
  for (const char* file : {"tls.crt", "tls.key", "ca.crt"}) {
    std::string pointer = absl::StrCat("/data/", file);
    // kustomize v5 folds long base64 values over lines; the API server's decoder skips them.
    EXPECT_EQ(absl::StrReplaceAll(Str(secret, pointer.c_str()), {{"\n", ""}}),
              absl::Base64Escape(ReadFile(Certs() + "/" + file)))
        << file;
  }
  // The second scheduler's config carries the same CA as caData.
  std::string config_text;
  for (const Value* cm : r.All("ConfigMap")) {
    if (absl::StartsWith(Str(cm, "/metadata/name"), "gpu-tenancy-scheduler-config")) {
      config_text = Str(cm, "/data/config.yaml");
    }
  }
  absl::StatusOr<rapidjson::Document> config = common::YamlToJson(config_text);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(Str(&*config, "/extenders/0/tlsConfig/caData"), ca);
  EXPECT_EQ(At(&*config, "/extenders/0/tlsConfig/caFile"), nullptr);

  // Private keys never reach git: the generated overlay and certs/out are ignored.
  if (RunShell(absl::StrCat("git -C ", ShellQuote(GT_SOURCE_DIR), " rev-parse")).exit_code == 0) {
    for (const char* path : {"manifests/overlays/static-certs/generated/tls.key",
                             "manifests/overlays/static-certs/generated/ca-bundle.yaml",
                             "certs/out/ca.key", "certs/out/tls.crt", "anywhere/else.key"}) {
      EXPECT_EQ(RunShell(absl::StrCat("git -C ", ShellQuote(GT_SOURCE_DIR), " check-ignore -q ",
                                      ShellQuote(path)))
                    .exit_code,
                0)
          << path << " is not ignored by git";
    }
  }
}

}  // namespace
