// serve's check of its own webhook configurations (cmd/webhook_guard.h), through the real
// binary against the kube-apiserver emulation: configurations applied from `gpu-tenancy
// webhook-config` for the running policy report 1; after the policy gains a quota (which makes
// every ResourceClaim relevant to the validating webhook) and is reloaded without applying
// them again, the validating webhook reports 0 and the log names it and the command.
#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace serve_webhook_guard_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::Resource;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kPolicy[] = R"(tiers:
  - name: untrusted
    modes: [exclusive, mig]
tenants:
  - name: acme
    tier: untrusted
    namespaces: [acme]
unknownTenant: deny
poolLabel: gpu-tenancy.io/pool
pools:
  - name: gpu-exclusive
    mode: exclusive
)";

// The same policy with a quota: the validating condition must now select every claim.
std::string PolicyWithQuota() {
  std::string p = kPolicy;
  const std::string at = "    namespaces: [acme]\n";
  p.replace(p.find(at), at.size(), at + "    quota:\n      gpus: 2\n");
  return p;
}

template <typename Pred>
bool GuardEventually(Pred done, std::chrono::milliseconds limit = 15s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ServeWebhookGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    std::ofstream(dir_.File("policy.yaml")) << kPolicy;
  }

  // What an operator applies: `gpu-tenancy webhook-config --policy FILE`, both documents.
  void ApplyWebhookConfig(const std::string& policy_file) {
    testing_support::CommandResult r = testing_support::RunShell(
        absl::StrCat(testing_support::ShellQuote(GT_BINARY), " webhook-config --policy ",
                     testing_support::ShellQuote(policy_file)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int loaded = 0;
    for (absl::string_view doc : absl::StrSplit(r.out, "\n---\n")) {
      absl::StatusOr<rapidjson::Document> json = common::YamlToJson(doc);
      ASSERT_TRUE(json.ok()) << json.status();
      ASSERT_TRUE(api_->Load(common::ToJson(*json)).ok());
      ++loaded;
    }
    ASSERT_EQ(loaded, 2);
  }

  std::optional<double> Current(ServeProcess& serve, const std::string& webhook) {
    return SampleValue(
        serve.Get("/metrics").body,
        absl::StrCat("gpu_tenancy_webhook_conditions_current{webhook=\"", webhook, "\"}"));
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
};

TEST_F(ServeWebhookGuardTest, CurrentUntilThePolicyChangesWithoutReapplying) {
  ASSERT_NO_FATAL_FAILURE(ApplyWebhookConfig(dir_.File("policy.yaml")));
  const std::string log = dir_.File("serve.log");
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve =
      ServeProcess::Start({"--kubeconfig", dir_.File("kubeconfig"), "--policy",
                           dir_.File("policy.yaml"), "--leader-elect", "false"},
                          log);
  ASSERT_TRUE(serve.ok()) << serve.status();
  EXPECT_TRUE(GuardEventually([&] {
    return Current(**serve, "validate") == 1.0 && Current(**serve, "mutate") == 1.0;
  })) << (*serve)->Get("/metrics").body;
  EXPECT_EQ(
      api_->CountRequests("GET",
                          "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                          "gpu-tenancy"),
      1);
  EXPECT_FALSE(absl::StrContains(ReadAll(log), "do not match the policy"));

  // The operator adds a quota and does not regenerate: stale, and said so.
  std::ofstream(dir_.File("policy.yaml")) << PolicyWithQuota();
  EXPECT_TRUE(GuardEventually([&] { return Current(**serve, "validate") == 0.0; }))
      << (*serve)->Get("/metrics").body;
  const std::string text = ReadAll(log);
  EXPECT_TRUE(absl::StrContains(text, "do not match the policy")) << text;
  EXPECT_TRUE(absl::StrContains(text, "validate.gpu-tenancy.io")) << text;
  EXPECT_TRUE(absl::StrContains(text, "gpu-tenancy webhook-config")) << text;
  // Readiness is not the guard's to take away.
  EXPECT_TRUE(GuardEventually([&] { return (*serve)->Get("/readyz").status == 200; }));
  EXPECT_EQ(testing_support::PromtoolProblems((*serve)->Get("/metrics").body), "");

  // Applied again for the new policy: current again at the next check (another reload here).
  ASSERT_NO_FATAL_FAILURE(ApplyWebhookConfig(dir_.File("policy.yaml")));
  std::ofstream(dir_.File("policy.yaml")) << PolicyWithQuota() << "# touched\n";
  EXPECT_TRUE(GuardEventually([&] {
    return Current(**serve, "validate") == 1.0 && Current(**serve, "mutate") == 1.0;
  })) << (*serve)->Get("/metrics").body;
}

TEST_F(ServeWebhookGuardTest, MissingConfigurationIsStale) {
  // Nothing applied: both configurations are 404, i.e. no conditions at all.
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--kubeconfig", dir_.File("kubeconfig"), "--policy", dir_.File("policy.yaml"),
       "--leader-elect", "false", "--validating-webhook-config", "renamed"});
  ASSERT_TRUE(serve.ok()) << serve.status();
  EXPECT_TRUE(GuardEventually([&] {
    return Current(**serve, "validate") == 0.0 && Current(**serve, "mutate") == 0.0;
  })) << (*serve)->Get("/metrics").body;
  EXPECT_EQ(
      api_->CountRequests("GET",
                          "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                          "renamed"),
      1);
}

}  // namespace
}  // namespace serve_webhook_guard_test
