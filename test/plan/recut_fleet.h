// The recut fleet of test/testdata/recut (cluster.yaml, policy.yaml) as a snapshot, for the
// re-cut input and document tests: four H100 nodes cut all-1g.10gb (busy: two pods of two
// tenants, one-pod: one bank pod, shared-idle: a mig-shared pool, unsettled: being
// reconfigured) and two pending pods (acme/wants-3g, research/wants-2g).
#ifndef GPU_TENANCY_TEST_PLAN_RECUT_FLEET_H_
#define GPU_TENANCY_TEST_PLAN_RECUT_FLEET_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

namespace plan::testing {

inline std::string ReadRecutFile(const std::string& name) {
  std::ifstream in(absl::StrCat(GT_TESTDATA_DIR, "/recut/", name));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct RecutFleet {
  topology::ClusterData data;
  topology::Policy policy;
  topology::ClusterSnapshot snapshot;

  RecutFleet() {
    absl::StatusOr<topology::ClusterData> cluster =
        wire::ParseClusterText(ReadRecutFile("cluster.yaml"));
    absl::StatusOr<topology::Policy> loaded = common::LoadPolicy(ReadRecutFile("policy.yaml"));
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (cluster.ok()) data = *std::move(cluster);
    if (loaded.ok()) policy = *std::move(loaded);
    snapshot = topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
  }
};

}  // namespace plan::testing

#endif  // GPU_TENANCY_TEST_PLAN_RECUT_FLEET_H_
