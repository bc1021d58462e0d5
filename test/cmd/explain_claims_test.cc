// `gpu-tenancy explain` on a cluster whose GPU several claims share (DRAConsumableCapacity),
// through the built binary: an allocated claim's multi-allocatable device lists every claim
// holding a share of it, with its tenant and the capacity it consumes, and a pending claim's
// rows count the devices whose shares leave room for it. The cluster file is shaped as a v1.36
// apiserver serves the objects: research and acme each hold a 10Gi share of node-c's gpu-0.
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

testing_support::CommandResult ExplainShared(const testing_support::TempDir& dir,
                                             const std::string& args) {
  return testing_support::RunShell(absl::StrCat(
      testing_support::ShellQuote(GT_BINARY), " explain --cluster-file '", GT_TESTDATA_DIR,
      "/dra/cluster-consumable-capacity.json' --policy '", dir.File("policy.yaml"), "' ", args));
}

void WriteSharedPolicy(const testing_support::TempDir& dir) {
  std::ofstream(dir.File("policy.yaml"))
      << "tiers:\n"
         "  - name: untrusted\n    modes: [exclusive, mig]\n"
         "  - name: trusted\n    modes: [exclusive, mig, timeslice]\n"
         "tenants:\n"
         "  - name: research\n    tier: trusted\n    namespaces: [research]\n"
         "  - name: acme\n    tier: untrusted\n    namespaces: [acme]\n"
         "unknownTenant: deny\n";
}

TEST(ExplainClaimsTest, ASharedDeviceNamesEveryClaimThatHoldsIt) {
  testing_support::TempDir dir;
  WriteSharedPolicy(dir);
  testing_support::CommandResult run = ExplainShared(dir, "--pod acme/infer");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(
      run.out,
      "claim   gpu = shared-b: allocated on node-c\n"
      "          gpu.nvidia.com/node-c/gpu-0 (gpu, GPU-7e3f9a12-5b6c-4d8e-9f01-a2b3c4d5e6f7, "
      "shared: memory 20Gi of 81559Mi consumed)\n"
      "            share of acme/shared-b (tenant acme, this claim): memory 10Gi\n"
      "            share of research/shared-a (tenant research): memory 10Gi\n"))
      << run.out;

  testing_support::CommandResult json = ExplainShared(dir, "--pod research/trainer -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("claims")) << json.out;
  const rapidjson::Value& device = doc["claims"][0]["devices"][0];
  ASSERT_TRUE(device.HasMember("allowMultipleAllocations") && device.HasMember("shares"))
      << json.out;
  EXPECT_TRUE(device["allowMultipleAllocations"].GetBool());
  const rapidjson::Value& shares = device["shares"];
  ASSERT_TRUE(shares.IsArray() && shares.Size() == 2) << json.out;
  EXPECT_EQ(std::string(shares[0]["claim"].GetString()), "shared-b");
  EXPECT_EQ(std::string(shares[0]["tenant"].GetString()), "acme");
  EXPECT_EQ(std::string(shares[0]["shareID"].GetString()), "4f5e6d7c-8b9a-4c1d-9e2f-3a4b5c6d7e8f");
  EXPECT_EQ(std::string(shares[0]["consumedCapacity"]["memory"].GetString()), "10Gi");
  EXPECT_FALSE(shares[0]["thisClaim"].GetBool());
  EXPECT_EQ(std::string(shares[1]["namespace"].GetString()), "research");
  EXPECT_TRUE(shares[1]["thisClaim"].GetBool());
}

// acme's pending claim asks 30Gi: gpu-0's shares leave 59.6Gi of it, and gpu-1 is free. It was
// made without the selector the webhook gives acme's tier where devices may be shared, and
// explain says so; acme's other pending claim carries it, and only gpu-1 passes it.
TEST(ExplainClaimsTest, APendingClaimSeesWhatTheSharesLeave) {
  testing_support::TempDir dir;
  WriteSharedPolicy(dir);
  testing_support::CommandResult run = ExplainShared(dir, "--pod acme/waiting");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::StrContains(
      run.out,
      "claim   gpu = more-memory: pending: kube-scheduler's DRA allocator has not placed it\n"
      "          node-c  yes      gpu (gpu.nvidia.com): 1 wanted, 2 free match (1 shared with "
      "other claims); not in the claim, so not enforced: device-sharing\n"))
      << run.out;
  testing_support::CommandResult apart = ExplainShared(dir, "--pod acme/apart");
  ASSERT_EQ(apart.exit_code, 0) << apart.out;
  EXPECT_TRUE(absl::StrContains(apart.out,
                                "claim   gpu = apart: pending: kube-scheduler's DRA allocator has "
                                "not placed it\n"
                                "          node-c  yes      gpu (gpu.nvidia.com): 1 wanted, 1 free "
                                "match; 1 excluded by device-sharing\n"))
      << apart.out;
  testing_support::CommandResult json = ExplainShared(dir, "--pod acme/waiting -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("claims")) << json.out;
  const rapidjson::Value& request = doc["claims"][0]["nodes"][0]["requests"][0];
  ASSERT_TRUE(request.HasMember("sharedMatching") && request.HasMember("fullMatching")) << json.out;
  EXPECT_EQ(request["freeMatching"].GetInt(), 2);
  EXPECT_EQ(request["sharedMatching"].GetInt(), 1);
  EXPECT_EQ(request["fullMatching"].GetInt(), 0);
}

// The mig-profiles selector as the webhook writes it for migProfiles [1g.10gb], and the
// gpu-memory one for gpuMemoryPerPod: 20Gi.
constexpr char kOnlySmallMig[] =
    "(\"type\" in device.attributes[\"gpu.nvidia.com\"] && "
    "device.attributes[\"gpu.nvidia.com\"].type != \"mig\") || (\"profile\" in "
    "device.attributes[\"gpu.nvidia.com\"] && device.attributes[\"gpu.nvidia.com\"].profile in "
    "[\"1g.10gb\"])";
constexpr char kUpTo20Gi[] =
    "\"memory\" in device.capacity[\"gpu.nvidia.com\"] && "
    "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"20480Mi\")) <= 0";

testing_support::CommandResult ExplainWaiting(const testing_support::TempDir& dir,
                                              const std::string& cluster,
                                              const std::string& memory_per_pod,
                                              const std::string& args = "") {
  std::ofstream(dir.File("limits.yaml"))
      << "tiers:\n  - name: trusted\n    modes: [mig, exclusive]\n"
         "tenants:\n  - name: team-a\n    tier: trusted\n    namespaces: [team-a]\n"
         "    limits:\n      migProfiles: [1g.10gb]\n      gpuMemoryPerPod: "
      << memory_per_pod << "\nunknownTenant: deny\n";
  return testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " explain --cluster-file '", cluster,
                   "' --policy '", dir.File("limits.yaml"), "' --pod team-a/waiting ", args));
}

// team-a's pending claim carries the mig-profiles selector. Under a 40Gi cap every MIG device
// published (9984Mi and 40448Mi) is within it, so the webhook writes no gpu-memory selector:
// explain says the devices imply it. Under 20Gi the claim goes without a limit it needs. A
// claim made under 20Gi carries both limits in one selector, and explain reads it so.
TEST(ExplainClaimsTest, JoinedAndImpliedLimitsAreReadAsTheWebhookWritesThem) {
  testing_support::TempDir dir;
  const std::string pending = absl::StrCat(GT_TESTDATA_DIR, "/dra/cluster-pending-claims.json");
  const std::string node_a =
      "          node-a  no       mig (mig.nvidia.com): 1 wanted, 0 free match; 1 held by "
      "claims; 1 excluded by mig-profiles";
  testing_support::CommandResult implied = ExplainWaiting(dir, pending, "40Gi");
  ASSERT_EQ(implied.exit_code, 0) << implied.out;
  EXPECT_TRUE(absl::StrContains(
      implied.out, absl::StrCat(node_a, "; implied by the devices published: gpu-memory\n")))
      << implied.out;
  testing_support::CommandResult json = ExplainWaiting(dir, pending, "40Gi", "-o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("claims")) << json.out;
  const rapidjson::Value& request = doc["claims"][0]["nodes"][0]["requests"][0];
  ASSERT_TRUE(request.HasMember("limitsImpliedByDevices") && request.HasMember("limitsNotInClaim"))
      << json.out;
  ASSERT_EQ(request["limitsImpliedByDevices"].Size(), 1u) << json.out;
  EXPECT_EQ(std::string(request["limitsImpliedByDevices"][0].GetString()), "gpu-memory");
  EXPECT_EQ(request["limitsNotInClaim"].Size(), 0u) << json.out;
  testing_support::CommandResult missing = ExplainWaiting(dir, pending, "20Gi");
  ASSERT_EQ(missing.exit_code, 0) << missing.out;
  EXPECT_TRUE(absl::StrContains(
      missing.out, absl::StrCat(node_a, "; not in the claim, so not enforced: gpu-memory\n")))
      << missing.out;

  std::ifstream in(pending);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rapidjson::Document cluster;
  cluster.Parse(text.c_str());
  ASSERT_TRUE(cluster.IsObject() && cluster.HasMember("items"));
  const std::string joined = absl::StrCat("(", kOnlySmallMig, ") && ", kUpTo20Gi);
  int rewritten = 0;
  for (rapidjson::Value& item : cluster["items"].GetArray()) {
    if (std::string(item["metadata"]["name"].GetString()) != "tenant-a-training") continue;
    item["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
        .SetString(joined.c_str(), cluster.GetAllocator());
    ++rewritten;
  }
  ASSERT_EQ(rewritten, 1);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  cluster.Accept(writer);
  std::ofstream(dir.File("joined.json")) << buffer.GetString();
  testing_support::CommandResult carried = ExplainWaiting(dir, dir.File("joined.json"), "20Gi");
  ASSERT_EQ(carried.exit_code, 0) << carried.out;
  EXPECT_TRUE(absl::StrContains(carried.out, absl::StrCat(node_a, "\n"))) << carried.out;
}

}  // namespace
