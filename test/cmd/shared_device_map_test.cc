// The live GPU map (GET /ui/api/map) of `gpu-tenancy serve` on a cluster whose GPU several
// claims share (DRAConsumableCapacity): the multi-allocatable device lists each claim holding a
// share of it, with its tenant, share ID and consumed capacity, and what the shares consume of
// its memory; the plain GPU beside it has no shares. The cluster file is shaped as a v1.36
// apiserver serves the objects: research and acme each hold a 10Gi share of node-c's gpu-0.
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ServeProcess;

TEST(SharedDeviceMapTest, TheMapNamesEveryShareOfADevice) {
  testing_support::TempDir dir;
  std::ofstream(dir.File("policy.yaml"))
      << "tiers:\n"
         "  - name: untrusted\n    modes: [exclusive, mig]\n"
         "  - name: trusted\n    modes: [exclusive, mig, timeslice]\n"
         "tenants:\n"
         "  - name: research\n    tier: trusted\n    namespaces: [research]\n"
         "  - name: acme\n    tier: untrusted\n    namespaces: [acme]\n"
         "unknownTenant: deny\n";
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start(
      {"--cluster-file", absl::StrCat(GT_TESTDATA_DIR, "/dra/cluster-consumable-capacity.json"),
       "--policy", dir.File("policy.yaml")});
  ASSERT_TRUE(serve.ok()) << serve.status();
  ServeProcess::Response map = (*serve)->Get("/ui/api/map");
  ASSERT_EQ(map.status, 200) << map.body;
  rapidjson::Document doc;
  doc.Parse(map.body.c_str());
  ASSERT_TRUE(doc.IsObject() && doc["nodes"].IsArray() && doc["nodes"].Size() == 1) << map.body;
  const rapidjson::Value& devices = doc["nodes"][0]["draDevices"];
  ASSERT_TRUE(devices.IsArray() && devices.Size() == 2) << map.body;

  for (const rapidjson::Value& d : devices.GetArray()) {
    for (const char* key : {"allowMultipleAllocations", "shares", "capacity"}) {
      ASSERT_TRUE(d.HasMember(key)) << key << " in " << map.body;
    }
  }
  const rapidjson::Value& shared = devices[0];
  EXPECT_EQ(std::string(shared["device"].GetString()), "gpu.nvidia.com/node-c/gpu-0");
  EXPECT_TRUE(shared["allowMultipleAllocations"].GetBool());
  EXPECT_EQ(std::string(shared["tenant"].GetString()), "") << "no claim holds it whole";
  const rapidjson::Value& shares = shared["shares"];
  ASSERT_TRUE(shares.IsArray() && shares.Size() == 2) << map.body;
  EXPECT_EQ(std::string(shares[0]["tenant"].GetString()), "acme");
  EXPECT_EQ(std::string(shares[0]["claim"].GetString()), "acme/shared-b");
  EXPECT_EQ(std::string(shares[0]["shareID"].GetString()), "4f5e6d7c-8b9a-4c1d-9e2f-3a4b5c6d7e8f");
  EXPECT_EQ(std::string(shares[0]["consumedCapacity"]["memory"].GetString()), "10Gi");
  EXPECT_EQ(std::string(shares[1]["tenant"].GetString()), "research");
  EXPECT_EQ(std::string(shares[1]["claim"].GetString()), "research/shared-a");
  const rapidjson::Value& capacity = shared["capacity"];
  ASSERT_TRUE(capacity.IsArray() && capacity.Size() == 1) << map.body;
  EXPECT_EQ(std::string(capacity[0]["name"].GetString()), "memory");
  EXPECT_EQ(std::string(capacity[0]["value"].GetString()), "81559Mi");
  EXPECT_EQ(std::string(capacity[0]["consumed"].GetString()), "20Gi");

  const rapidjson::Value& plain = devices[1];
  EXPECT_FALSE(plain["allowMultipleAllocations"].GetBool());
  EXPECT_TRUE(plain["shares"].Empty());
  EXPECT_TRUE(plain["capacity"].Empty());
  // Both tenants are on the map's tenant list, for its filter.
  std::string tenants;
  for (const rapidjson::Value& t : doc["tenants"].GetArray()) {
    absl::StrAppend(&tenants, t.GetString(), " ");
  }
  EXPECT_EQ(tenants, "acme research ");
}

}  // namespace
