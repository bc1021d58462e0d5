// DRA holdings through the binary: `serve --cluster-file` on a cluster file with the captured
// v1.36 ResourceSlice (one H100 in MIG mode, one whole H100) and an allocated ResourceClaim
// shows the claim, its MIG device's UUID and the pod it is reserved for under the claim's
// tenant in /debug/allocations, and counts the device in the tenant's DRA gauge and quota.
#include <fstream>
#include <memory>
#include <string>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace serve_dra_test {
namespace {

using testing_support::ParseOrDie;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

constexpr char kDraPolicy[] = R"(tiers:
  - name: trusted
    modes: [exclusive, mig, mig-shared, mps, timeslice]
tenants:
  - name: team-a
    tier: trusted
    namespaces: [team-a]
    quota:
      migInstances: {1g.10gb: 2}
      migComputeSlices: 4
unknownTenant: deny
)";

TEST(ServeDraTest, AllocationsListEachTenantsClaimsWithTheirDeviceUuids) {
  TempDir dir;
  std::ofstream(dir.File("policy.yaml")) << kDraPolicy;
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--cluster-file", std::string(GT_TESTDATA_DIR) + "/dra/cluster-with-claims.json", "--policy",
       dir.File("policy.yaml")},
      dir.File("serve.log"));
  ASSERT_TRUE(serve.ok()) << serve.status();

  ServeProcess::Response r = (*serve)->Get("/debug/allocations");
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document doc = ParseOrDie(r.body);
  const common::JsonValue* team = nullptr;
  for (const auto& t : doc["tenants"].GetArray()) {
    if (std::string(t["tenant"].GetString()) == "team-a") team = &t;
  }
  ASSERT_NE(team, nullptr) << r.body;
  ASSERT_TRUE(team->HasMember("claims")) << r.body;
  const auto& claims = (*team)["claims"];
  ASSERT_EQ(claims.Size(), 1u) << r.body;
  const auto& claim = claims[0];
  EXPECT_EQ(std::string(claim["namespace"].GetString()), "team-a");
  EXPECT_EQ(std::string(claim["name"].GetString()), "tenant-a-inference");
  EXPECT_EQ(std::string(claim["node"].GetString()), "node-a");
  ASSERT_EQ(claim["devices"].Size(), 1u) << r.body;
  const auto& device = claim["devices"][0];
  EXPECT_EQ(std::string(device["driver"].GetString()), "gpu.nvidia.com");
  EXPECT_EQ(std::string(device["pool"].GetString()), "node-a");
  EXPECT_EQ(std::string(device["device"].GetString()), "gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(std::string(device["type"].GetString()), "mig");
  EXPECT_EQ(std::string(device["uuid"].GetString()), "MIG-4d806f22-346a-5a1d-ac01-86b505cdf485");
  EXPECT_EQ(std::string(device["parentUUID"].GetString()),
            "GPU-a4f34abc-7715-3560-dcea-7238b9611a45");
  EXPECT_EQ(std::string(device["migProfile"].GetString()), "1g.10gb");
  EXPECT_EQ(device["memoryMiB"].GetInt64(), 9984);
  EXPECT_EQ(claim["unpublishedDevices"].GetUint64(), 0u);
  ASSERT_EQ(claim["reservedFor"].Size(), 1u);
  EXPECT_EQ(std::string(claim["reservedFor"][0]["name"].GetString()), "inference");

  std::string metrics = (*serve)->Get("/metrics").body;
  EXPECT_EQ(testing_support::PromtoolProblems(metrics), "");
  EXPECT_EQ(SampleValue(metrics, R"(gpu_tenancy_tenant_dra_devices{tenant="team-a",tier="trusted",)"
                                 R"(type="mig",profile="1g.10gb"})"),
            1)
      << metrics;
  // The claim's MIG device counts toward the tenant's quota like a device-plugin slice.
  EXPECT_EQ(SampleValue(metrics, R"(gpu_tenancy_tenant_quota_used{tenant="team-a",)"
                                 R"(resource="nvidia.com/mig-1g.10gb"})"),
            1)
      << metrics;
  EXPECT_EQ(SampleValue(metrics, R"(gpu_tenancy_tenant_quota_used{tenant="team-a",)"
                                 R"(resource="mig-compute-slices"})"),
            1)
      << metrics;
}

}  // namespace
}  // namespace serve_dra_test
