// Every way Kubernetes 1.36 offers to reach a device passes the tenant's contract, over real
// HTTPS: `serve` with a cluster whose nodes offer GPUs through device plugins and through DRA (a
// GPU several claims may hold at once, two MIG devices, the NVIDIA chart's classes), sent the
// AdmissionReviews kube-apiserver sends (the captured pod and claim CREATEs, with the object,
// namespace and userInfo of each door). acme is untrusted (exclusive and MIG, 1g.10gb only, quota
// one GPU, held); research is trusted (quota one GPU, held).
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"

// Named, so the unity build's other files may use the same helper names.
namespace side_doors_test {
namespace {

using testing_support::ParseOrDie;
using testing_support::ReadTestData;
using testing_support::ServeProcess;
using testing_support::SharedServeSuite;

constexpr char kScheduler[] = "system:kube-scheduler";
constexpr char kAcmeUser[] = "system:serviceaccount:acme:default";

std::string ToText(const rapidjson::Value& v) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  v.Accept(w);
  return out.GetString();
}

// The captured review at `fixture` with its object's metadata and spec replaced, in namespace
// `ns`, from `username`.
std::string Review(const char* fixture, const std::string& ns, const std::string& username,
                   const std::string& metadata, const std::string& spec) {
  rapidjson::Document review = ParseOrDie(ReadTestData(fixture));
  auto& alloc = review.GetAllocator();
  rapidjson::Value& request = review["request"];
  request["namespace"].SetString(ns.c_str(), alloc);
  request["userInfo"].SetObject();
  request["userInfo"].AddMember("username", rapidjson::Value(username.c_str(), alloc), alloc);
  rapidjson::Value& object = request["object"];
  rapidjson::Document meta = ParseOrDie(metadata);
  meta.AddMember("namespace", rapidjson::Value(ns.c_str(), alloc), meta.GetAllocator());
  object["metadata"].CopyFrom(meta, alloc);
  rapidjson::Document parsed_spec = ParseOrDie(spec);
  object["spec"].CopyFrom(parsed_spec, alloc);
  request["name"].SetString(object["metadata"]["name"].GetString(), alloc);
  return ToText(review);
}

// A ResourceClaim CREATE as kube-apiserver sends it (v1, defaults filled in).
std::string ClaimReview(const std::string& ns, const std::string& username,
                        const std::string& request, const std::string& annotations = "{}") {
  return Review(
      "dra/01-mutate-ResourceClaim.CREATE.json", ns, username,
      absl::StrCat(R"({"name":"c","annotations":)", annotations, "}"),
      absl::StrCat(R"({"devices":{"requests":[{"name":"gpu","exactly":)", request, "}]}}"));
}

// A Pod CREATE whose one container asks `limits` (requests follow limits, as the apiserver
// defaults them), with `extra_spec` fields (",\"nodeName\":\"x\"").
std::string PodReview(const std::string& ns, const std::string& limits,
                      const std::string& extra_spec = "") {
  return Review("admission/pod-create.validating.request.json", ns, "alice@example.com",
                R"({"name":"p"})",
                absl::StrCat(R"({"containers":[{"name":"main","image":"registry.k8s.io/pause:3.9",
                   "resources":{"limits":)",
                             limits, R"(,"requests":)", limits, "}}]", extra_spec, "}"));
}

constexpr char kMultiAllocatable[] = R"({"deviceClassName":"gpu.nvidia.com",
    "allocationMode":"ExactCount","count":1})";
constexpr char kMigAny[] = R"({"deviceClassName":"mig.nvidia.com","allocationMode":"ExactCount",
    "count":1})";
constexpr char kExtendedClaim[] = R"({"resource.kubernetes.io/extended-resource-claim":"true"})";

struct Answer {
  bool allowed = false;
  std::string message;
  std::vector<std::string> warnings;
  std::string patch;  // decoded JSON Patch, "" when none
};

class SideDoorsTest : public SharedServeSuite<SideDoorsTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--policy", absl::StrCat(GT_TESTDATA_DIR, "/webhook/side-doors-policy.yaml"),
            "--cluster-file", absl::StrCat(GT_TESTDATA_DIR, "/webhook/side-doors-cluster.yaml")};
  }

 protected:
  static Answer Call(const char* path, const std::string& review) {
    ServeProcess::Response r = server_->Post(path, review);
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    rapidjson::Document reply = ParseOrDie(r.body);
    const rapidjson::Value& response = reply["response"];
    Answer a;
    a.allowed = response["allowed"].GetBool();
    if (!a.allowed) a.message = response["status"]["message"].GetString();
    if (response.HasMember("warnings")) {
      for (const auto& w : response["warnings"].GetArray()) a.warnings.push_back(w.GetString());
    }
    if (response.HasMember("patch")) {
      EXPECT_TRUE(absl::Base64Unescape(response["patch"].GetString(), &a.patch));
    }
    return a;
  }
  static Answer Validate(const std::string& review) {
    return Call("/webhook/validate?timeout=10s", review);
  }
  static Answer Mutate(const std::string& review) {
    return Call("/webhook/mutate?timeout=10s", review);
  }
};

::testing::AssertionResult DeniedBy(const Answer& a, absl::string_view rule) {
  if (a.allowed) return ::testing::AssertionFailure() << "allowed";
  if (!absl::StartsWith(a.message, absl::StrCat("[", rule, "] "))) {
    return ::testing::AssertionFailure() << "denied by another rule: " << a.message;
  }
  return ::testing::AssertionSuccess();
}

// Door 1: the annotation that marks kube-scheduler's own claim, written by the tenant.
TEST_F(SideDoorsTest, AForgedSchedulerAnnotationLeavesTheClaimTheTenants) {
  const std::string pinned_3g = R"({"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{
      "expression":"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}],
      "allocationMode":"ExactCount","count":1})";
  Answer forged = Validate(ClaimReview("acme", kAcmeUser, pinned_3g, kExtendedClaim));
  EXPECT_TRUE(DeniedBy(forged, "claim-mig-profile")) << forged.message;
  ASSERT_EQ(forged.warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(
      forged.warnings[0],
      "annotation resource.kubernetes.io/extended-resource-claim ignored: only kube-scheduler"))
      << forged.warnings[0];

  // The mutating webhook writes the tenant's selectors into it like into any of its claims.
  Answer mutated = Mutate(ClaimReview("acme", kAcmeUser, kMigAny, kExtendedClaim));
  EXPECT_TRUE(absl::StrContains(mutated.patch, "gpu-tenancy.io~1selectors")) << mutated.patch;
  EXPECT_TRUE(absl::StrContains(mutated.patch, R"(profile in [\"1g.10gb\"])")) << mutated.patch;

  // From kube-scheduler the claim is the scheduler's, and no selector is written into it.
  Answer scheduler = Mutate(ClaimReview("acme", kScheduler, kMigAny, kExtendedClaim));
  EXPECT_FALSE(absl::StrContains(scheduler.patch, "/selectors")) << scheduler.patch;
}

// Door 1 and 6: kube-scheduler's claim for a pod's extended resource is judged by what its class
// selects, so the pod stays Pending with the reason.
TEST_F(SideDoorsTest, TheSchedulersClaimIsCheckedAgainstThePodsTenant) {
  Answer mig = Validate(ClaimReview("acme", kScheduler, kMigAny, kExtendedClaim));
  EXPECT_TRUE(DeniedBy(mig, "dra-extended-resource")) << mig.message;
  EXPECT_TRUE(absl::StrContains(mig.message, "selects MIG profile 3g.40gb")) << mig.message;

  Answer shared = Validate(ClaimReview("acme", kScheduler, kMultiAllocatable, kExtendedClaim));
  EXPECT_TRUE(DeniedBy(shared, "dra-extended-resource")) << shared.message;
  EXPECT_TRUE(absl::StrContains(shared.message, "gpu.nvidia.com/dra-a/gpu-0 (timeslice)"))
      << shared.message;

  // research may share; its quota (one GPU, held) refuses the claim all the same.
  Answer research =
      Validate(ClaimReview("research", kScheduler, kMultiAllocatable, kExtendedClaim));
  EXPECT_TRUE(DeniedBy(research, "tenant-quota")) << research.message;
}

// Door 2: deviceclass.resource.kubernetes.io/<class> is GPU demand.
TEST_F(SideDoorsTest, AnImplicitDeviceClassResourceIsGpuDemand) {
  Answer a =
      Validate(PodReview("acme", R"({"deviceclass.resource.kubernetes.io/mig.nvidia.com":"1"})"));
  EXPECT_TRUE(DeniedBy(a, "dra-extended-resource")) << a.message;
  EXPECT_EQ(a.message,
            "[dra-extended-resource] container \"main\" requests "
            "deviceclass.resource.kubernetes.io/mig.nvidia.com (devices of class mig.nvidia.com "
            "through DRA), but device class mig.nvidia.com selects MIG profile 3g.40gb, and tenant "
            "\"acme\" (tier untrusted) may use only 1g.10gb; an extended resource carries no "
            "selector, so every device its class selects must be one the tenant may use: request "
            "nvidia.com/mig-1g.10gb, or a ResourceClaim of class mig.nvidia.com (the tenant's "
            "profiles are written into it)");
  // A class that does not exist cannot be checked: unknown demand.
  Answer missing =
      Validate(PodReview("acme", R"({"deviceclass.resource.kubernetes.io/fpga.example.com":"1"})"));
  EXPECT_TRUE(DeniedBy(missing, "unknown-demand")) << missing.message;
}

// Door 3: a device several claims hold at once is time-slicing by another name.
TEST_F(SideDoorsTest, ConsumableCapacityIsASharedMode) {
  const std::string capacity = R"({"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount",
      "count":1,"capacity":{"requests":{"memory":"10Gi"}}})";
  Answer acme = Validate(ClaimReview("acme", kAcmeUser, capacity));
  EXPECT_TRUE(DeniedBy(acme, "claim-shared-capacity")) << acme.message;
  // Without capacity.requests the claim gets a selector that keeps it off shared devices.
  Answer mutated = Mutate(ClaimReview("acme", kAcmeUser, kMultiAllocatable));
  EXPECT_TRUE(absl::StrContains(mutated.patch, "!device.allowMultipleAllocations"))
      << mutated.patch;
  // research may share: no such selector, and its capacity request is not refused for sharing.
  Answer research = Mutate(ClaimReview("research", "bob@example.com", kMultiAllocatable));
  EXPECT_FALSE(absl::StrContains(research.patch, "allowMultipleAllocations")) << research.patch;
  Answer research_capacity = Validate(ClaimReview("research", "bob@example.com", capacity));
  EXPECT_FALSE(absl::StrContains(research_capacity.message, "claim-shared-capacity"))
      << research_capacity.message;
}

// Door 4: a pod that names its node passes the extender's checks at admission.
TEST_F(SideDoorsTest, APresetNodeIsCheckedAsTheExtenderWould) {
  Answer not_offered =
      Validate(PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})", R"(,"nodeName":"excl-a")"));
  EXPECT_TRUE(DeniedBy(not_offered, "preset-node")) << not_offered.message;
  EXPECT_TRUE(absl::StrContains(not_offered.message,
                                "pod names node \"excl-a\" in spec.nodeName, so no scheduler "
                                "places it and the extender never checks it; on that node: "
                                "nvidia.com/mig-1g.10gb: not offered by node"))
      << not_offered.message;
  Answer over_quota =
      Validate(PodReview("research", R"({"nvidia.com/gpu":"1"})", R"(,"nodeName":"excl-a")"));
  EXPECT_TRUE(DeniedBy(over_quota, "preset-node")) << over_quota.message;
  EXPECT_TRUE(absl::StrContains(over_quota.message, "quota")) << over_quota.message;
  Answer unknown =
      Validate(PodReview("research", R"({"nvidia.com/gpu":"1"})", R"(,"nodeName":"nowhere")"));
  EXPECT_TRUE(DeniedBy(unknown, "preset-node")) << unknown.message;
  // Without a preset node the same pod waits at the scheduler (a warning, as before).
  Answer scheduled = Validate(PodReview("research", R"({"nvidia.com/gpu.shared":"1"})"));
  EXPECT_TRUE(scheduled.allowed) << scheduled.message;
}

// Door 5: the shipped default (quotaEnforcement: scheduling) refuses claims over quota.
TEST_F(SideDoorsTest, ClaimsOverQuotaAreDeniedByDefault) {
  const std::string two = R"({"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{
      "expression":"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}],
      "allocationMode":"ExactCount","count":1})";
  // A 1g.10gb MIG device is not a whole GPU: within acme's quota.
  Answer mig = Validate(ClaimReview("acme", kAcmeUser, two));
  EXPECT_TRUE(mig.allowed) << mig.message;
  Answer gpu = Validate(ClaimReview("acme", kAcmeUser, kMultiAllocatable));
  EXPECT_TRUE(DeniedBy(gpu, "tenant-quota")) << gpu.message;
  EXPECT_EQ(gpu.message,
            "[tenant-quota] tenant acme quota: nvidia.com/gpu 1 of 1 held, 1 requested");
}

// Door 6: a name a DeviceClass maps through extendedResourceName is served by DRA too.
TEST_F(SideDoorsTest, AClassesExtendedResourceNameIsJudgedByItsDevices) {
  Answer acme = Validate(PodReview("acme", R"({"nvidia.com/gpu":"1"})"));
  EXPECT_TRUE(DeniedBy(acme, "dra-extended-resource")) << acme.message;
  EXPECT_TRUE(absl::StrContains(acme.message,
                                "requests nvidia.com/gpu (devices of class gpu.nvidia.com through "
                                "DRA), but device class gpu.nvidia.com selects a device other "
                                "claims may hold at the same time"))
      << acme.message;
  Answer research = Validate(PodReview("research", R"({"nvidia.com/gpu":"1"})"));
  EXPECT_TRUE(research.allowed) << research.message;
}

// Demand the service does not know: denied for the untrusted tier, a warning for the trusted.
TEST_F(SideDoorsTest, UnknownDemandIsDeniedToUntrustedTiers) {
  Answer acme = Validate(PodReview("acme", R"({"amd.com/gpu":"1"})"));
  EXPECT_TRUE(DeniedBy(acme, "unknown-demand")) << acme.message;
  EXPECT_TRUE(absl::StrContains(acme.message, "container \"main\" requests amd.com/gpu"))
      << acme.message;
  Answer research = Validate(PodReview("research", R"({"amd.com/gpu":"1"})"));
  EXPECT_TRUE(research.allowed) << research.message;
  ASSERT_FALSE(research.warnings.empty());
  EXPECT_TRUE(absl::StrContains(research.warnings.back(), "amd.com/gpu")) << research.warnings[0];

  const std::string fpga = R"({"deviceClassName":"fpga.example.com","allocationMode":"ExactCount",
      "count":1})";
  Answer claim = Validate(ClaimReview("acme", kAcmeUser, fpga));
  EXPECT_TRUE(DeniedBy(claim, "unknown-demand")) << claim.message;
  EXPECT_TRUE(absl::StrContains(claim.message, "asks for device class fpga.example.com"))
      << claim.message;
}

// A GPU pod naming a scheduler that does not call the extender.
TEST_F(SideDoorsTest, AnotherSchedulerIsASideDoor) {
  Answer acme = Validate(PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})",
                                   R"(,"schedulerName":"other-scheduler")"));
  EXPECT_TRUE(DeniedBy(acme, "scheduler-name")) << acme.message;
  Answer research = Validate(PodReview("research", R"({"nvidia.com/gpu.shared":"1"})",
                                       R"(,"schedulerName":"other-scheduler")"));
  EXPECT_TRUE(research.allowed) << research.message;
  bool warned = false;
  for (const std::string& w : research.warnings) {
    warned = warned || absl::StrContains(w, "pod names scheduler \"other-scheduler\"");
  }
  EXPECT_TRUE(warned);
}

// The second-scheduler layout: the mutating webhook renames the scheduler of GPU pods.
class SecondSchedulerTest : public SharedServeSuite<SecondSchedulerTest> {
 public:
  static std::vector<std::string> ServeArgs() {
    return {"--policy",
            absl::StrCat(GT_TESTDATA_DIR, "/webhook/side-doors-second-scheduler-policy.yaml"),
            "--cluster-file", absl::StrCat(GT_TESTDATA_DIR, "/webhook/side-doors-cluster.yaml")};
  }
};

TEST_F(SecondSchedulerTest, GpuPodsAreRenamedToTheExtendedScheduler) {
  ServeProcess::Response r = server_->Post("/webhook/mutate?timeout=10s",
                                           PodReview("acme", R"({"nvidia.com/mig-1g.10gb":"1"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document reply = ParseOrDie(r.body);
  ASSERT_TRUE(reply["response"].HasMember("patch")) << r.body;
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(reply["response"]["patch"].GetString(), &patch));
  EXPECT_TRUE(absl::StrContains(
      patch, R"({"op":"add","path":"/spec/schedulerName","value":"gpu-tenancy-scheduler"})"))
      << patch;
  // A CPU pod is not the webhook's to rename.
  r = server_->Post("/webhook/mutate?timeout=10s", PodReview("acme", R"({"cpu":"1"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(absl::StrContains(r.body, "\"patch\"")) << r.body;
}

}  // namespace
}  // namespace side_doors_test
