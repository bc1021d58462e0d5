// The audit report (views/audit.h): every checklist item run once and counted by its status,
// each tenant's deal beside them, and what the audit cannot see listed with the reason. The
// items themselves are audit_checks_test.cc's, the deals tenant_deals_test.cc's.
#include "views/audit.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/views/audit_fixture.h"

namespace views {
namespace {

using testing::AuditModel;
using testing::ExclusiveNode;

TEST(AuditReportTest, CountsEveryItemAndStatesItsLimits) {
  AuditModel model({ExclusiveNode("excl", 1)}, {});
  AuditReport report = BuildAuditReport(model.Inputs());
  EXPECT_EQ(report.checklist.size(), AuditChecks().size());
  EXPECT_EQ(report.passed + report.warned + report.failed, static_cast<int>(AuditChecks().size()));
  std::vector<std::string> items;
  for (const NotChecked& n : report.not_checked) items.push_back(n.item);
  EXPECT_THAT(items, ::testing::IsSupersetOf({"host patch level", "confidential computing",
                                              "side channels across MIG instances",
                                              "pod and claim specs"}));
}

// A run that inspected pod and claim specs does not list them as unchecked.
TEST(AuditReportTest, InspectedSpecsAreNotListedAsUnchecked) {
  AuditModel model({ExclusiveNode("excl", 1)}, {});
  AuditInputs in = model.Inputs();
  in.escape_hatches = std::vector<EscapeHatch>{};
  AuditReport report = BuildAuditReport(in);
  for (const NotChecked& n : report.not_checked) EXPECT_NE(n.item, "pod and claim specs");
  ASSERT_EQ(report.tenants.size(), model.policy->tenants.size());
  std::vector<std::string> ids;
  for (const CheckResult& c : report.checklist) ids.push_back(c.id);
  EXPECT_EQ(ids.front(), "untrusted-isolation");
  EXPECT_EQ(ids.back(), "fair-share-guarantees-fit");
}

// docs/cli.md's table of checklist items names every item: an item added here is one the docs
// must describe.
TEST(AuditReportTest, TheCliDocsTableListsEveryItem) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/docs/cli.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t start = doc.find("| id | asks |");
  ASSERT_NE(start, std::string::npos) << "docs/cli.md has no checklist table";
  const std::string table = doc.substr(start, doc.find("\n\n", start) - start);
  for (const AuditCheck& check : AuditChecks()) {
    EXPECT_NE(table.find(absl::StrCat("| `", check.id, "` |")), std::string::npos)
        << "docs/cli.md's checklist table does not name `" << check.id << "`";
  }
}

}  // namespace
}  // namespace views
