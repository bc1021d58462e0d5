// `gpu-tenancy explain` for a tenant in fair sharing, through the built binary: where the tenant
// stands (guaranteed, held, borrowed, lent, fair share) and, per node that fits, whether the pod
// would borrow (test/testdata/fair_share).
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/shell.h"

namespace {

testing_support::CommandResult ExplainShare(const std::string& cluster, const std::string& pod,
                                            const std::string& format) {
  const std::string dir = std::string(GT_TESTDATA_DIR) + "/fair_share/";
  return testing_support::RunShell(absl::StrCat(
      testing_support::ShellQuote(GT_BINARY), " explain --cluster-file ",
      testing_support::ShellQuote(dir + cluster), " --policy ",
      testing_support::ShellQuote(dir + "policy.yaml"), " --pod ", pod, " -o ", format));
}

// Two GPUs idle on node-b and nobody waiting within a guarantee: batch borrows them.
TEST(ExplainFairShareTest, SaysWhereThePodWouldBorrowAndTheTenantsFairShare) {
  testing_support::CommandResult text = ExplainShare("cluster-idle.json", "batch/sweep-2", "text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("share   nvidia.com/gpu: guaranteed 0, limit 8, holds 2 (borrows 2), "
                          "waits for 2, fair share 4\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("node-b  fits              10  borrowed\n"), std::string::npos)
      << text.out;

  testing_support::CommandResult json = ExplainShare("cluster-idle.json", "batch/sweep-2", "json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json.out;
  const auto& item = doc["fairShare"]["items"][0];
  EXPECT_EQ(item["borrowed"].GetInt64(), 2);
  EXPECT_DOUBLE_EQ(item["fairShare"].GetDouble(), 4);
  bool borrowed = false;
  for (const auto& node : doc["nodes"].GetArray()) {
    if (std::string(node["name"].GetString()) == "node-b") {
      borrowed = node.HasMember("share") && std::string(node["share"].GetString()) == "borrowed";
    }
  }
  EXPECT_TRUE(borrowed) << json.out;
}

// speech waits within its guarantee on a full cluster: explain names the borrowed pod reclaim
// would evict, and what speech lends meanwhile.
TEST(ExplainFairShareTest, NamesTheBorrowedPodReclaimWouldEvict) {
  testing_support::CommandResult text = ExplainShare("cluster.json", "speech/asr", "text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("share   nvidia.com/gpu: guaranteed 4, limit 8, holds 0, waits for 2, "
                          "lends 4, fair share 2\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  node-b  batch/sweep-1 (priority 0)\n"), std::string::npos) << text.out;
}

// vision alone borrows, with train-3 and train-4 on node-b: reclaim takes its newest.
TEST(ExplainFairShareTest, ReclaimTakesTheLendersNewestBorrowedPodFirst) {
  testing_support::CommandResult text =
      ExplainShare("cluster-one-lender.json", "speech/asr", "text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  node-b  vision/train-4 (priority 0)\n"), std::string::npos)
      << text.out;
}

// Guarantees past what the cluster dump offers (speech guaranteed 6, vision 4, of 8 GPUs) load,
// without fairSharing.capacity, but explain warns.
TEST(ExplainFairShareTest, WarnsWhenGuaranteesOvercommitTheCluster) {
  const std::string dir = std::string(GT_TESTDATA_DIR) + "/fair_share/";
  std::ifstream in(dir + "policy.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string policy = text.str();
  const std::string speech = "namespaces: [speech]\n    group: research\n    guaranteed: {gpus: 4}";
  ASSERT_NE(policy.find(speech), std::string::npos);
  policy.replace(policy.find(speech), speech.size(),
                 "namespaces: [speech]\n    group: research\n    guaranteed: {gpus: 6}");
  const std::string path = ::testing::TempDir() + "/fair-share-overcommitted.yaml";
  std::ofstream(path) << policy;
  testing_support::CommandResult r = testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " explain --cluster-file ",
                   testing_support::ShellQuote(dir + "cluster.json"), " --policy ",
                   testing_support::ShellQuote(path), " --pod speech/asr 2>&1"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: fair sharing: the top level's guarantees of nvidia.com/gpu add "
                       "up to 10 (research 10), above the cluster's capacity of 8\n"),
            std::string::npos)
      << r.out;
  // The scenario's own policy fits: no warning.
  EXPECT_EQ(ExplainShare("cluster.json", "speech/asr", "text").err, "");
}

}  // namespace
