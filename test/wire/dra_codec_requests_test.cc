// What the DRA codec keeps for selector evaluation: every attribute and capacity of a device
// under its qualified name, each claim request with its class, selectors, mode and count, and
// ResourceClaimTemplates read as the claim they stamp out.
#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

namespace wire {

using common::FindMember;
using common::JsonValue;
namespace dra_requests_test {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using topology::DraAttribute;
using topology::DraClaim;
using topology::DraRequest;
using topology::Quantity;

const JsonValue& ReviewObject(const rapidjson::Document& review) {
  static const JsonValue kNull;
  const JsonValue* request = FindMember(review, "request");
  const JsonValue* object = request ? FindMember(*request, "object") : nullptr;
  EXPECT_NE(object, nullptr);
  return object ? *object : kNull;
}

TEST(DraCodecRequestsTest, AttributesAndCapacityKeepTheirQualifiedNames) {
  constexpr char kJson[] = R"({"spec":{"driver":"gpu.nvidia.com","nodeName":"n",
    "pool":{"name":"n"},"devices":[{"name":"gpu-0-mig-19-4-1","basic":{
      "attributes":{"gpu.nvidia.com/type":{"string":"mig"},"profile":{"string":"1g.12gb"},
        "index":{"int":3},"coherent":{"bool":true},"cudaComputeCapability":{"version":"9.0.0"},
        "resource.kubernetes.io/pciBusID":{"string":"0000:3b:00.0"}},
      "capacity":{"gpu.nvidia.com/memory":{"value":"11Gi"},"multiprocessors":{"value":"16"}}}}]}})";
  absl::StatusOr<topology::DraSlice> slice = ParseResourceSlice(JsonOrFail(kJson));
  ASSERT_TRUE(slice.ok()) << slice.status();
  ASSERT_EQ(slice->devices.size(), 1u);
  const topology::DraDevice& d = slice->devices[0];
  topology::DraAttributes want_attributes = {
      {"gpu.nvidia.com/type", DraAttribute::String("mig")},
      {"gpu.nvidia.com/profile", DraAttribute::String("1g.12gb")},
      {"gpu.nvidia.com/index", {DraAttribute::Kind::kInt, "", 3, false}},
      {"gpu.nvidia.com/coherent", {DraAttribute::Kind::kBool, "", 0, true}},
      {"gpu.nvidia.com/cudaComputeCapability", {DraAttribute::Kind::kVersion, "9.0.0"}},
      {"resource.kubernetes.io/pciBusID", DraAttribute::String("0000:3b:00.0")},
  };
  EXPECT_EQ(d.attributes, want_attributes);
  EXPECT_EQ(d.capacity, (topology::DraCapacity{
                            {"gpu.nvidia.com/memory", Quantity::FromUnits(int64_t{11} << 30)},
                            {"gpu.nvidia.com/multiprocessors", Quantity::FromUnits(16)}}));
  EXPECT_EQ(d.type, "mig");  // the accounting fields are still filled
  EXPECT_EQ(d.memory_mib, 11264);
}

TEST(DraCodecRequestsTest, CapturedClaimRequest) {
  rapidjson::Document review = JsonOrFail(Testdata("dra/01-mutate-ResourceClaim.CREATE.json"));
  absl::StatusOr<DraClaim> claim = ParseResourceClaim(ReviewObject(review));
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_FALSE(claim->requests.empty());
  for (const DraRequest& r : claim->requests) {
    EXPECT_FALSE(r.device_class.empty()) << r.name;
    EXPECT_EQ(r.count, 1) << r.name;  // defaulted by the API server before admission
    EXPECT_FALSE(r.all) << r.name;
  }
}

TEST(DraCodecRequestsTest, TemplateIsReadAsTheClaimItStampsOut) {
  rapidjson::Document review =
      JsonOrFail(Testdata("dra/03-mutate-ResourceClaimTemplate.CREATE.json"));
  absl::StatusOr<DraClaim> t = ParseResourceClaimTemplate(ReviewObject(review));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->namespace_name, "team-a");
  EXPECT_EQ(t->name, "whole-gpu");
  EXPECT_FALSE(t->allocated);
  EXPECT_EQ(t->device_classes, (std::vector<std::string>{"gpu.nvidia.com", "mig.nvidia.com"}));
  std::vector<DraRequest> want = {
      {"gpu/big",
       "gpu.nvidia.com",
       {"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"},
       false,
       1,
       true},
      {"gpu/mig3g", "mig.nvidia.com", {}, false, 1, true},
  };
  EXPECT_EQ(t->requests, want);
}

TEST(DraCodecRequestsTest, FlatRequestsModeAndCount) {
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim",
    "metadata":{"name":"c","namespace":"ns"},"spec":{"devices":{"requests":[
      {"name":"all","deviceClassName":"gpu.nvidia.com","allocationMode":"All"},
      {"name":"two","exactly":{"deviceClassName":"mig.nvidia.com","count":2,
        "selectors":[{"cel":{"expression":"true"}},{"cel":{"expression":"false"}}]}}]}}})";
  absl::StatusOr<DraClaim> claim = ParseResourceClaim(JsonOrFail(kJson));
  ASSERT_TRUE(claim.ok()) << claim.status();
  std::vector<DraRequest> want = {
      {"all", "gpu.nvidia.com", {}, true, 1, false},
      {"two", "mig.nvidia.com", {"true", "false"}, false, 2, false},
  };
  EXPECT_EQ(claim->requests, want);
}

TEST(DraCodecRequestsTest, ErrorsNameThePath) {
  struct Row {
    const char* json;
    const char* want;
  };
  const std::vector<Row> rows = {
      {R"({"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"c",
          "selectors":[{}]}}]}}})",
       "resourceclaim.spec.devices.requests[0].exactly.selectors[0].cel: missing"},
      {R"({"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"c",
          "count":"2"}}]}}})",
       "resourceclaim.spec.devices.requests[0].exactly.count: expected integer"},
      {R"({"spec":{"devices":{"requests":[{"name":"r","firstAvailable":[{"name":1,
          "deviceClassName":"c"}]}]}}})",
       "resourceclaim.spec.devices.requests[0].firstAvailable[0].name: expected string, got "
       "number"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<DraClaim> claim = ParseResourceClaim(JsonOrFail(row.json));
    ASSERT_FALSE(claim.ok()) << row.json;
    EXPECT_EQ(claim.status().message(), row.want);
  }
  absl::StatusOr<DraClaim> t = ParseResourceClaimTemplate(JsonOrFail(R"({"spec":{}})"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "resourceclaimtemplate.spec.spec: missing");
}

}  // namespace dra_requests_test
}  // namespace wire
