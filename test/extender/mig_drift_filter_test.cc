// The filter refuses a MIG node whose geometry drifted from its nvidia.com/mig.config while
// mig-manager still reports success, over real HTTPS: `gpu-tenancy serve` on a cluster file whose
// nodes carry NVIDIA's default config names (no mig-parted config given), asked with the names-only
// request kube-scheduler sent in the captured call (filter-nodecache-true), its candidates renamed.
// With the site's mig-parted config (--mig-parted-config) a name means what that file says.
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::SharedServeSuite;

std::map<std::string, std::string> Reasons(const rapidjson::Value* object) {
  std::map<std::string, std::string> out;
  if (object == nullptr || !object->IsObject()) return out;
  for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
    out[it->name.GetString()] = it->value.GetString();
  }
  return out;
}

// NodeNames of a filter reply ({"<missing>"} when it has none).
std::vector<std::string> Kept(const rapidjson::Value& reply) {
  const rapidjson::Value* names = common::FindMember(reply, "NodeNames");
  if (names == nullptr || !names->IsArray()) return {"<missing>"};
  std::vector<std::string> kept;
  for (const auto& n : names->GetArray()) kept.push_back(n.GetString());
  return kept;
}

class MigDriftFilterTest : public SharedServeSuite<MigDriftFilterTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/extender/mig-drift-cluster.yaml"};
  }
};

TEST_F(MigDriftFilterTest, ADriftedNodeIsUnresolvableWithTheConfigAndTheDifference) {
  testing_support::ServeProcess::Response r =
      server_->Post("/extender/filter", ReadTestData("extender/filter-mig-drift.request.json"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document reply = ParseOrDie(r.body);
  EXPECT_EQ(common::StringOr(reply, "Error"), "");
  // The unhealthy instances are not drift: capacity still shows the configured seven.
  EXPECT_EQ(Kept(reply), (std::vector<std::string>{"mig-settled", "mig-unhealthy"})) << r.body;
  EXPECT_EQ(Reasons(common::FindMember(reply, "FailedAndUnresolvableNodes")),
            (std::map<std::string, std::string>{
                {"cpu-node", "no NVIDIA GPU on node"},
                {"mig-drifted",
                 "MIG geometry differs from nvidia.com/mig.config=all-1g.10gb (state success): "
                 "mig-manager is about to re-cut it; nvidia.com/mig-1g.10gb: expected 14, node "
                 "shows 11; nvidia.com/mig-3g.40gb: expected 0, node shows 1"},
            }));
  EXPECT_TRUE(Reasons(common::FindMember(reply, "FailedNodes")).empty());

  // The rejection is counted under its own rule.
  testing_support::ServeProcess::Response metrics = server_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find(
                "gpu_tenancy_filter_rejections_total{verdict=\"unresolvable\",rule=\"mig-drift\"}"),
            std::string::npos)
      << metrics.body;
}

// The site's all-1g.10gb leaves a 3g.40gb on a second GPU: mig-drifted shows just that.
class MigDriftSiteConfigTest : public SharedServeSuite<MigDriftSiteConfigTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/extender/mig-drift-cluster.yaml",
            "--mig-parted-config", std::string(GT_TESTDATA_DIR) + "/extender/mig-parted-site.yaml"};
  }
};

TEST_F(MigDriftSiteConfigTest, ANodeShowingWhatTheSitesConfigSaysIsKept) {
  testing_support::ServeProcess::Response r =
      server_->Post("/extender/filter", ReadTestData("extender/filter-mig-drift.request.json"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document reply = ParseOrDie(r.body);
  EXPECT_EQ(Kept(reply), (std::vector<std::string>{"mig-drifted", "mig-settled", "mig-unhealthy"}))
      << r.body;
  EXPECT_EQ(Reasons(common::FindMember(reply, "FailedAndUnresolvableNodes")),
            (std::map<std::string, std::string>{{"cpu-node", "no NVIDIA GPU on node"}}));
}

}  // namespace
