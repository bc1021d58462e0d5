// The selectors the mutating webhook writes, evaluated as kube-scheduler's DRA allocator would:
// the patched claim is parsed back, and each request's class selectors and request selectors
// are evaluated against the devices of the captured ResourceSlice (a 1g.10gb and a 3g.40gb MIG
// device and a full 80 GB GPU). Allowed devices match, forbidden ones do not, and no expression
// is an error or outside what the evaluator reads.
#include <string>
#include <vector>

#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "test/webhook/webhook_test_util.h"
#include "topology/dra/model.h"
#include "topology/dra/selector.h"
#include "wire/dra_codec.h"

namespace claim_selectors_eval_test {

using testing_support::JsonOrFail;
using testing_support::Testdata;
using topology::SelectorOutcome;
using webhook_test::MutateAndApply;
using webhook_test::Mutated;
using webhook_test::ReviewOptions;
using webhook_test::Yaml;

constexpr char kPolicy[] = R"(tiers:
  - {name: mig-only, modes: [mig, mig-shared]}
  - {name: shared-only, modes: [timeslice, mps]}
  - {name: dedicated, modes: [exclusive, mig]}
tenants:
  - name: inference
    tier: mig-only
    namespaces: [inference]
    limits: {migProfiles: [1g.10gb, 2g.20gb], gpuMemoryPerPod: 20Gi}
  - {name: notebooks, tier: shared-only, namespaces: [notebooks]}
  - name: training
    tier: dedicated
    namespaces: [training]
    limits: {gpuMemoryPerPod: 40Gi}
unknownTenant: deny
)";

struct Devices {
  std::vector<topology::DraDevice> devices;
  std::vector<topology::DraDeviceClass> classes;
};

Devices CapturedDevices() {
  Devices out;
  absl::StatusOr<wire::DraObjects> slices =
      wire::ParseDraList(JsonOrFail(Testdata("dra/list-resourceslices.v1.json")));
  absl::StatusOr<wire::DraObjects> classes =
      wire::ParseDraList(JsonOrFail(Testdata("dra/list-deviceclasses.v1.json")));
  EXPECT_TRUE(slices.ok() && classes.ok());
  if (!slices.ok() || !classes.ok()) return out;
  out.devices = topology::CurrentDevices(slices->slices);
  out.classes = classes->classes;
  return out;
}

std::string Claim(const std::string& device_class) {
  return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
         "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: " +
         device_class + "}}]}}\n";
}

// The names of the devices that request 0 of `claim` may be given.
std::vector<std::string> Matching(const rapidjson::Value& claim, const Devices& captured) {
  std::vector<std::string> out;
  absl::StatusOr<topology::DraClaim> parsed = wire::ParseResourceClaim(claim);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok() || parsed->requests.empty()) return out;
  const topology::DraRequest& request = parsed->requests[0];
  const topology::DraDeviceClass* device_class = nullptr;
  for (const topology::DraDeviceClass& c : captured.classes) {
    if (c.name == request.device_class) device_class = &c;
  }
  EXPECT_NE(device_class, nullptr) << request.device_class;
  for (const topology::DraDevice& device : captured.devices) {
    topology::SelectorResult r = topology::DeviceMatches(device, device_class, request.selectors);
    EXPECT_TRUE(r.outcome == SelectorOutcome::kMatch || r.outcome == SelectorOutcome::kNoMatch)
        << device.name << ": " << r.detail;
    if (r.outcome == SelectorOutcome::kMatch) out.push_back(device.name);
  }
  return out;
}

TEST(ClaimSelectorsEvalTest, InjectedSelectorsAdmitOnlyWhatTheTenantMayHave) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const Devices captured = CapturedDevices();
  ASSERT_EQ(captured.devices.size(), 3u);
  const std::string k1g = "gpu-0-mig-1g10gb-19-0", k3g = "gpu-0-mig-3g40gb-9-4", kGpu = "gpu-1";
  // Without the tenant's selectors, each class alone.
  EXPECT_EQ(Matching(Yaml(Claim("mig.nvidia.com")), captured),
            (std::vector<std::string>{k1g, k3g}));
  EXPECT_EQ(Matching(Yaml(Claim("gpu.nvidia.com")), captured), (std::vector<std::string>{kGpu}));

  struct Case {
    std::string ns, device_class;
    std::vector<std::string> want;
  } cases[] = {
      // MIG only, profiles 1g.10gb and 2g.20gb, at most 20 GiB per device.
      {"inference", "mig.nvidia.com", {k1g}},
      {"inference", "gpu.nvidia.com", {}},
      // Full GPUs only (time-slicing and MPS share a whole GPU).
      {"notebooks", "gpu.nvidia.com", {kGpu}},
      {"notebooks", "mig.nvidia.com", {}},
      // Any type, at most 40 GiB per device: the 3g.40gb (39.5 GiB) fits, the 80 GB GPU not.
      {"training", "mig.nvidia.com", {k1g, k3g}},
      {"training", "gpu.nvidia.com", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ns + " " + c.device_class);
    ReviewOptions o;
    o.ns = c.ns;
    o.group = "resource.k8s.io";
    o.kind = "ResourceClaim";
    o.resource = "resourceclaims";
    Mutated m = MutateAndApply(Yaml(Claim(c.device_class)), *policy, o);  // and a no-op twice
    EXPECT_EQ(Matching(m.object, captured), c.want);
  }
}

}  // namespace claim_selectors_eval_test
