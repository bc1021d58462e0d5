// `gpu-tenancy plan --from-cluster` and explain's re-cut advice through the built binary, on a
// device-plugin MIG fleet with pending MIG pods (test/testdata/recut): the least disruptive
// re-cut, never one in a pool the tenant's tier may not use, a YAML that `reconfigure` reads,
// exit codes, and the advice `explain` prints.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"
#include "topology/mig_parted.h"
#include "wire/mig_parted_codec.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string RecutDir() { return absl::StrCat(GT_SOURCE_DIR, "/test/testdata/recut"); }

std::string RecutFleet() {
  return absl::StrCat("--cluster-file '", RecutDir(), "/cluster.yaml' --policy '", RecutDir(),
                      "/policy.yaml'");
}

testing_support::CommandResult RunBinary(const std::string& args) {
  return testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " ", args, " 2>&1"));
}

std::vector<std::string> StringsAt(const rapidjson::Value& v) {
  std::vector<std::string> out;
  if (!v.IsArray()) return out;
  for (const rapidjson::Value& s : v.GetArray()) out.push_back(s.IsString() ? s.GetString() : "");
  return out;
}

TEST(PlanFromClusterTest, ProposesTheLeastDisruptiveReCutForPendingMigPods) {
  testing_support::CommandResult run =
      RunBinary(absl::StrCat("plan --from-cluster ", RecutFleet(), " -o json"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(run.out);
  ASSERT_TRUE(doc.ok()) << doc.status() << run.out;
  const rapidjson::Value& summary = (*doc)["summary"];
  EXPECT_EQ(summary["pendingMigPods"].GetInt(), 2);
  EXPECT_EQ(summary["servedByRecuts"].GetInt(), 2);
  EXPECT_EQ(summary["unserved"].GetInt(), 0);
  EXPECT_EQ(summary["drainedPods"].GetInt(), 1);
  EXPECT_TRUE(summary["exhaustive"].GetBool());
  // shared-idle drains nothing but sits in a pool acme's tier may not use; unsettled is being
  // reconfigured; busy drains two pods of two tenants. one-pod drains one pod of one tenant.
  const rapidjson::Value& recuts = (*doc)["recuts"];
  ASSERT_EQ(recuts.Size(), 1u) << run.out;
  const rapidjson::Value& r = recuts[0];
  EXPECT_STREQ(r["node"].GetString(), "one-pod");
  EXPECT_STREQ(r["from"].GetString(), "all-1g.10gb");
  EXPECT_STREQ(r["to"].GetString(), "gpu-tenancy-recut-one-pod");
  EXPECT_THAT(StringsAt(r["serves"]), ElementsAre("acme/wants-3g", "research/wants-2g"));
  EXPECT_EQ(r["drains"]["pods"].GetInt(), 1);
  EXPECT_THAT(StringsAt(r["drains"]["tenants"]), ElementsAre("bank"));
  // The bank pod's 1g.10gb comes back and the canary's stays free, beside the new instances.
  EXPECT_THAT(StringsAt(r["gpus"]), ElementsAre("GPU 0: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"));
  EXPECT_STREQ(r["command"].GetString(),
               "gpu-tenancy reconfigure one-pod --to gpu-tenancy-recut-one-pod "
               "--mig-parted-config recut.yaml");
}

TEST(PlanFromClusterTest, TheYamlIsAMigPartedConfigReconfigureReads) {
  testing_support::CommandResult run =
      RunBinary(absl::StrCat("plan --from-cluster ", RecutFleet(), " -o yaml"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  absl::StatusOr<topology::MigPartedFile> file = wire::ParseMigPartedConfig(run.out);
  ASSERT_TRUE(file.ok()) << file.status() << run.out;
  const topology::MigPartedLayout* layout = file->Find("gpu-tenancy-recut-one-pod");
  ASSERT_NE(layout, nullptr) << run.out;
  const topology::GpuModel* h100 = common::BuiltinCatalog().FindModel("H100-80GB");
  ASSERT_NE(h100, nullptr);
  absl::StatusOr<topology::NodeGeometry> geometry = topology::ResolveGeometry(*layout, *h100, 1);
  ASSERT_TRUE(geometry.ok()) << geometry.status();
  absl::StatusOr<topology::ExpectedOffer> offer =
      topology::PredictOffer(*geometry, topology::MigStrategy::kMixed, "NVIDIA-H100-80GB-HBM3");
  ASSERT_TRUE(offer.ok()) << offer.status();
  EXPECT_EQ(offer->allocatable["nvidia.com/mig-3g.40gb"], 1);
  EXPECT_EQ(offer->allocatable["nvidia.com/mig-2g.20gb"], 1);
  EXPECT_EQ(offer->allocatable["nvidia.com/mig-1g.10gb"], 2);
}

TEST(PlanFromClusterTest, TextNamesWhatEachReCutServesAndDrains) {
  testing_support::CommandResult run =
      RunBinary(absl::StrCat("plan --from-cluster ", RecutFleet()));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("pending MIG pods: 2 (0 fit now, 2 served by 1 re-cut, 0 "
                                 "unserved)"));
  EXPECT_THAT(run.out, HasSubstr("re-cut one-pod from all-1g.10gb to gpu-tenancy-recut-one-pod"));
  EXPECT_THAT(run.out, HasSubstr("drains  1 GPU pod of 1 tenant (bank)"));
  EXPECT_THAT(run.out, HasSubstr("gpu-tenancy-recut-one-pod:"));  // the mig-parted config
}

TEST(PlanFromClusterTest, PodsNoReCutServesExit1WithTheReason) {
  std::ifstream in(absl::StrCat(RecutDir(), "/cluster.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  // A whole-GPU instance: every node acme may use keeps a held or canary 1g.10gb.
  text << "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: wants-7g\n    namespace: acme\n"
          "  spec:\n    containers:\n    - name: main\n      image: registry.example/app:1\n"
          "      resources:\n        limits:\n          nvidia.com/mig-7g.80gb: '1'\n"
          "  status:\n    phase: Pending\n";
  const std::string path = absl::StrCat(::testing::TempDir(), "/recut-unserved.yaml");
  std::ofstream(path) << text.str();
  testing_support::CommandResult run = RunBinary(absl::StrCat(
      "plan --from-cluster --cluster-file '", path, "' --policy '", RecutDir(), "/policy.yaml'"));
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_THAT(run.out, HasSubstr("acme/wants-7g: no node it may use can hold it beside the "
                                 "instances that node's pods hold"));
  EXPECT_THAT(run.out, HasSubstr("re-cut one-pod"));  // the others are still served
}

TEST(PlanFromClusterTest, TheDemoClusterNeedsNoReCut) {
  testing_support::CommandResult run = RunBinary("plan --from-cluster --demo");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("acme/waiting on mig-a"));
  EXPECT_THAT(run.out, Not(HasSubstr("re-cut mig")));
}

// Without a cluster file the nodes and bound pods come from the live state serve builds, and the
// pending pods from one list with spec.nodeName unset.
TEST(PlanFromClusterTest, ListsALiveCluster) {
  absl::StatusOr<std::unique_ptr<testing_support::FakeApiServer>> api =
      testing_support::FakeApiServer::Start({});
  ASSERT_TRUE(api.ok()) << api.status();
  std::ifstream in(absl::StrCat(RecutDir(), "/cluster.yaml"));
  std::stringstream yaml;
  yaml << in.rdbuf();
  absl::StatusOr<rapidjson::Document> list = common::YamlToJson(yaml.str());
  ASSERT_TRUE(list.ok()) << list.status();
  rapidjson::StringBuffer json;
  rapidjson::Writer<rapidjson::StringBuffer> writer(json);
  list->Accept(writer);
  ASSERT_TRUE((*api)->Load(json.GetString()).ok());
  testing_support::TempDir dir;
  const std::string kubeconfig = dir.File("kubeconfig");
  std::ofstream(kubeconfig) << (*api)->Kubeconfig("    token: test-token");
  testing_support::CommandResult run = RunBinary(absl::StrCat(
      "plan --from-cluster -o json --kubeconfig ", testing_support::ShellQuote(kubeconfig),
      " --policy '", RecutDir(), "/policy.yaml'"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const size_t start = run.out.find('{');  // after any log lines
  ASSERT_NE(start, std::string::npos) << run.out;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(run.out.substr(start));
  ASSERT_TRUE(doc.ok()) << doc.status() << run.out;
  ASSERT_EQ((*doc)["recuts"].Size(), 1u) << run.out;
  EXPECT_STREQ((*doc)["recuts"][0]["node"].GetString(), "one-pod");
  EXPECT_THAT(StringsAt((*doc)["recuts"][0]["serves"]),
              ElementsAre("acme/wants-3g", "research/wants-2g"));
}

TEST(PlanFromClusterTest, UsageMistakesExit2) {
  testing_support::CommandResult both = RunBinary(absl::StrCat(
      "plan --from-cluster --demo --input '", GT_SOURCE_DIR, "/cmd/demo/plan-example.yaml'"));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.out, HasSubstr("--input and --from-cluster are two different plans"));
  testing_support::CommandResult no_flag = RunBinary("plan --demo");
  EXPECT_EQ(no_flag.exit_code, 2);
  EXPECT_THAT(no_flag.out, HasSubstr("--demo needs --from-cluster"));
  testing_support::CommandResult missing =
      RunBinary("plan --from-cluster --cluster-file /nonexistent/cluster.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.out, HasSubstr("/nonexistent/cluster.yaml"));
  // A live cluster's flags beside a fixed cluster were ignored; now they are refused.
  testing_support::CommandResult both_sources =
      RunBinary("plan --from-cluster --demo --kubeconfig /nonexistent/kubeconfig");
  EXPECT_EQ(both_sources.exit_code, 2);
  EXPECT_THAT(both_sources.out,
              HasSubstr("error: --kubeconfig and --demo exclude each other (a live cluster or a "
                        "fixed one)"));
  testing_support::CommandResult context = RunBinary("plan --from-cluster --context prod");
  EXPECT_EQ(context.exit_code, 2);
  EXPECT_THAT(context.out, HasSubstr("error: --context needs --kubeconfig"));
}

TEST(ExplainRecutTest, ExplainNamesTheReCutAndItsCost) {
  testing_support::CommandResult run =
      RunBinary(absl::StrCat("explain ", RecutFleet(), " --pod acme/wants-3g"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("fits if one-pod is re-cut to gpu-tenancy-recut-one-pod "
                                 "[GPU 0: 1x 3g.40gb + 4x 1g.10gb] (drains 1 GPU pod of 1 "
                                 "tenant)"));
  testing_support::CommandResult json =
      RunBinary(absl::StrCat("explain ", RecutFleet(), " --pod acme/wants-3g -o json"));
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json.out);
  ASSERT_TRUE(doc.ok()) << json.out;
  ASSERT_TRUE((*doc)["recutAdvice"].IsString());
  EXPECT_THAT((*doc)["recutAdvice"].GetString(), HasSubstr("one-pod is re-cut"));
}

TEST(ExplainRecutTest, NoAdviceWhereNoReCutTheTierMayUseHelps) {
  // shared-idle could hold a 7g.80gb, but acme's tier may not use its pool.
  const std::string pod = absl::StrCat(::testing::TempDir(), "/wants-7g.yaml");
  std::ofstream(pod) << "apiVersion: v1\nkind: Pod\nmetadata: {name: wants-7g, namespace: acme}\n"
                        "spec:\n  containers:\n  - name: main\n    image: x\n    resources:\n"
                        "      limits: {nvidia.com/mig-7g.80gb: 1}\n";
  testing_support::CommandResult run =
      RunBinary(absl::StrCat("explain ", RecutFleet(), " --pod '", pod, "'"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("0 of 4 nodes can take the pod"));
  EXPECT_THAT(run.out, Not(HasSubstr("re-cut")));
  // A pod that fits somewhere needs no advice either.
  testing_support::CommandResult fits = RunBinary(
      absl::StrCat("explain --demo --pod '", GT_SOURCE_DIR, "/cmd/demo/pods/mig-inference.yaml'"));
  EXPECT_THAT(fits.out, Not(HasSubstr("re-cut")));
}

TEST(ExplainRecutTest, TheDemoPodThatNeedsAWholeGpuInstance) {
  testing_support::CommandResult run = RunBinary(
      absl::StrCat("explain --demo --pod '", GT_SOURCE_DIR, "/cmd/demo/pods/mig-full-gpu.yaml'"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("fits if mig-1g is re-cut to gpu-tenancy-recut-mig-1g "
                                 "[GPU 0: 1x 7g.80gb] (drains no GPU pods)"));
}

}  // namespace
