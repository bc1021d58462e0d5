// Where the API server is and how to authenticate: kubeconfig (data and file variants, relative
// paths, contexts) and the in-cluster service account.
#include "kube/config.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace kube {
namespace {

using testing_support::TempDir;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCert[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
constexpr char kKey[] = "-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n";

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Two clusters, two users, two contexts; "dev" is current.
std::string Kubeconfig(const std::string& dev_cluster, const std::string& dev_user,
                       const std::string& current = "dev") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: )",
                      current, R"(
clusters:
- name: dev-cluster
  cluster:
)",
                      dev_cluster, R"(
- name: prod-cluster
  cluster:
    server: https://prod.example.com:6443
    certificate-authority-data: )",
                      absl::Base64Escape(kCa), R"(
    tls-server-name: kubernetes.default.svc
users:
- name: dev-user
  user:
)",
                      dev_user, R"(
- name: prod-user
  user:
    token: prod-token
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: gpu-system
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
)");
}

TEST(KubeconfigTest, InlineDataAndTheCurrentContext) {
  absl::StatusOr<ApiConfig> c = ParseKubeconfig(
      Kubeconfig(absl::StrCat("    server: https://10.0.0.1:6443\n    certificate-authority-data: ",
                              absl::Base64Escape(kCa)),
                 absl::StrCat("    client-certificate-data: ", absl::Base64Escape(kCert),
                              "\n    client-key-data: ", absl::Base64Escape(kKey))),
      "/nowhere");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "10.0.0.1");
  EXPECT_EQ(c->port, 6443);
  EXPECT_EQ(c->ca_pem, kCa);
  EXPECT_EQ(c->client_cert_pem, kCert);
  EXPECT_EQ(c->client_key_pem, kKey);
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->namespace_name, "gpu-system");
}

TEST(KubeconfigTest, FilesResolveAgainstTheKubeconfigDirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("pki"));
  Write(dir.File("pki/ca.crt"), kCa);
  Write(dir.File("pki/client.crt"), kCert);
  Write(dir.File("client.key"), kKey);
  Write(dir.File("token"), "file-token\n");
  std::string yaml =
      Kubeconfig("    server: https://api.example.com\n    certificate-authority: pki/ca.crt",
                 absl::StrCat("    client-certificate: pki/client.crt\n    client-key: ",
                              dir.File("client.key"), "\n    tokenFile: token"));
  Write(dir.File("config"), yaml);
  absl::StatusOr<ApiConfig> c = LoadKubeconfig(dir.File("config"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "api.example.com");
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->ca_pem, kCa);
  EXPECT_EQ(c->client_cert_pem, kCert);
  EXPECT_EQ(c->client_key_pem, kKey);
  EXPECT_EQ(c->token_file, dir.File("token"));
}

TEST(KubeconfigTest, InlineDataWinsOverAFile) {
  absl::StatusOr<ApiConfig> c = ParseKubeconfig(
      Kubeconfig(
          absl::StrCat("    server: https://a:1\n    certificate-authority: /missing/ca.crt\n"
                       "    certificate-authority-data: ",
                       absl::Base64Escape(kCa)),
          "    token: t"),
      "/");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, kCa);
  EXPECT_EQ(c->token, "t");
}

TEST(KubeconfigTest, AnExplicitContextWinsOverTheCurrentOne) {
  std::string yaml = Kubeconfig("    server: https://10.0.0.1:6443", "    token: dev-token");
  absl::StatusOr<ApiConfig> c = ParseKubeconfig(yaml, "/", "prod");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "prod.example.com");
  EXPECT_EQ(c->token, "prod-token");
  EXPECT_EQ(c->tls_server_name, "kubernetes.default.svc");
  EXPECT_EQ(c->ca_pem, kCa);
  EXPECT_EQ(c->namespace_name, "default");
}

TEST(KubeconfigTest, IPv6Servers) {
  for (const auto& [server, host, port] :
       {std::tuple<std::string, std::string, int>{"https://[::1]:6443", "::1", 6443},
        {"https://[fd00::10]", "fd00::10", 443},
        {"https://[2001:db8::1]:8443/prefix", "2001:db8::1", 8443}}) {
    SCOPED_TRACE(server);
    absl::StatusOr<ApiConfig> c =
        ParseKubeconfig(Kubeconfig(absl::StrCat("    server: ", server), "    token: t"), "/");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->host, host);
    EXPECT_EQ(c->port, port);
  }
}

TEST(KubeconfigTest, ErrorsNameWhatIsWrong) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string context;
    std::string message;
  };
  std::string ok_user = "    token: t";
  std::vector<Case> cases = {
      {"missing context", Kubeconfig("    server: https://a:1", ok_user, "staging"), "",
       "context \"staging\" not found"},
      {"missing --context", Kubeconfig("    server: https://a:1", ok_user), "qa",
       "context \"qa\" not found"},
      {"plain http", Kubeconfig("    server: http://10.0.0.1:8080", ok_user), "",
       "must be an https:// URL"},
      {"bad port", Kubeconfig("    server: https://a:http", ok_user), "", "bad port"},
      {"bad base64",
       Kubeconfig("    server: https://a:1\n    certificate-authority-data: '!!'", ok_user), "",
       "certificate-authority-data: not base64"},
      {"missing CA file",
       Kubeconfig("    server: https://a:1\n    certificate-authority: nope.crt", ok_user), "",
       "certificate-authority"},
      {"certificate without key",
       Kubeconfig("    server: https://a:1",
                  absl::StrCat("    client-certificate-data: ", absl::Base64Escape(kCert))),
       "", "without a key"},
      {"no current context", "apiVersion: v1\nkind: Config\nclusters: []\n", "",
       "no current-context"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ApiConfig> parsed = ParseKubeconfig(c.yaml, "/nonexistent", c.context);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), c.message)) << parsed.status();
  }
  absl::StatusOr<ApiConfig> missing = LoadKubeconfig("/nonexistent/kubeconfig");
  EXPECT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "/nonexistent/kubeconfig"))
      << missing.status();
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(InClusterConfigTest, ServiceAccountFilesAndEnvironment) {
  TempDir sa;
  Write(sa.File("token"), "sa-token\n");
  Write(sa.File("ca.crt"), kCa);
  Write(sa.File("namespace"), "gpu-system\n");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  absl::StatusOr<ApiConfig> c = InClusterConfig(sa.path());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "10.96.0.1");
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->ca_pem, kCa);
  EXPECT_EQ(c->token_file, sa.File("token"));  // read per request: it rotates
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->namespace_name, "gpu-system");
}

TEST(InClusterConfigTest, IPv6ServiceHost) {
  TempDir sa;
  Write(sa.File("token"), "sa-token");
  Write(sa.File("ca.crt"), kCa);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  absl::StatusOr<ApiConfig> c = InClusterConfig(sa.path());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "fd00:10:96::1");
  EXPECT_EQ(c->port, 6443);
  EXPECT_EQ(c->namespace_name, "default");  // no namespace file
}

TEST(InClusterConfigTest, OutsideAPodOrWithoutItsFiles) {
  TempDir sa;
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", nullptr);
    absl::StatusOr<ApiConfig> c = InClusterConfig(sa.path());
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StrContains(c.status().message(), "--kubeconfig")) << c.status();
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  absl::StatusOr<ApiConfig> c = InClusterConfig(sa.path());  // no ca.crt
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "ca.crt")) << c.status();
  {
    ScopedEnv bad_port("KUBERNETES_SERVICE_PORT", "https");
    Write(sa.File("ca.crt"), kCa);
    absl::StatusOr<ApiConfig> bad = InClusterConfig(sa.path());
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(absl::StrContains(bad.status().message(), "KUBERNETES_SERVICE_PORT"))
        << bad.status();
  }
}

}  // namespace
}  // namespace kube
