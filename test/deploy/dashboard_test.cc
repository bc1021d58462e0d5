// The Grafana dashboard reads metrics the service really exports, and recording rules that
// manifests/monitoring defines from them.
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/serve_process.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::kNamespace;
using deploy_test::kTenantGpuUseRules;
using deploy_test::RecordingRule;
using deploy_test::RecordingRules;
using deploy_test::Str;
using rapidjson::Value;

// The Grafana dashboard: a ConfigMap Grafana's sidecar picks up, whose every query reads
// metrics (and labels) that a running gpu-tenancy really exports, or the recording rules of
// tenant-gpu-use-rules.yaml, whose gpu-tenancy series are exported too.
TEST_F(DeployTest, DashboardQueriesReadMetricsTheServiceExports) {
  const Value* map = Get("monitoring").Find("ConfigMap", "gpu-tenancy-dashboard");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(Str(map, "/metadata/labels/grafana_dashboard"), "1");
  EXPECT_EQ(Str(map, "/metadata/namespace"), kNamespace);
  absl::StatusOr<rapidjson::Document> dashboard =
      common::ParseJson(Str(map, "/data/gpu-tenancy-dashboard.json"));
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();

  testing_support::TempDir dir;
  absl::StatusOr<std::unique_ptr<testing_support::ServeProcess>> serve =
      testing_support::ServeProcess::Start({"--demo", "--audit-log", dir.File("audit.jsonl")});
  ASSERT_TRUE(serve.ok()) << serve.status();
  std::string scrape = (*serve)->Get("/metrics").body;
  ASSERT_NE(scrape.find("gpu_tenancy_tenant_pods"), std::string::npos);

  const std::regex metric_re("gpu_tenancy_[a-z_]+");
  // A name with a colon is a recording rule's (level:metric:operations); PromQL's other colons
  // (subqueries' [5m:1m]) follow a digit.
  const std::regex record_re("(^|[^A-Za-z0-9_:])([A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_:]+)");
  std::set<std::string> recorded;
  for (const RecordingRule& rule :
       RecordingRules(Get("monitoring").Find("PrometheusRule", kTenantGpuUseRules))) {
    recorded.insert(rule.record);
    for (std::sregex_iterator it(rule.expr.begin(), rule.expr.end(), metric_re), end; it != end;
         ++it) {
      EXPECT_TRUE(absl::StrContains(scrape, absl::StrCat("# TYPE ", it->str(), " ")))
          << rule.record << " reads " << it->str() << ", which is not exported";
    }
  }
  ASSERT_FALSE(recorded.empty());
  bool reads_rules = false;
  const std::regex grouped_re(
      R"(by \(([a-z_, ]+)\) \((?:rate\(|increase\()?(gpu_tenancy_[a-z_]+))");
  std::set<std::string> titles;
  bool per_tenant = false, per_pool = false;
  for (const Value& panel : At(&*dashboard, "/panels")->GetArray()) {
    if (Str(&panel, "/type") == "row") continue;
    std::string title = Str(&panel, "/title");
    SCOPED_TRACE(title);
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(titles.insert(title).second) << "duplicate panel title";
    EXPECT_EQ(Str(&panel, "/datasource/uid"), "${datasource}");
    const Value* targets = At(&panel, "/targets");
    ASSERT_TRUE(targets && targets->IsArray() && !targets->Empty());
    for (const Value& target : targets->GetArray()) {
      std::string expr = Str(&target, "/expr");
      per_tenant |= absl::StrContains(expr, "by (tenant");
      per_pool |= absl::StrContains(expr, "by (pool");
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric_re), end; it != end; ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          if (absl::EndsWith(name, suffix) &&
              absl::StrContains(
                  scrape, absl::StrCat("# TYPE ", absl::StripSuffix(name, suffix), " histogram"))) {
            name = std::string(absl::StripSuffix(name, suffix));
          }
        }
        EXPECT_TRUE(absl::StrContains(scrape, absl::StrCat("# TYPE ", name, " ")))
            << expr << ": " << name << " is not exported";
      }
      for (std::sregex_iterator it(expr.begin(), expr.end(), record_re), end; it != end; ++it) {
        std::string name = (*it)[2].str();
        reads_rules = true;
        EXPECT_EQ(recorded.count(name), 1u)
            << expr << ": " << name << " is no recording rule of manifests/monitoring";
      }
      // Grouping labels exist on the series they group (checked where the demo has samples).
      for (std::sregex_iterator it(expr.begin(), expr.end(), grouped_re), end; it != end; ++it) {
        std::string metric = (*it)[2].str();
        std::vector<std::string> samples;
        for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
          if (absl::StartsWith(line, absl::StrCat(metric, "{"))) samples.emplace_back(line);
        }
        if (samples.empty()) continue;
        for (absl::string_view label : absl::StrSplit((*it)[1].str(), ", ")) {
          EXPECT_TRUE(absl::StrContains(samples.front(), absl::StrCat(label, "=\"")))
              << expr << ": " << metric << " has no label " << label << ": " << samples.front();
        }
      }
    }
  }
  EXPECT_TRUE(per_tenant);
  EXPECT_TRUE(reads_rules);
  EXPECT_TRUE(per_pool);
  for (const char* variable : {"datasource", "tenant", "pool"}) {
    bool found = false;
    for (const Value& v : At(&*dashboard, "/templating/list")->GetArray())
      found |= Str(&v, "/name") == variable;
    EXPECT_TRUE(found) << variable;
  }
}

}  // namespace
