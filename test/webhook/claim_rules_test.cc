// ResourceClaims and ResourceClaimTemplates with the NVIDIA DRA driver's sharing config, in each
// resource.k8s.io version, through both webhooks.
#include "webhook/claim_rules.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace {

using webhook::ReviewKind;
using webhook_test::At;
using webhook_test::Json;
using webhook_test::MutateAndApply;
using webhook_test::Mutated;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

struct ClaimShape {
  std::string version = "v1";
  std::string kind = "ResourceClaim";
  std::string params_kind = "GpuConfig";
  std::string device_class = "gpu.nvidia.com";
};

// A claim (or template) named "c" with one device request and, when `sharing` is not empty, one
// gpu.nvidia.com config whose parameters.sharing is `sharing` (a YAML flow map).
std::string Claim(const std::string& sharing, const ClaimShape& s = {}) {
  const bool tmpl = s.kind == "ResourceClaimTemplate";
  const std::string in = tmpl ? "    " : "  ";  // the claim spec's indentation
  std::string request =
      s.version == "v1beta1"
          ? absl::StrCat(in, "  - {name: gpu, deviceClassName: ", s.device_class, "}\n")
          : absl::StrCat(in, "  - {name: gpu, exactly: {deviceClassName: ", s.device_class, "}}\n");
  std::string config;
  if (!sharing.empty()) {
    config =
        absl::StrCat(in, "  config:\n", in, "  - requests: [gpu]\n", in, "    opaque:\n", in,
                     "      driver: gpu.nvidia.com\n", in, "      parameters:\n", in,
                     "        apiVersion: resource.nvidia.com/v1beta1\n", in,
                     "        kind: ", s.params_kind, "\n", in, "        sharing: ", sharing, "\n");
  }
  return absl::StrCat("apiVersion: resource.k8s.io/", s.version, "\nkind: ", s.kind,
                      "\nmetadata: {name: c}\nspec:\n", tmpl ? "  spec:\n" : "", in, "devices:\n",
                      in, "  requests:\n", request, config);
}

ReviewOptions ClaimReview(const std::string& ns, const ClaimShape& s = {}) {
  ReviewOptions o;
  o.ns = ns;
  o.group = "resource.k8s.io";
  o.version = s.version;
  o.kind = s.kind;
  o.resource = s.kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates";
  return o;
}

const char kMps50[] =
    "{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 50, "
    "defaultPinnedDeviceMemoryLimit: 20Gi}}";

TEST(ClaimRulesTest, Validate) {
  topology::Policy policy = TestPolicy();
  ClaimShape mig_device;
  mig_device.params_kind = "MigDeviceConfig";
  mig_device.device_class = "mig.nvidia.com";
  ClaimShape v1beta1_template;
  v1beta1_template.version = "v1beta1";
  v1beta1_template.kind = "ResourceClaimTemplate";
  ClaimShape v1beta2;
  v1beta2.version = "v1beta2";
  ClaimShape fpga;
  fpga.device_class = "fpga.example.com";
  struct Case {
    std::string name, ns, yaml;
    ClaimShape shape;
    bool allowed;
    std::string rule;
    std::string message = "";                // exact, when given
    std::vector<std::string> contains = {};  // substrings
    std::vector<std::string> warnings = {};
  } cases[] = {
      {"untrusted, no sharing", "acme", Claim(""), {}, true, ""},
      {"untrusted, time-slicing",
       "acme",
       Claim("{strategy: TimeSlicing, timeSlicingConfig: {interval: Short}}"),
       {},
       false,
       "claim-sharing",
       "[claim-sharing] ResourceClaim \"c\" config[0] (GpuConfig) asks for TimeSlicing sharing, "
       "but "
       "tenant \"acme\" (tier untrusted) may use only exclusive, mig; remove the sharing settings "
       "to get a dedicated device, or claim a MIG device"},
      {"untrusted, MPS",
       "acme",
       Claim(kMps50),
       {},
       false,
       "claim-sharing",
       "",
       {"asks for MPS sharing"}},
      {"untrusted, time-sliced MIG device",
       "acme",
       Claim("{strategy: TimeSlicing}", mig_device),
       mig_device,
       false,
       "claim-sharing",
       "",
       {"config[0] (MigDeviceConfig) asks for TimeSlicing"}},
      {"untrusted template (v1beta1), MPS",
       "acme",
       Claim(kMps50, v1beta1_template),
       v1beta1_template,
       false,
       "claim-sharing",
       "",
       {"[claim-sharing] ResourceClaimTemplate \"c\" config[0]"}},
      {"trusted, time-slicing", "research", Claim("{strategy: TimeSlicing}"), {}, true, ""},
      {"trusted, MPS within limits", "research", Claim(kMps50), {}, true, ""},
      {"trusted, MPS within limits (v1beta2)", "research", Claim(kMps50, v1beta2), v1beta2, true,
       ""},
      {"MPS thread percentage over the limit",
       "research",
       Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 80, "
             "defaultPinnedDeviceMemoryLimit: 10Gi}}"),
       {},
       false,
       "claim-mps-limits",
       "[claim-mps-limits] ResourceClaim \"c\" config[0] (GpuConfig) sets "
       "defaultActiveThreadPercentage 80, but tenant \"research\" allows at most 50; set it to 50 "
       "or less"},
      {"MPS pinned memory over the limit",
       "research",
       Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 10, "
             "defaultPinnedDeviceMemoryLimit: 32Gi}}"),
       {},
       false,
       "claim-mps-limits",
       "",
       {"sets defaultPinnedDeviceMemoryLimit 32768Mi, but tenant \"research\" allows at most "
        "20480Mi; set it to 20480Mi or less"}},
      {"MPS per-device pinned memory over the limit",
       "research",
       Claim(
           "{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 10, "
           "defaultPinnedDeviceMemoryLimit: 1Gi, defaultPerDevicePinnedMemoryLimit: {'0': 24Gi}}}"),
       {},
       false,
       "claim-mps-limits",
       "",
       {"sets defaultPerDevicePinnedMemoryLimit[0] 24576Mi"}},
      {"MPS without limits in the claim",
       "research",
       Claim("{strategy: MPS}"),
       {},
       false,
       "claim-mps-limits",
       "[claim-mps-limits] ResourceClaim \"c\" config[0] (GpuConfig) sets no "
       "defaultActiveThreadPercentage, but tenant \"research\" caps it at 50; set "
       "defaultActiveThreadPercentage: 50 or less (and 1 more)"},
      {"MPS percentage that is not a number",
       "research",
       Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: fifty, "
             "defaultPinnedDeviceMemoryLimit: 1Gi}}"),
       {},
       false,
       "claim-mps-limits",
       "",
       {"is not a whole number"}},
      {"MPS pinned memory that is not a quantity",
       "research",
       Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 5, "
             "defaultPinnedDeviceMemoryLimit: lots}}"),
       {},
       false,
       "claim-mps-limits",
       "",
       {"defaultPinnedDeviceMemoryLimit: ", "such as 8Gi"}},
      {"MPS relying on the driver's defaults, no tenant limits",
       "gpu-ops",
       Claim("{strategy: MPS}"),
       {},
       true,
       "",
       "",
       {},
       {"MPS claim relies on the driver default for defaultActiveThreadPercentage: every client "
        "may use all SMs",
        "MPS claim relies on the driver default for defaultPinnedDeviceMemoryLimit: no cap on a "
        "client's GPU memory"}},
      {"unknown tenant, NVIDIA claim",
       "nowhere",
       Claim(""),
       {},
       false,
       "unknown-tenant",
       "[unknown-tenant] namespace \"nowhere\" belongs to no tenant and the policy denies GPUs to "
       "unknown tenants, but ResourceClaim \"c\" uses device class gpu.nvidia.com; ask the GPU "
       "platform team to add the namespace to a tenant"},
      // An allow-list: a class the policy does not map is not known to be harmless.
      {"unknown tenant, a class the policy does not map", "nowhere", Claim("", fpga), fpga, false,
       "unknown-tenant",
       "[unknown-tenant] namespace \"nowhere\" belongs to no tenant and the policy denies GPUs to "
       "unknown tenants, but ResourceClaim \"c\" uses device class fpga.example.com (which the "
       "policy does not map); ask the GPU platform team to add the namespace to a tenant"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document claim = Yaml(c.yaml);
    Reply r = RunReview(claim, ReviewKind::kValidate, policy, ClaimReview(c.ns, c.shape));
    ASSERT_EQ(r.http_status, 200);
    EXPECT_EQ(r.allowed, c.allowed) << r.message;
    EXPECT_FALSE(r.has_patch);
    if (!c.message.empty()) {
      EXPECT_EQ(r.message, c.message);
    }
    if (!c.allowed) {
      EXPECT_EQ(r.message.rfind(absl::StrCat("[", c.rule, "] "), 0), 0u) << r.message;
    }
    for (const std::string& part : c.contains) {
      EXPECT_NE(r.message.find(part), std::string::npos) << part << "\n" << r.message;
    }
    EXPECT_EQ(r.warnings, c.warnings);
    for (const std::string& w : r.warnings) EXPECT_LE(w.size(), 120u) << w;
  }
}

TEST(ClaimRulesTest, UpdateIsNotJudged) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document claim = Yaml(Claim("{strategy: TimeSlicing}"));
  ReviewOptions o = ClaimReview("acme");
  o.operation = "UPDATE";
  o.old_object = &claim;
  Reply r = RunReview(claim, ReviewKind::kValidate, policy, o);
  EXPECT_TRUE(r.allowed);
  Mutated m = MutateAndApply(claim, policy, o);
  ASSERT_TRUE(m.reply.has_patch);
  EXPECT_TRUE(m.reply.patch == Json(R"([{"op":"add","path":"/metadata/labels","value":
      {"gpu-tenancy.io/tenant":"acme","gpu-tenancy.io/tier":"untrusted"}}])"))
      << common::ToJson(m.reply.patch);
}

// The patch without the device-selector operations (the selectors and their annotation), which
// claim_selectors_test covers; what is left is labels and MPS limits.
rapidjson::Document WithoutSelectorOps(const rapidjson::Value& patch) {
  rapidjson::Document out(rapidjson::kArrayType);
  for (const rapidjson::Value& op : patch.GetArray()) {
    absl::string_view path = common::StringOr(op, "path");
    if (absl::EndsWith(path, "/selectors") || absl::StartsWith(path, "/metadata/annotations")) {
      continue;
    }
    out.PushBack(rapidjson::Value(op, out.GetAllocator()), out.GetAllocator());
  }
  return out;
}

TEST(ClaimRulesTest, MutateWritesTenantMpsLimits) {
  topology::Policy policy = TestPolicy();
  ClaimShape tmpl;
  tmpl.kind = "ResourceClaimTemplate";
  tmpl.version = "v1beta2";
  const std::string labels =
      R"({"op":"add","path":"/metadata/labels","value":{"gpu-tenancy.io/tenant":"research","gpu-tenancy.io/tier":"trusted"}})";
  struct Case {
    std::string name, ns, yaml;
    ClaimShape shape;
    std::string want_patch;
    std::vector<std::string> warnings;
  } cases[] = {
      {"no mpsConfig: both limits",
       "research",
       Claim("{strategy: MPS}"),
       {},
       absl::StrCat(
           "[", labels,
           R"(,{"op":"add","path":"/spec/devices/config/0/opaque/parameters/sharing/mpsConfig",
          "value":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"20480Mi"}}])"),
       {"MPS claim had no defaultActiveThreadPercentage; set to 50, the limit of tenant "
        "\"research\"",
        "MPS claim had no defaultPinnedDeviceMemoryLimit; set to 20480Mi, the limit of tenant "
        "\"research\""}},
      {"template: the claim spec is under spec.spec",
       "research",
       Claim("{strategy: MPS}", tmpl),
       tmpl,
       absl::StrCat(
           "[", labels,
           R"(,{"op":"add","path":"/spec/spec/devices/config/0/opaque/parameters/sharing/mpsConfig",
          "value":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"20480Mi"}}])"),
       {"MPS claim had no defaultActiveThreadPercentage; set to 50, the limit of tenant "
        "\"research\"",
        "MPS claim had no defaultPinnedDeviceMemoryLimit; set to 20480Mi, the limit of tenant "
        "\"research\""}},
      {"one limit missing",
       "research",
       Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 30}}"),
       {},
       absl::StrCat("[", labels, R"(,{"op":"add",
          "path":"/spec/devices/config/0/opaque/parameters/sharing/mpsConfig/defaultPinnedDeviceMemoryLimit",
          "value":"20480Mi"}])"),
       {"MPS claim had no defaultPinnedDeviceMemoryLimit; set to 20480Mi, the limit of tenant "
        "\"research\""}},
      {"complete: labels only", "research", Claim(kMps50), {}, absl::StrCat("[", labels, "]"), {}},
      {"time-slicing: labels only",
       "research",
       Claim("{strategy: TimeSlicing}"),
       {},
       absl::StrCat("[", labels, "]"),
       {}},
      {"tier without MPS: labels only (validation refuses it)",
       "acme",
       Claim("{strategy: MPS}"),
       {},
       R"([{"op":"add","path":"/metadata/labels","value":{"gpu-tenancy.io/tenant":"acme","gpu-tenancy.io/tier":"untrusted"}}])",
       {}},
      {"tenant without MPS limits: labels only",
       "gpu-ops",
       Claim("{strategy: MPS}"),
       {},
       R"([{"op":"add","path":"/metadata/labels","value":{"gpu-tenancy.io/tenant":"gpu-platform","gpu-tenancy.io/tier":"platform"}}])",
       {}},
      {"unknown tenant: nothing", "nowhere", Claim("{strategy: MPS}"), {}, "", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document claim = Yaml(c.yaml);
    ReviewOptions o = ClaimReview(c.ns, c.shape);
    Mutated m = MutateAndApply(claim, policy, o);
    if (c.want_patch.empty()) {
      EXPECT_FALSE(m.reply.has_patch);
    } else {
      ASSERT_TRUE(m.reply.has_patch);
      EXPECT_TRUE(WithoutSelectorOps(m.reply.patch) == Json(c.want_patch))
          << common::ToJson(m.reply.patch);
    }
    EXPECT_EQ(m.reply.warnings, c.warnings);
    if (c.ns == "research") {
      // The mutated claim passes validation without leaning on defaults.
      Reply v = RunReview(m.object, ReviewKind::kValidate, policy, o);
      EXPECT_TRUE(v.allowed) << v.message;
      EXPECT_TRUE(v.warnings.empty());
    }
  }
}

TEST(ClaimRulesTest, ParseClaimView) {
  rapidjson::Document claim =
      Yaml(Claim("{strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 5}}"));
  webhook::ClaimView view = webhook::ParseClaimView(claim, "ResourceClaim", {});
  EXPECT_EQ(view.name, "c");
  EXPECT_EQ(view.gpu_use, "device class gpu.nvidia.com");
  ASSERT_EQ(view.sharing.size(), 1u);
  EXPECT_EQ(view.sharing[0].strategy, "MPS");
  EXPECT_EQ(view.sharing[0].parameters_kind, "GpuConfig");
  EXPECT_EQ(view.sharing[0].sharing_pointer, "/spec/devices/config/0/opaque/parameters/sharing");
  ASSERT_NE(view.sharing[0].mps_config, nullptr);

  // Old shape: a resource class; a config for another driver is ignored.
  rapidjson::Document old = Yaml(
      "apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClaim\nmetadata: {generateName: w-}\n"
      "spec: {resourceClassName: nvidia-mig-1g10gb}\n");
  view = webhook::ParseClaimView(old, "ResourceClaim", {});
  EXPECT_EQ(view.name, "w-");
  EXPECT_EQ(view.gpu_use, "resource class nvidia-mig-1g10gb");
  EXPECT_TRUE(view.sharing.empty());

  rapidjson::Document other = Yaml(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x}\nspec:\n"
      "  devices:\n    requests:\n    - name: nic\n      firstAvailable:\n"
      "      - {name: a, deviceClassName: nic.example.com}\n"
      "    config:\n    - opaque: {driver: nic.example.com, parameters: {sharing: {strategy: "
      "MPS}}}\n");
  view = webhook::ParseClaimView(other, "ResourceClaim", {});
  EXPECT_EQ(view.gpu_use, "");
  EXPECT_TRUE(view.sharing.empty());
}

}  // namespace
