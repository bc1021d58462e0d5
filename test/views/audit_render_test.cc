// The audit's four renderings (views/audit_render.h) of one hand-built report: the JSON shape
// tools read, the text a terminal shows, the Markdown a ticket takes, and an HTML page that is
// self-contained and escapes what the cluster wrote (names and messages are the cluster's, so
// a pod named `<script>` is text). audit_test.cc builds the report; this file only renders it.
#include "views/audit_render.h"

#include <string>

#include "absl/strings/match.h"
#include "common/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "views/audit.h"

namespace views {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

AuditReport SampleReport() {
  AuditReport r;
  TenantDeal acme;
  acme.tenant = "acme";
  acme.tier = "untrusted";
  acme.modes = "exclusive, mig";
  HeldDevice slice;
  slice.kind = "pod";
  slice.namespace_name = "acme";
  slice.name = "llm<script>";
  slice.node = "mig-a";
  slice.resource = "nvidia.com/mig-3g.40gb";
  slice.boundary = DeviceBoundary::kMigInstance;
  slice.gpu = "GPU 0";
  slice.co_tenants = {"bank"};
  slice.isolation = "a MIG instance of its own";
  acme.devices.push_back(slice);
  acme.nodes.push_back({"mig-a", {"host kernel", "NVIDIA driver"}, {"bank"}});
  acme.quota.push_back({"nvidia.com/mig-3g.40gb", 4, 1});
  acme.claim_selectors.push_back(
      {"acme/train", "gpu", {"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}});
  r.tenants.push_back(acme);
  TenantDeal nobody;
  nobody.tenant = "nobody";
  r.tenants.push_back(nobody);

  CheckResult pass;
  pass.id = "untrusted-isolation";
  pass.title = "Untrusted tiers only on MIG or whole-GPU pools";
  pass.detail = "2 pools checked";
  CheckResult fail;
  fail.id = "contract-held";
  fail.title = "Every placed GPU pod keeps the policy now";
  fail.status = CheckStatus::kFail;
  fail.findings.push_back({"pod/acme/x", "holds a shared GPU & more"});
  fail.fix = "evict it";
  r.checklist = {pass, fail};
  r.passed = 1;
  r.failed = 1;
  r.not_checked.push_back({"host patch level", "not visible in the Kubernetes API"});
  return r;
}

TEST(AuditRenderTest, JsonHasTheShapeToolsRead) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(AuditJson(SampleReport()));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const rapidjson::Value& summary = (*doc)["summary"];
  EXPECT_EQ(summary["pass"].GetInt(), 1);
  EXPECT_EQ(summary["warn"].GetInt(), 0);
  EXPECT_EQ(summary["fail"].GetInt(), 1);
  const rapidjson::Value& acme = (*doc)["tenants"][0];
  EXPECT_STREQ(acme["tenant"].GetString(), "acme");
  EXPECT_FALSE(acme["deviceAccess"].GetBool());
  const rapidjson::Value& device = acme["devices"][0];
  EXPECT_STREQ(device["name"].GetString(), "llm<script>");
  EXPECT_STREQ(device["boundary"].GetString(), "mig-instance");
  EXPECT_STREQ(device["coTenants"][0].GetString(), "bank");
  EXPECT_TRUE(device["coTenantsCertain"].GetBool());
  EXPECT_STREQ(acme["quota"][0]["resource"].GetString(), "nvidia.com/mig-3g.40gb");
  EXPECT_EQ(acme["claimSelectors"][0]["selectors"].Size(), 1u);
  const rapidjson::Value& check = (*doc)["checklist"][1];
  EXPECT_STREQ(check["id"].GetString(), "contract-held");
  EXPECT_STREQ(check["status"].GetString(), "fail");
  EXPECT_STREQ(check["findings"][0]["object"].GetString(), "pod/acme/x");
  EXPECT_STREQ(check["fix"].GetString(), "evict it");
  EXPECT_STREQ((*doc)["notChecked"][0]["item"].GetString(), "host patch level");
}

TEST(AuditRenderTest, TextAndMarkdownSayTheSameThings) {
  const AuditReport report = SampleReport();
  const std::string text = AuditText(report);
  EXPECT_THAT(text, HasSubstr("checklist: 1 pass, 0 warn, 1 fail"));
  EXPECT_THAT(text, HasSubstr("tier: untrusted (may use exclusive, mig)"));
  EXPECT_THAT(text, HasSubstr("pod acme/llm<script> on mig-a: 1 x nvidia.com/mig-3g.40gb (GPU 0)"));
  EXPECT_THAT(text, HasSubstr("node mig-a: shares host kernel, NVIDIA driver with bank"));
  EXPECT_THAT(text, HasSubstr("quota: nvidia.com/mig-3g.40gb 1 of 4 used"));
  EXPECT_THAT(text, HasSubstr("tier: none (the policy gives this tenant no GPUs)"));
  EXPECT_THAT(text, HasSubstr("fail  Every placed GPU pod keeps the policy now [contract-held]"));
  EXPECT_THAT(text, HasSubstr("pod/acme/x: holds a shared GPU & more"));

  const std::string md = AuditMarkdown(report);
  EXPECT_THAT(md, HasSubstr("# GPU isolation audit"));
  EXPECT_THAT(md, HasSubstr("### acme"));
  EXPECT_THAT(md,
              HasSubstr("- **fail** Every placed GPU pod keeps the policy now (`contract-held`)"));
  // Selectors are code in a ticket.
  EXPECT_THAT(md, HasSubstr("`device.attributes['gpu.nvidia.com'].profile == '3g.40gb'`"));
}

TEST(AuditRenderTest, HtmlIsSelfContainedAndEscapesTheClustersText) {
  const std::string html = AuditHtml(SampleReport());
  EXPECT_TRUE(absl::StartsWith(html, "<!DOCTYPE html>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, HasSubstr("llm&lt;script&gt;"));
  EXPECT_THAT(html, HasSubstr("holds a shared GPU &amp; more"));
  EXPECT_THAT(html, HasSubstr("data-check=\"contract-held\" data-status=\"fail\""));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("<nav")));
  EXPECT_THAT(AuditHtml(SampleReport(), /*served=*/true),
              HasSubstr("<a href=\"audit\" aria-current=\"page\">"));
}

}  // namespace
}  // namespace views
