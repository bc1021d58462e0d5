// resource.k8s.io JSON to the DRA model. The payloads in test/testdata/dra (recorded from
// kube-apiserver and kube-scheduler v1.36.2 and kept unchanged, docs/wire/README.md) must
// parse as they are; the v1beta1 shapes (the `basic` device wrapper, flat requests) are written
// here after docs/wire/dra.md.
#include "wire/dra_codec.h"

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/dra/model.h"
#include "wire/k8s_codec.h"

namespace wire {

using common::FindMember;
using common::JsonValue;
namespace {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using topology::DraAllocatedDevices;
using topology::DraAllocationResult;
using topology::DraClaim;
using topology::DraDevice;
using topology::DraDeviceClass;
using topology::DraReservation;
using topology::DraSlice;

constexpr char kDraH100[] = "NVIDIA H100 80GB HBM3";
constexpr char kDraGpu0Uuid[] = "GPU-a4f34abc-7715-3560-dcea-7238b9611a45";

DraObjects DraListOrFail(absl::string_view relative) {
  absl::StatusOr<DraObjects> objects = ParseDraList(JsonOrFail(Testdata(relative)));
  EXPECT_TRUE(objects.ok()) << relative << ": " << objects.status();
  return objects.ok() ? *std::move(objects) : DraObjects{};
}

// The `object` of a captured AdmissionReview.
const JsonValue& DraReviewObject(const rapidjson::Document& review) {
  static const JsonValue kNull;
  const JsonValue* request = FindMember(review, "request");
  const JsonValue* object = request ? FindMember(*request, "object") : nullptr;
  EXPECT_NE(object, nullptr);
  return object ? *object : kNull;
}

// --- captured payloads ---------------------------------------------------------------------------

TEST(DraCodecTest, SliceFixture) {
  DraObjects objects = DraListOrFail("dra/list-resourceslices.v1.json");
  ASSERT_EQ(objects.slices.size(), 1u);
  EXPECT_TRUE(objects.claims.empty());
  EXPECT_TRUE(objects.classes.empty());
  const DraSlice& slice = objects.slices[0];
  EXPECT_EQ(slice.name, "node-a-gpu.nvidia.com-k2x9q");
  EXPECT_EQ(slice.driver, "gpu.nvidia.com");
  EXPECT_EQ(slice.pool, "node-a");
  EXPECT_EQ(slice.node, "node-a");
  EXPECT_EQ(slice.generation, 1);
  EXPECT_EQ(slice.resource_slice_count, 1);

  struct Row {
    std::string name, type, uuid, parent_uuid, profile;
    int64_t memory_mib;
  };
  const std::vector<Row> want = {
      {"gpu-0-mig-1g10gb-19-0", "mig", "MIG-4d806f22-346a-5a1d-ac01-86b505cdf485", kDraGpu0Uuid,
       "1g.10gb", 9984},
      {"gpu-0-mig-3g40gb-9-4", "mig", "MIG-8949ea7d-9166-53ce-9bac-6c58262addf9", kDraGpu0Uuid,
       "3g.40gb", 40448},
      {"gpu-1", "gpu", "GPU-1b2c3d4e-0000-5000-8000-000000000001", "", "", 81559},
  };
  ASSERT_EQ(slice.devices.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    const DraDevice& d = slice.devices[i];
    EXPECT_EQ(d.name, want[i].name);
    EXPECT_EQ(d.driver, "gpu.nvidia.com");
    EXPECT_EQ(d.pool, "node-a");
    EXPECT_EQ(d.node, "node-a");
    EXPECT_EQ(d.type, want[i].type);
    EXPECT_EQ(d.uuid, want[i].uuid);
    EXPECT_EQ(d.parent_uuid, want[i].parent_uuid);
    EXPECT_EQ(d.profile, want[i].profile);
    EXPECT_EQ(d.product, kDraH100);
    EXPECT_EQ(d.memory_mib, want[i].memory_mib);
  }

  // The item parsed on its own is the same slice.
  rapidjson::Document doc = JsonOrFail(Testdata("dra/list-resourceslices.v1.json"));
  const JsonValue* items = FindMember(doc, "items");
  ASSERT_TRUE(items && items->IsArray() && items->Size() == 1);
  absl::StatusOr<DraSlice> alone = ParseResourceSlice((*items)[0]);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(*alone, slice);
}

TEST(DraCodecTest, ClaimFixture) {
  DraObjects objects = DraListOrFail("dra/list-resourceclaims.v1.json");
  ASSERT_EQ(objects.claims.size(), 1u);
  EXPECT_TRUE(objects.slices.empty());
  const DraClaim& claim = objects.claims[0];
  EXPECT_EQ(claim.namespace_name, "team-a");
  EXPECT_EQ(claim.name, "tenant-a-inference");
  EXPECT_EQ(claim.uid, "e27064a2-7a08-498a-a049-e4ec6dfb90e6");
  EXPECT_EQ(claim.device_classes, std::vector<std::string>{"mig.nvidia.com"});
  EXPECT_TRUE(claim.allocated);
  EXPECT_EQ(claim.allocated_node, "node-a");
  EXPECT_EQ(claim.results, (std::vector<DraAllocationResult>{
                               {"mig", "gpu.nvidia.com", "node-a", "gpu-0-mig-1g10gb-19-0"}}));
  EXPECT_EQ(
      claim.reserved_for,
      (std::vector<DraReservation>{{"pods", "inference", "fb3d8125-8011-4e1c-b596-937fd557029b"}}));
  EXPECT_FALSE(claim.extended_resource_claim);

  // reservedFor names the captured pod that uses the claim.
  absl::StatusOr<topology::ClusterData> pods =
      ParseClusterList(JsonOrFail(Testdata("dra/list-pods-with-claims.json")));
  ASSERT_TRUE(pods.ok()) << pods.status();
  bool found = false;
  for (const topology::PodFacts& pod : pods->pods) {
    if (pod.name != "inference") continue;
    found = true;
    EXPECT_EQ(pod.uid, claim.reserved_for[0].uid);
    EXPECT_EQ(pod.node_name, claim.allocated_node);
  }
  EXPECT_TRUE(found);
}

TEST(DraCodecTest, ClaimFixtureResolvesToTheSliceFixture) {
  DraObjects slices = DraListOrFail("dra/list-resourceslices.v1.json");
  DraObjects claims = DraListOrFail("dra/list-resourceclaims.v1.json");
  ASSERT_EQ(claims.claims.size(), 1u);
  std::vector<DraDevice> current = topology::CurrentDevices(slices.slices);
  DraAllocatedDevices held = topology::AllocatedDevices(claims.claims[0], current);
  EXPECT_TRUE(held.missing.empty());
  ASSERT_EQ(held.devices.size(), 1u);
  EXPECT_EQ(held.devices[0]->type, "mig");
  EXPECT_EQ(held.devices[0]->profile, "1g.10gb");
  EXPECT_EQ(held.devices[0]->parent_uuid, kDraGpu0Uuid);
  EXPECT_EQ(held.devices[0]->memory_mib, 9984);
}

TEST(DraCodecTest, DeviceClassFixture) {
  DraObjects objects = DraListOrFail("dra/list-deviceclasses.v1.json");
  EXPECT_EQ(objects.classes, (std::vector<DraDeviceClass>{
                                 {"gpu.nvidia.com",
                                  {"device.driver == 'gpu.nvidia.com' && "
                                   "device.attributes['gpu.nvidia.com'].type == 'gpu'"},
                                  ""},
                                 {"mig.nvidia.com",
                                  {"device.driver == 'gpu.nvidia.com' && "
                                   "device.attributes['gpu.nvidia.com'].type == 'mig'"},
                                  ""},
                             }));
}

TEST(DraCodecTest, PodListHoldsNoDraObjects) {
  DraObjects objects = DraListOrFail("dra/list-pods-with-claims.json");
  EXPECT_TRUE(objects.slices.empty());
  EXPECT_TRUE(objects.claims.empty());
  EXPECT_TRUE(objects.classes.empty());
}

TEST(DraCodecTest, AdmissionReviewClaims) {
  struct Row {
    std::string file;
    std::string uid;
  };
  // The claim as created (no uid yet) and as the scheduler updates it while allocating: its
  // status is still empty then.
  const std::vector<Row> rows = {
      {"dra/01-mutate-ResourceClaim.CREATE.json", ""},
      {"dra/07-mutate-ResourceClaim.UPDATE.json", "e27064a2-7a08-498a-a049-e4ec6dfb90e6"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.file);
    rapidjson::Document review = JsonOrFail(Testdata(row.file));
    absl::StatusOr<DraClaim> claim = ParseResourceClaim(DraReviewObject(review));
    ASSERT_TRUE(claim.ok()) << claim.status();
    EXPECT_EQ(claim->namespace_name, "team-a");
    EXPECT_EQ(claim->name, "tenant-a-inference");
    EXPECT_EQ(claim->uid, row.uid);
    EXPECT_EQ(claim->device_classes, std::vector<std::string>{"mig.nvidia.com"});
    EXPECT_FALSE(claim->allocated);
    EXPECT_TRUE(claim->results.empty());
    EXPECT_TRUE(claim->reserved_for.empty());
  }
}

TEST(DraCodecTest, TemplateFirstAvailableNamesEveryClass) {
  // A ResourceClaimTemplate's spec is {metadata, spec} as a claim has them.
  rapidjson::Document review =
      JsonOrFail(Testdata("dra/03-mutate-ResourceClaimTemplate.CREATE.json"));
  const JsonValue* spec = FindMember(DraReviewObject(review), "spec");
  ASSERT_NE(spec, nullptr);
  absl::StatusOr<DraClaim> claim = ParseResourceClaim(*spec, "template.spec");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->device_classes, (std::vector<std::string>{"gpu.nvidia.com", "mig.nvidia.com"}));
  EXPECT_FALSE(claim->allocated);
}

TEST(DraCodecTest, ClassicClaimIsRefused) {
  // v1alpha2 (classic DRA) has spec.resourceClassName and no devices: reading it as a v1 claim
  // would account nothing.
  rapidjson::Document review =
      JsonOrFail(Testdata("admission/resourceclaim-v1alpha2-create.validating.request.json"));
  absl::StatusOr<DraClaim> claim = ParseResourceClaim(DraReviewObject(review));
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(claim.status().message(),
            "resourceclaim.apiVersion: unsupported \"resource.k8s.io/v1alpha2\" (want "
            "resource.k8s.io/v1, v1beta2 or v1beta1)");
}

// --- other versions and shapes, after docs/wire/dra.md -----------------------------------------

TEST(DraCodecTest, V1beta1SliceWithBasicWrapper) {
  // A typed list whose items omit kind, as kube-apiserver serves them.
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceSliceList",
    "items":[{"metadata":{"name":"node-b-gpu.nvidia.com-x1"},
      "spec":{"driver":"gpu.nvidia.com","nodeName":"node-b",
        "pool":{"name":"node-b","generation":4,"resourceSliceCount":1},
        "devices":[
          {"name":"gpu-0-mig-19-4-1","basic":{
            "attributes":{"gpu.nvidia.com/type":{"string":"mig"},"uuid":{"string":"MIG-b1"},
              "parentUUID":{"string":"GPU-b0"},"gpu.nvidia.com/profile":{"string":"1g.12gb"},
              "productName":{"string":"NVIDIA H100 NVL"},"index":{"int":0},
              "cudaComputeCapability":{"version":"9.0.0"},"pcieBusID":{"string":"0000:3b:00.0"}},
            "capacity":{"gpu.nvidia.com/memory":{"value":"11Gi"},"multiprocessors":{"value":"16"}}}},
          {"name":"gpu-1","basic":{"attributes":{"type":{"string":"gpu"}}}},
          {"name":"gpu-2"}]}}]})";
  absl::StatusOr<DraObjects> objects = ParseDraList(JsonOrFail(kJson));
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->slices.size(), 1u);
  const DraSlice& slice = objects->slices[0];
  EXPECT_EQ(slice.generation, 4);
  ASSERT_EQ(slice.devices.size(), 3u);
  const DraDevice& mig = slice.devices[0];
  EXPECT_EQ(mig.name, "gpu-0-mig-19-4-1");
  EXPECT_EQ(mig.node, "node-b");
  EXPECT_EQ(mig.type, "mig");
  EXPECT_EQ(mig.uuid, "MIG-b1");
  EXPECT_EQ(mig.parent_uuid, "GPU-b0");
  EXPECT_EQ(mig.profile, "1g.12gb");
  EXPECT_EQ(mig.product, "NVIDIA H100 NVL");
  EXPECT_EQ(mig.memory_mib, 11264);
  EXPECT_EQ(slice.devices[1].type, "gpu");
  EXPECT_EQ(slice.devices[1].memory_mib, std::nullopt);
  EXPECT_EQ(slice.devices[2].type, "");  // v1beta1's basic is optional
}

TEST(DraCodecTest, WholeGpuNodeSlice) {
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
    "metadata":{"name":"node-c-gpu.nvidia.com-q"},
    "spec":{"driver":"gpu.nvidia.com","nodeName":"node-c","pool":{"name":"node-c","generation":2},
      "devices":[
        {"name":"gpu-0","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-c0"},
           "productName":{"string":"NVIDIA A100-SXM4-40GB"},
           "resource.kubernetes.io/type":{"string":"not-ours"},
           "gpu.nvidia.comprofile":{"string":"not-a-domain"},
           "resource.kubernetes.io/pciBusID":{"string":"0000:1b:00.0"}},
         "capacity":{"memory":{"value":"40Gi"}}},
        {"name":"gpu-1","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-c1"}},
         "capacity":{"memory":{"value":"42949672959"}}},
        {"name":"gpu-2","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-c2"}}}]}})";
  absl::StatusOr<DraSlice> slice = ParseResourceSlice(JsonOrFail(kJson));
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->resource_slice_count, 1);  // defaulted
  ASSERT_EQ(slice->devices.size(), 3u);
  for (const DraDevice& d : slice->devices) {
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.type, "gpu");  // another domain's `type` is not the driver's
    EXPECT_EQ(d.node, "node-c");
    EXPECT_EQ(d.parent_uuid, "");
    EXPECT_EQ(d.profile, "");
  }
  EXPECT_EQ(slice->devices[0].product, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(slice->devices[0].memory_mib, 40960);
  EXPECT_EQ(slice->devices[1].memory_mib, 40959);  // one byte short of 40Gi rounds down
  EXPECT_EQ(slice->devices[2].memory_mib, std::nullopt);
}

TEST(DraCodecTest, PerDeviceNodeName) {
  constexpr char kJson[] = R"({"spec":{"driver":"d","pool":{"name":"p"},
    "perDeviceNodeSelection":true,"devices":[{"name":"a","nodeName":"node-x"},{"name":"b"}]}})";
  absl::StatusOr<DraSlice> slice = ParseResourceSlice(JsonOrFail(kJson));
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->node, "");
  ASSERT_EQ(slice->devices.size(), 2u);
  EXPECT_EQ(slice->devices[0].node, "node-x");
  EXPECT_EQ(slice->devices[1].node, "");
}

TEST(DraCodecTest, MultiAllocatableDevice) {
  // DRAConsumableCapacity (beta in 1.36): several claims may hold the device at once.
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
    "spec":{"driver":"gpu.nvidia.com","nodeName":"node-s","pool":{"name":"node-s","generation":1},
      "devices":[
        {"name":"gpu-0","allowMultipleAllocations":true,"attributes":{"type":{"string":"gpu"}},
         "capacity":{"memory":{"value":"80Gi","requestPolicy":{"default":"10Gi",
           "validRange":{"min":"1Gi","step":"1Gi"}}}}},
        {"name":"gpu-1","allowMultipleAllocations":false},
        {"name":"gpu-2"}]}})";
  absl::StatusOr<DraSlice> slice = ParseResourceSlice(JsonOrFail(kJson));
  ASSERT_TRUE(slice.ok()) << slice.status();
  ASSERT_EQ(slice->devices.size(), 3u);
  EXPECT_TRUE(slice->devices[0].allow_multiple_allocations);
  EXPECT_EQ(slice->devices[0].memory_mib, 81920);
  EXPECT_FALSE(slice->devices[1].allow_multiple_allocations);
  EXPECT_FALSE(slice->devices[2].allow_multiple_allocations);
}

TEST(DraCodecTest, V1beta1FlatClaimRequests) {
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim",
    "metadata":{"name":"c","namespace":"team-b","uid":"u-1",
      "annotations":{"resource.kubernetes.io/extended-resource-claim":"true"}},
    "spec":{"devices":{"requests":[
      {"name":"mig-1g","deviceClassName":"mig.nvidia.com",
       "selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]},
      {"name":"any","firstAvailable":[{"name":"big","deviceClassName":"gpu.nvidia.com"},
                                      {"name":"small","deviceClassName":"mig.nvidia.com"}]}]}},
    "status":{"allocation":{"devices":{"results":[
        {"request":"mig-1g","driver":"gpu.nvidia.com","pool":"node-b","device":"gpu-0-mig-19-4-1"},
        {"request":"any/big","driver":"gpu.nvidia.com","pool":"node-b","device":"gpu-1"}]},
      "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
        {"key":"metadata.name","operator":"In","values":["node-b"]}]}]}},
      "reservedFor":[{"resource":"pods","name":"p1","uid":"pu-1"},{"apiGroup":"","name":"p2"}]}})";
  absl::StatusOr<DraClaim> claim = ParseResourceClaim(JsonOrFail(kJson));
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->device_classes, (std::vector<std::string>{"mig.nvidia.com", "gpu.nvidia.com"}));
  EXPECT_TRUE(claim->extended_resource_claim);
  EXPECT_TRUE(claim->allocated);
  EXPECT_EQ(claim->allocated_node, "node-b");
  EXPECT_EQ(claim->results, (std::vector<DraAllocationResult>{
                                {"mig-1g", "gpu.nvidia.com", "node-b", "gpu-0-mig-19-4-1"},
                                {"any/big", "gpu.nvidia.com", "node-b", "gpu-1"}}));
  EXPECT_EQ(claim->reserved_for,
            (std::vector<DraReservation>{{"pods", "p1", "pu-1"}, {"", "p2", ""}}));
}

TEST(DraCodecTest, AllocatedNodeShapes) {
  struct Row {
    std::string name;
    std::string allocation;  // status.allocation
    std::string node;
  };
  const std::vector<Row> rows = {
      {"node-local", R"({"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
         {"key":"metadata.name","operator":"In","values":["n1"]}]}]}})",
       "n1"},
      {"no node selector (a network-attached pool)", R"({"devices":{"results":[]}})", ""},
      {"two values", R"({"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
         {"key":"metadata.name","operator":"In","values":["n1","n2"]}]}]}})",
       ""},
      {"two terms are alternatives", R"({"nodeSelector":{"nodeSelectorTerms":[
         {"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]},
         {"matchFields":[{"key":"metadata.name","operator":"In","values":["n2"]}]}]}})",
       ""},
      {"NotIn", R"({"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
         {"key":"metadata.name","operator":"NotIn","values":["n1"]}]}]}})",
       ""},
      {"a label selector", R"({"nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[
         {"key":"zone","operator":"In","values":["z1"]}]}]}})",
       ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::string json = R"({"spec":{},"status":{"allocation":)" + row.allocation + "}}";
    absl::StatusOr<DraClaim> claim = ParseResourceClaim(JsonOrFail(json));
    ASSERT_TRUE(claim.ok()) << claim.status();
    EXPECT_TRUE(claim->allocated);
    EXPECT_EQ(claim->allocated_node, row.node);
  }
}

TEST(DraCodecTest, DeviceClassWithExtendedResourceName) {
  constexpr char kJson[] = R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",
    "metadata":{"name":"mig-1g-12gb.gpu.nvidia.com"},
    "spec":{"extendedResourceName":"nvidia.com/mig-1g.12gb","selectors":[
      {"cel":{"expression":"device.attributes['gpu.nvidia.com'].type == 'mig'"}},
      {"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"}}]}})";
  absl::StatusOr<DraDeviceClass> cls = ParseDeviceClass(JsonOrFail(kJson));
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_EQ(cls->name, "mig-1g-12gb.gpu.nvidia.com");
  EXPECT_EQ(cls->extended_resource_name, "nvidia.com/mig-1g.12gb");
  EXPECT_EQ(cls->selectors.size(), 2u);
}

// --- errors name the JSON path ------------------------------------------------------------------

enum class DraParser { kSlice, kClaim, kClass, kList };

absl::Status DraParseStatus(DraParser parser, const JsonValue& value) {
  switch (parser) {
    case DraParser::kSlice:
      return ParseResourceSlice(value).status();
    case DraParser::kClaim:
      return ParseResourceClaim(value).status();
    case DraParser::kClass:
      return ParseDeviceClass(value).status();
    case DraParser::kList:
      return ParseDraList(value).status();
  }
  return absl::InternalError("unreachable");
}

// A slice with one device whose body is `device` (a JSON object's members).
std::string DraSliceWithDevice(const std::string& device) {
  return R"({"spec":{"driver":"gpu.nvidia.com","pool":{"name":"p"},"devices":[{"name":"d",)" +
         device + "}]}}";
}

TEST(DraCodecTest, ErrorsNameThePath) {
  struct Row {
    std::string name;
    DraParser parser;
    std::string json;
    std::string error;  // exact message
  };
  const std::string dev0 = "resourceslice.spec.devices[0]";
  const std::string requests = "resourceclaim.spec.devices.requests";
  const std::string results = "resourceclaim.status.allocation.devices.results[0]";
  const std::vector<Row> rows = {
      // ResourceSlice
      {"slice not an object", DraParser::kSlice, R"("slice")", "resourceslice: expected object"},
      {"unsupported version", DraParser::kSlice, R"({"apiVersion":"resource.k8s.io/v1alpha3"})",
       "resourceslice.apiVersion: unsupported \"resource.k8s.io/v1alpha3\" (want "
       "resource.k8s.io/v1, v1beta2 or v1beta1)"},
      {"another kind", DraParser::kSlice, R"({"kind":"ResourceClaim","spec":{}})",
       "resourceslice.kind: expected ResourceSlice, got ResourceClaim"},
      {"name not a string", DraParser::kSlice, R"({"metadata":{"name":1},"spec":{}})",
       "resourceslice.metadata.name: expected string, got number"},
      {"no spec", DraParser::kSlice, R"({"metadata":{}})", "resourceslice.spec: missing"},
      {"no driver", DraParser::kSlice, R"({"spec":{"pool":{"name":"p"}}})",
       "resourceslice.spec.driver: missing"},
      {"driver not a string", DraParser::kSlice, R"({"spec":{"driver":7}})",
       "resourceslice.spec.driver: expected string, got number"},
      {"allowMultipleAllocations not a bool", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p"},"devices":[{"name":"a",
         "allowMultipleAllocations":"yes"}]}})",
       dev0 + ".allowMultipleAllocations: expected boolean"},
      {"empty driver", DraParser::kSlice, R"({"spec":{"driver":""}})",
       "resourceslice.spec.driver: empty"},
      {"no pool", DraParser::kSlice, R"({"spec":{"driver":"d"}})",
       "resourceslice.spec.pool: missing"},
      {"pool not an object", DraParser::kSlice, R"({"spec":{"driver":"d","pool":"p"}})",
       "resourceslice.spec.pool: expected object, got string"},
      {"no pool name", DraParser::kSlice, R"({"spec":{"driver":"d","pool":{"generation":1}}})",
       "resourceslice.spec.pool.name: missing"},
      {"generation not an integer", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p","generation":"1"}}})",
       "resourceslice.spec.pool.generation: expected integer"},
      {"no slices in the pool", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":0}}})",
       "resourceslice.spec.pool.resourceSliceCount: must be at least 1"},
      {"devices not an array", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p"},"devices":{}}})",
       "resourceslice.spec.devices: expected array, got object"},
      {"device not an object", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p"},"devices":[{"name":"a"},"b"]}})",
       "resourceslice.spec.devices[1]: expected object"},
      {"device without a name", DraParser::kSlice,
       R"({"spec":{"driver":"d","pool":{"name":"p"},"devices":[{"attributes":{}}]}})",
       dev0 + ".name: missing"},
      {"attributes not an object", DraParser::kSlice, DraSliceWithDevice(R"("attributes":[])"),
       dev0 + ".attributes: expected object, got array"},
      {"attribute not an object", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"type":"gpu"})"),
       dev0 + ".attributes.type: expected object"},
      {"attribute with two values", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"numa":{"int":1,"string":"1"}})"),
       dev0 + ".attributes.numa: expected exactly one of string, int, bool, version"},
      {"attribute without a value", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"numa":{}})"),
       dev0 + ".attributes.numa: expected exactly one of string, int, bool, version"},
      {"int attribute of the wrong type", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"numa":{"int":"1"}})"),
       dev0 + ".attributes.numa.int: expected integer"},
      {"bool attribute of the wrong type", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"iommuFDEnabled":{"bool":"yes"}})"),
       dev0 + ".attributes.iommuFDEnabled.bool: expected boolean"},
      {"version attribute of the wrong type", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"driverVersion":{"version":570}})"),
       dev0 + ".attributes.driverVersion.version: expected string"},
      {"type that is not a string", DraParser::kSlice,
       DraSliceWithDevice(R"("attributes":{"gpu.nvidia.com/type":{"int":1}})"),
       dev0 + ".attributes.gpu.nvidia.com/type: expected a string attribute, got int"},
      {"capacity not an object", DraParser::kSlice,
       DraSliceWithDevice(R"("capacity":{"memory":"80Gi"})"),
       dev0 + ".capacity.memory: expected object"},
      {"capacity without a value", DraParser::kSlice,
       DraSliceWithDevice(R"("capacity":{"memory":{}})"), dev0 + ".capacity.memory.value: missing"},
      {"malformed memory", DraParser::kSlice,
       DraSliceWithDevice(R"("capacity":{"memory":{"value":"lots"}})"),
       dev0 + ".capacity.memory.value: quantity \"lots\" is not a valid Kubernetes quantity: "
              "no digits"},
      {"malformed other capacity", DraParser::kSlice,
       DraSliceWithDevice(R"("capacity":{"multiprocessors":{"value":"16 SMs"}})"),
       dev0 + ".capacity.multiprocessors.value: quantity \"16 SMs\" is not a valid Kubernetes "
              "quantity: unknown suffix \" SMs\""},
      {"negative memory", DraParser::kSlice,
       DraSliceWithDevice(R"("capacity":{"memory":{"value":"-1Gi"}})"),
       dev0 + ".capacity.memory.value: negative"},
      {"basic not an object", DraParser::kSlice, DraSliceWithDevice(R"("basic":[])"),
       dev0 + ".basic: expected object, got array"},
      {"malformed memory inside basic", DraParser::kSlice,
       DraSliceWithDevice(R"("basic":{"capacity":{"memory":{"value":true}}})"),
       dev0 + ".basic.capacity.memory.value: quantity must be a string or number"},
      // ResourceClaim
      {"claim without spec", DraParser::kClaim, R"({"metadata":{"name":"c"}})",
       "resourceclaim.spec: missing"},
      {"requests not an array", DraParser::kClaim, R"({"spec":{"devices":{"requests":{}}}})",
       requests + ": expected array, got object"},
      {"request without a class", DraParser::kClaim,
       R"({"spec":{"devices":{"requests":[{"name":"r"}]}}})",
       requests + "[0]: expected exactly, firstAvailable or deviceClassName"},
      {"exactly without a class", DraParser::kClaim,
       R"({"spec":{"devices":{"requests":[{"name":"r","exactly":{"count":1}}]}}})",
       requests + "[0].exactly.deviceClassName: missing"},
      {"subrequest without a class", DraParser::kClaim,
       R"({"spec":{"devices":{"requests":[{"name":"r","firstAvailable":[)"
       R"({"name":"a","deviceClassName":"gpu.nvidia.com"},{"name":"b"}]}]}}})",
       requests + "[0].firstAvailable[1].deviceClassName: missing"},
      {"flat class not a string", DraParser::kClaim,
       R"({"spec":{"devices":{"requests":[{"name":"r","deviceClassName":1}]}}})",
       requests + "[0].deviceClassName: expected string, got number"},
      {"empty class", DraParser::kClaim,
       R"({"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":""}}]}}})",
       requests + "[0].exactly.deviceClassName: empty"},
      {"result without a device", DraParser::kClaim,
       R"({"spec":{},"status":{"allocation":{"devices":{"results":[)"
       R"({"request":"r","driver":"d","pool":"p"}]}}}})",
       results + ".device: missing"},
      {"result not an object", DraParser::kClaim,
       R"({"spec":{},"status":{"allocation":{"devices":{"results":[1]}}}})",
       results + ": expected object"},
      {"node name not a string", DraParser::kClaim,
       R"({"spec":{},"status":{"allocation":{"nodeSelector":{"nodeSelectorTerms":[)"
       R"({"matchFields":[{"key":"metadata.name","operator":"In","values":[7]}]}]}}}})",
       "resourceclaim.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0]."
       "values[0]: expected string"},
      {"reservation without a name", DraParser::kClaim,
       R"({"spec":{},"status":{"reservedFor":[{"resource":"pods","uid":"u"}]}})",
       "resourceclaim.status.reservedFor[0].name: missing"},
      {"marker annotation not a string", DraParser::kClaim,
       R"({"metadata":{"annotations":{"resource.kubernetes.io/extended-resource-claim":true}},)"
       R"("spec":{}})",
       "resourceclaim.metadata.annotations.resource.kubernetes.io/extended-resource-claim: "
       "expected string, got boolean"},
      // DeviceClass
      {"class without metadata", DraParser::kClass, R"({"spec":{}})",
       "deviceclass.metadata: missing"},
      {"class without a name", DraParser::kClass, R"({"metadata":{}})",
       "deviceclass.metadata.name: missing"},
      {"selector without cel", DraParser::kClass,
       R"({"metadata":{"name":"c"},"spec":{"selectors":[{}]}})",
       "deviceclass.spec.selectors[0].cel: missing"},
      {"expression not a string", DraParser::kClass,
       R"({"metadata":{"name":"c"},"spec":{"selectors":[{"cel":{"expression":1}}]}})",
       "deviceclass.spec.selectors[0].cel.expression: expected string, got number"},
      {"extended resource name not a string", DraParser::kClass,
       R"({"metadata":{"name":"c"},"spec":{"extendedResourceName":["nvidia.com/gpu"]}})",
       "deviceclass.spec.extendedResourceName: expected string, got array"},
      // Lists
      {"list not an object", DraParser::kList, "[]", "list: expected object"},
      {"list without items", DraParser::kList, R"({"kind":"List"})", "items: missing"},
      {"items not an array", DraParser::kList, R"({"kind":"List","items":{}})",
       "items: expected array, got object"},
      {"item not an object", DraParser::kList, R"({"kind":"List","items":[null]})",
       "items[0]: expected object"},
      {"typed list item without kind", DraParser::kList,
       R"({"kind":"ResourceSliceList","items":[)"
       R"({"spec":{"driver":"d","pool":{"name":"p"}}},{"spec":{"pool":{"name":"p"}}}]})",
       "items[1].spec.driver: missing"},
      {"claim item", DraParser::kList, R"({"kind":"List","items":[{"kind":"ResourceClaim"}]})",
       "items[0].spec: missing"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::Status status = DraParseStatus(row.parser, JsonOrFail(row.json));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_EQ(status.message(), row.error);
  }
}

}  // namespace
}  // namespace wire
