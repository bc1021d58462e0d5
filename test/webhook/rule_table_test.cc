#include "webhook/rule_table.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace {

std::string ReadRepoFile(const std::string& path) {
  std::ifstream in(absl::StrCat(GT_SOURCE_DIR, "/", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RuleTableTest, EveryRowDecidesSomething) {
  for (const webhook::PodRule& rule : webhook::PodRules()) {
    SCOPED_TRACE(rule.id);
    EXPECT_NE(rule.check, nullptr);
    EXPECT_NE(rule.phases, 0u);
  }
  for (const webhook::ClaimRule& rule : webhook::ClaimRules()) {
    SCOPED_TRACE(rule.id);
    EXPECT_NE(rule.check, nullptr);
  }
  for (const webhook::NodeRule& rule : webhook::NodeRules()) {
    SCOPED_TRACE(rule.id);
    EXPECT_NE(rule.check, nullptr);
  }
  // A row with a side effect runs after every row that could deny without one.
  bool effectful_seen = false;
  for (const webhook::ClaimRule& rule : webhook::ClaimRules()) {
    if (rule.only_if_allowed) effectful_seen = true;
    EXPECT_TRUE(!effectful_seen || rule.only_if_allowed) << rule.id << " runs after a side effect";
  }
}

TEST(RuleTableTest, TheIdsAreTheOnesTheWebhookDeniesWith) {
  const std::vector<std::string> ids = webhook::RuleIds();
  EXPECT_EQ(
      std::set<std::string>(ids.begin(), ids.end()),
      (std::set<std::string>{"device-annotation", "unknown-tenant", "tier-shared",
                             "fail-requests-greater-than-one", "device-access", "tenant-limits",
                             "invalid-gpu-request", "priority-class", "dra-extended-resource",
                             "unknown-demand", "preset-node", "scheduler-name", "tenant-quota",
                             "claim-device-class", "claim-mig-profile", "claim-shared-capacity",
                             "claim-sharing", "claim-mps-limits"}));
  EXPECT_EQ(ids.size(), 18u) << "each id once";
}

// The docs list the rules: a rule added to the table is a rule the docs must describe.
TEST(RuleTableTest, TheAdmissionDocsRulesTableListsEveryRule) {
  const std::string doc = ReadRepoFile("docs/admission.md");
  const size_t start = doc.find("| rule | denies |");
  ASSERT_NE(start, std::string::npos) << "docs/admission.md has no admission rules table";
  const size_t end = doc.find("\n\n", start);
  const std::string table = doc.substr(start, end - start);
  for (const std::string& id : webhook::RuleIds()) {
    EXPECT_TRUE(absl::StrContains(table, absl::StrCat("`", id, "`")))
        << "docs/admission.md's rules table does not name `" << id << "`";
  }
}

}  // namespace
