// Consumable capacity (DRAConsumableCapacity) in the DRA codec: a device's
// allowMultipleAllocations and each capacity's requestPolicy, a request's capacity.requests and
// a result's shareID and consumedCapacity, in the v1, v1beta2 and v1beta1 shapes; bad values
// are InvalidArgument naming the JSON path.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

namespace wire {
namespace dra_capacity_codec_test {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using topology::DraCapacity;
using topology::DraCapacityPolicy;
using topology::DraClaim;
using topology::DraPublishedCapacity;
using topology::Quantity;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

Quantity Bytes(int64_t n) { return Quantity::FromUnits(n); }

// The slice a v1.36 apiserver serves for a driver that publishes one GPU as multi-allocatable
// (its memory with a requestPolicy) and one as a plain device.
TEST(DraCodecCapacityTest, MultiAllocatableDeviceWithARequestPolicy) {
  rapidjson::Document list = JsonOrFail(Testdata("dra/consumable-list-resourceslices.v1.json"));
  absl::StatusOr<DraObjects> objects = ParseDraList(list);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->slices.size(), 1u);
  const std::vector<topology::DraDevice>& devices = objects->slices[0].devices;
  ASSERT_EQ(devices.size(), 2u);

  const topology::DraDevice& shared = devices[0];
  EXPECT_EQ(shared.name, "gpu-0");
  EXPECT_TRUE(shared.allow_multiple_allocations);
  DraCapacityPolicy policy;
  policy.default_amount = Bytes(10 * kGi);
  policy.min = Bytes(kGi);
  policy.max = Bytes(79 * kGi);
  policy.step = Bytes(kGi);
  EXPECT_EQ(shared.published_capacity,
            (std::vector<DraPublishedCapacity>{{"memory", Bytes(81559 * kMi), policy}}));
  EXPECT_EQ(shared.capacity, (DraCapacity{{"gpu.nvidia.com/memory", Bytes(81559 * kMi)}}))
      << "selectors still see the capacity under its qualified name";
  EXPECT_EQ(shared.memory_mib, 81559);

  const topology::DraDevice& whole = devices[1];
  EXPECT_FALSE(whole.allow_multiple_allocations);
  EXPECT_EQ(whole.published_capacity,
            (std::vector<DraPublishedCapacity>{{"memory", Bytes(81559 * kMi), std::nullopt}}));
}

// Two claims of different namespaces, each holding a share of the same GPU: what each asked,
// the share's ID, and what the allocator recorded it consumes (9500Mi rounded up to the step).
TEST(DraCodecCapacityTest, ClaimsSharingADevice) {
  rapidjson::Document list = JsonOrFail(Testdata("dra/consumable-list-resourceclaims.v1.json"));
  absl::StatusOr<DraObjects> objects = ParseDraList(list);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->claims.size(), 2u);
  const DraClaim& research = objects->claims[0];
  const DraClaim& acme = objects->claims[1];
  EXPECT_EQ(research.namespace_name, "research");
  EXPECT_EQ(acme.namespace_name, "acme");

  ASSERT_EQ(research.requests.size(), 1u);
  EXPECT_EQ(research.requests[0].capacity_requests, (DraCapacity{{"memory", Bytes(10 * kGi)}}));
  ASSERT_EQ(acme.requests.size(), 1u);
  EXPECT_EQ(acme.requests[0].capacity_requests, (DraCapacity{{"memory", Bytes(9500 * kMi)}}));

  ASSERT_EQ(research.results.size(), 1u);
  EXPECT_EQ(research.results[0].device, "gpu-0");
  EXPECT_EQ(research.results[0].share_id, "1c9e4b7a-2d3f-4e5a-8b6c-7d8e9f0a1b2c");
  EXPECT_EQ(research.results[0].consumed_capacity, (DraCapacity{{"memory", Bytes(10 * kGi)}}));
  ASSERT_EQ(acme.results.size(), 1u);
  EXPECT_EQ(acme.results[0].device, "gpu-0");
  EXPECT_EQ(acme.results[0].share_id, "4f5e6d7c-8b9a-4c1d-9e2f-3a4b5c6d7e8f");
  EXPECT_EQ(acme.results[0].consumed_capacity, (DraCapacity{{"memory", Bytes(10 * kGi)}}));
}

// A result without a share ID holds its device whole, as before the feature.
TEST(DraCodecCapacityTest, AResultWithoutAShareHasNone) {
  rapidjson::Document list = JsonOrFail(Testdata("dra/list-resourceclaims.v1.json"));
  absl::StatusOr<DraObjects> objects = ParseDraList(list);
  ASSERT_TRUE(objects.ok()) << objects.status();
  for (const DraClaim& c : objects->claims) {
    for (const topology::DraAllocationResult& r : c.results) {
      EXPECT_EQ(r.share_id, "") << c.name;
      EXPECT_TRUE(r.consumed_capacity.empty()) << c.name;
    }
    for (const topology::DraRequest& r : c.requests) {
      EXPECT_TRUE(r.capacity_requests.empty()) << c.name;
    }
  }
}

// v1beta1 keeps a device's fields in `basic` and a request flat; v1beta2 is v1's shape.
// firstAvailable subrequests carry capacity in all three.
TEST(DraCodecCapacityTest, EveryVersionsShape) {
  constexpr char kBeta1Slice[] = R"({"apiVersion":"resource.k8s.io/v1beta1",
    "kind":"ResourceSlice","spec":{"driver":"gpu.nvidia.com","nodeName":"n","pool":{"name":"n"},
    "devices":[{"name":"gpu-0","basic":{"allowMultipleAllocations":true,
      "capacity":{"memory":{"value":"80Gi","requestPolicy":{"default":"8Gi",
        "validValues":["8Gi","16Gi","40Gi"]}}}}}]}})";
  absl::StatusOr<topology::DraSlice> slice = ParseResourceSlice(JsonOrFail(kBeta1Slice));
  ASSERT_TRUE(slice.ok()) << slice.status();
  ASSERT_EQ(slice->devices.size(), 1u);
  EXPECT_TRUE(slice->devices[0].allow_multiple_allocations);
  DraCapacityPolicy values;
  values.default_amount = Bytes(8 * kGi);
  values.valid_values = {Bytes(8 * kGi), Bytes(16 * kGi), Bytes(40 * kGi)};
  EXPECT_EQ(slice->devices[0].published_capacity,
            (std::vector<DraPublishedCapacity>{{"memory", Bytes(80 * kGi), values}}));

  struct Row {
    const char* name;
    const char* claim;
  };
  const std::vector<Row> rows = {
      {"v1beta1 flat request",
       R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim","spec":{"devices":{
         "requests":[{"name":"gpu","deviceClassName":"gpu.nvidia.com",
           "capacity":{"requests":{"memory":"10Gi"}}}]}}})"},
      {"v1beta2 exactly",
       R"({"apiVersion":"resource.k8s.io/v1beta2","kind":"ResourceClaim","spec":{"devices":{
         "requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com",
           "capacity":{"requests":{"memory":"10Gi"}}}}]}}})"},
      {"v1 firstAvailable",
       R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","spec":{"devices":{
         "requests":[{"name":"gpu","firstAvailable":[{"name":"share",
           "deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":"10Gi"}}}]}]}}})"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<DraClaim> claim = ParseResourceClaim(JsonOrFail(row.claim));
    ASSERT_TRUE(claim.ok()) << claim.status();
    ASSERT_EQ(claim->requests.size(), 1u);
    EXPECT_EQ(claim->requests[0].capacity_requests, (DraCapacity{{"memory", Bytes(10 * kGi)}}));
  }
}

TEST(DraCodecCapacityTest, BadValuesNameTheirPath) {
  auto slice = [](const std::string& capacity) {
    return R"({"kind":"ResourceSlice","spec":{"driver":"d","nodeName":"n","pool":{"name":"n"},
      "devices":[{"name":"g","allowMultipleAllocations":true,"capacity":{"memory":)" +
           capacity + "}}]}}";
  };
  auto request = [](const std::string& capacity) {
    return R"({"kind":"ResourceClaim","spec":{"devices":{"requests":[{"name":"r",
      "exactly":{"deviceClassName":"c","capacity":)" +
           capacity + "}}]}}}";
  };
  auto result = [](const std::string& fields) {
    return R"({"kind":"ResourceClaim","spec":{},"status":{"allocation":{"devices":{"results":[
      {"request":"r","driver":"d","pool":"p","device":"g",)" +
           fields + "}]}}}}";
  };
  const std::string rows_json[][3] = {
      {"allowMultipleAllocations not a bool",
       R"({"kind":"ResourceSlice","spec":{"driver":"d","pool":{"name":"n"},
         "devices":[{"name":"g","allowMultipleAllocations":"yes"}]}})",
       "resourceslice.spec.devices[0].allowMultipleAllocations: expected boolean"},
      {"requestPolicy not an object", slice(R"({"value":"80Gi","requestPolicy":"10Gi"})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy: expected object"},
      {"negative default", slice(R"({"value":"80Gi","requestPolicy":{"default":"-1Gi"}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.default: negative"},
      {"default not a quantity", slice(R"({"value":"80Gi","requestPolicy":{"default":"lots"}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.default"},
      {"validValues out of order",
       slice(R"({"value":"80Gi","requestPolicy":{"default":"8Gi","validValues":["16Gi","8Gi"]}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.validValues[1]: validValues "
       "must be in ascending order"},
      {"validValues and validRange",
       slice(R"({"value":"80Gi","requestPolicy":{"default":"8Gi","validValues":["8Gi"],
         "validRange":{"min":"1Gi"}}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.validRange: set beside "
       "validValues"},
      {"validRange without min",
       slice(R"({"value":"80Gi","requestPolicy":{"default":"8Gi","validRange":{"max":"9Gi"}}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.validRange.min: missing"},
      {"zero step",
       slice(R"({"value":"80Gi","requestPolicy":{"default":"8Gi","validRange":{"min":"1Gi",
         "step":"0"}}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.validRange.step: zero"},
      {"max below min",
       slice(R"({"value":"80Gi","requestPolicy":{"default":"8Gi","validRange":{"min":"8Gi",
         "max":"1Gi"}}})"),
       "resourceslice.spec.devices[0].capacity.memory.requestPolicy.validRange.max: below min"},
      {"capacity not an object", request(R"("10Gi")"),
       "resourceclaim.spec.devices.requests[0].exactly.capacity: expected object"},
      {"requests not an object", request(R"({"requests":["10Gi"]})"),
       "resourceclaim.spec.devices.requests[0].exactly.capacity.requests: expected object"},
      {"negative request", request(R"({"requests":{"memory":"-10Gi"}})"),
       "resourceclaim.spec.devices.requests[0].exactly.capacity.requests.memory: negative"},
      {"request not a quantity", request(R"({"requests":{"memory":"ten gigs"}})"),
       "resourceclaim.spec.devices.requests[0].exactly.capacity.requests.memory"},
      {"null request", request(R"({"requests":{"memory":null}})"),
       "resourceclaim.spec.devices.requests[0].exactly.capacity.requests.memory: expected "
       "quantity"},
      {"shareID not a string", result(R"("shareID":7)"),
       "resourceclaim.status.allocation.devices.results[0].shareID"},
      {"consumedCapacity not an object", result(R"("consumedCapacity":"10Gi")"),
       "resourceclaim.status.allocation.devices.results[0].consumedCapacity: expected object"},
      {"negative consumedCapacity", result(R"("consumedCapacity":{"memory":"-1"})"),
       "resourceclaim.status.allocation.devices.results[0].consumedCapacity.memory: negative"},
  };
  for (const auto& [name, json, error] : rows_json) {
    SCOPED_TRACE(name);
    rapidjson::Document doc = JsonOrFail(json);
    absl::Status status = absl::string_view(json).find("ResourceSlice") != absl::string_view::npos
                              ? ParseResourceSlice(doc).status()
                              : ParseResourceClaim(doc).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), error)) << status;
  }
}

}  // namespace dra_capacity_codec_test
}  // namespace wire
