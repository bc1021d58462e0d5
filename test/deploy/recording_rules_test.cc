// The recording rules of manifests/monitoring (tenant-gpu-use-rules.yaml), as kustomize renders
// them: `promtool check rules` accepts them and `promtool test rules` runs their unit tests
// (test/testdata/monitoring/tenant_gpu_use_test.yaml) on synthetic DCGM and gpu-tenancy series.
// promtool is Debian's package prometheus (.ci/install-deps), or $PROMTOOL.
#include <stdlib.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::kTenantGpuUseRules;
using deploy_test::ReadFile;
using deploy_test::RecordingRule;
using deploy_test::RecordingRules;
using deploy_test::Source;
using deploy_test::Str;
using rapidjson::Value;
using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

constexpr char kRulesUnitTests[] = "test/testdata/monitoring/tenant_gpu_use_test.yaml";

std::string Promtool() {
  const char* from_env = std::getenv("PROMTOOL");
  return from_env && *from_env ? from_env : "promtool";
}

std::string PromtoolReport(const CommandResult& r) {
  return absl::StrCat("exit ", r.exit_code, "\n", r.out, r.err,
                      r.exit_code == 127 ? "-- install promtool (.ci/install-deps)" : "");
}

bool WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

TEST_F(DeployTest, TenantGpuUseRulesPassPromtoolChecksAndUnitTests) {
  const Value* rule = Get("monitoring").Find("PrometheusRule", kTenantGpuUseRules);
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(Str(rule, "/apiVersion"), "monitoring.coreos.com/v1");
  EXPECT_EQ(Str(rule, "/metadata/namespace"), kNamespace);
  const Value* spec = At(rule, "/spec");
  ASSERT_TRUE(spec && spec->IsObject());

  // The unit tests name their rules file rules.yaml, beside them. The spec in JSON is YAML, the
  // rules file Prometheus itself would be given.
  testing_support::TempDir dir;
  ASSERT_TRUE(WriteTextFile(dir.File("rules.yaml"), Json(spec)));
  std::string unit_tests = ReadFile(Source(kRulesUnitTests));
  ASSERT_FALSE(unit_tests.empty()) << kRulesUnitTests;
  ASSERT_TRUE(WriteTextFile(dir.File("unit_tests.yaml"), unit_tests));

  CommandResult check =
      RunShell(absl::StrCat(Promtool(), " check rules ", ShellQuote(dir.File("rules.yaml"))));
  EXPECT_EQ(check.exit_code, 0) << PromtoolReport(check);
  CommandResult test =
      RunShell(absl::StrCat(Promtool(), " test rules ", ShellQuote(dir.File("unit_tests.yaml"))));
  EXPECT_EQ(test.exit_code, 0) << PromtoolReport(test);

  // Named level:metric:operations (Prometheus' naming of recording rules) at the tenant level,
  // and none without expectations in the unit tests.
  std::vector<RecordingRule> rules = RecordingRules(rule);
  ASSERT_FALSE(rules.empty());
  const std::regex name_re("tenant:[a-z0-9_]+:[a-z0-9_]+");
  for (const RecordingRule& r : rules) {
    EXPECT_TRUE(std::regex_match(r.record, name_re)) << r.record;
    EXPECT_TRUE(absl::StrContains(unit_tests, absl::StrCat("- expr: ", r.record, "\n")))
        << r.record << " has no promql_expr_test in " << kRulesUnitTests;
  }
}

// The contract alert: promtool accepts it and its unit tests pass, and it reads a series the
// binary exports (guard/contract_guard.h).
TEST_F(DeployTest, ContractAlertPassesPromtoolChecksAndUnitTests) {
  const Value* rule = Get("monitoring").Find("PrometheusRule", "gpu-tenancy-contract");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(Str(rule, "/metadata/namespace"), kNamespace);
  const Value* spec = At(rule, "/spec");
  ASSERT_TRUE(spec && spec->IsObject());
  testing_support::TempDir dir;
  ASSERT_TRUE(WriteTextFile(dir.File("rules.yaml"), Json(spec)));
  ASSERT_TRUE(WriteTextFile(dir.File("unit_tests.yaml"),
                            ReadFile(Source("test/testdata/monitoring/contract_alert_test.yaml"))));
  CommandResult check =
      RunShell(absl::StrCat(Promtool(), " check rules ", ShellQuote(dir.File("rules.yaml"))));
  EXPECT_EQ(check.exit_code, 0) << PromtoolReport(check);
  CommandResult test =
      RunShell(absl::StrCat(Promtool(), " test rules ", ShellQuote(dir.File("unit_tests.yaml"))));
  EXPECT_EQ(test.exit_code, 0) << PromtoolReport(test);
  EXPECT_TRUE(absl::StrContains(ReadFile(Source("guard/contract_guard.cc")),
                                "\"gpu_tenancy_contract_violations\""));
}

// The query docs/operations.md gives auditors is the one the unit tests run.
TEST_F(DeployTest, TheAuditorsQueryInTheOperationsDocIsUnitTested) {
  std::string doc = ReadFile(Source("docs/operations.md"));
  size_t at = doc.find("**For auditors.**");
  ASSERT_NE(at, std::string::npos);
  const std::string fence = "```promql\n";
  size_t start = doc.find(fence, at);
  ASSERT_NE(start, std::string::npos);
  start += fence.size();
  size_t end = doc.find("\n```", start);
  ASSERT_NE(end, std::string::npos);
  std::string query = doc.substr(start, end - start);
  EXPECT_TRUE(absl::StrContains(query, "gpu_tenancy_device_tenant_info")) << query;
  EXPECT_TRUE(
      absl::StrContains(ReadFile(Source(kRulesUnitTests)), absl::StrCat("- expr: ", query, "\n")))
      << query;
}

}  // namespace
