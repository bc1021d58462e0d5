// Tenant limits as CEL selectors in DRA claims: which selectors a tier and tenant get, the one
// selector per request without what its class implies, where the mutating webhook writes it in
// each claim shape, that writing them twice changes nothing, and
// the validating webhook's literal checks.
#include "webhook/claim_selectors.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/review.h"

namespace claim_selectors_test {

using webhook::ReviewKind;
using webhook::TenantSelector;
using webhook_test::At;
using webhook_test::MutateAndApply;
using webhook_test::Mutated;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

// One tier per device-type combination, and tenants with and without limits.
constexpr char kPolicy[] = R"(tiers:
  - {name: mig-only, modes: [mig, mig-shared]}
  - {name: shared-only, modes: [timeslice, mps]}
  - {name: everything, modes: [exclusive, mig, mig-shared, mps, timeslice]}
tenants:
  - name: inference
    tier: mig-only
    namespaces: [inference]
    limits: {migProfiles: [1g.10gb, 2g.20gb], gpuMemoryPerPod: 20Gi}
  - {name: notebooks, tier: shared-only, namespaces: [notebooks]}
  - {name: research, tier: everything, namespaces: [research]}
unknownTenant: deny
)";

topology::Policy SelectorPolicy() {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPolicy);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy();
}

ReviewOptions ClaimOptions(const std::string& ns, const std::string& version = "v1",
                           const std::string& kind = "ResourceClaim") {
  ReviewOptions o;
  o.ns = ns;
  o.group = "resource.k8s.io";
  o.version = version;
  o.kind = kind;
  o.resource = kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates";
  return o;
}

std::vector<std::string> Expressions(const rapidjson::Value* selectors) {
  std::vector<std::string> out;
  if (!selectors || !selectors->IsArray()) return out;
  for (const rapidjson::Value& s : selectors->GetArray()) {
    const rapidjson::Value* e = At(s, "/cel/expression");
    out.emplace_back(e && e->IsString() ? e->GetString() : "?");
  }
  return out;
}

std::vector<std::string> Strings(const rapidjson::Value* list) {
  std::vector<std::string> out;
  if (!list || !list->IsArray()) return out;
  for (const rapidjson::Value& v : list->GetArray()) out.emplace_back(v.GetString());
  return out;
}

std::vector<std::string> TenantExpressions(const topology::Policy& policy, const std::string& ns) {
  std::vector<std::string> out;
  for (const TenantSelector& s :
       webhook::TenantSelectors(topology::ResolveTenant(policy, ns, {}))) {
    out.push_back(s.expression);
  }
  return out;
}

const char kMigOnly[] =
    R"(device.driver == "gpu.nvidia.com" && "type" in device.attributes["gpu.nvidia.com"] && )"
    R"(device.attributes["gpu.nvidia.com"].type == "mig")";
const char kInferenceProfiles[] =
    R"(("type" in device.attributes["gpu.nvidia.com"] && )"
    R"(device.attributes["gpu.nvidia.com"].type != "mig") || )"
    R"(("profile" in device.attributes["gpu.nvidia.com"] && )"
    R"(device.attributes["gpu.nvidia.com"].profile in ["1g.10gb", "2g.20gb"]))";
const char kInferenceMemory[] =
    R"("memory" in device.capacity["gpu.nvidia.com"] && )"
    R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20480Mi")) <= 0)";

TEST(ClaimSelectorsTest, WhatEachTierAndTenantGets) {
  topology::Policy policy = SelectorPolicy();
  EXPECT_EQ(TenantExpressions(policy, "inference"),
            (std::vector<std::string>{kMigOnly, kInferenceProfiles, kInferenceMemory}));
  EXPECT_EQ(
      TenantExpressions(policy, "notebooks"),
      (std::vector<std::string>{
          R"(device.driver == "gpu.nvidia.com" && "type" in device.attributes["gpu.nvidia.com"] && )"
          R"(device.attributes["gpu.nvidia.com"].type == "gpu")"}));
  EXPECT_TRUE(TenantExpressions(policy, "research").empty()) << "all types, no limits";
  EXPECT_TRUE(TenantExpressions(policy, "nowhere").empty()) << "a denied tenant";

  std::vector<TenantSelector> why =
      webhook::TenantSelectors(topology::ResolveTenant(policy, "inference", {}));
  ASSERT_EQ(why.size(), 3u);
  EXPECT_EQ(why[0].limit, "device-types");
  EXPECT_EQ(why[0].why, "tier mig-only may use mig, mig-shared: device types mig");
  EXPECT_EQ(why[1].why, "tenant inference may use MIG profiles 1g.10gb, 2g.20gb");
  EXPECT_EQ(why[2].why, "tenant inference may use at most 20480Mi of GPU memory per pod");
}

TEST(ClaimSelectorsTest, OneSelectorPerRequestWithoutWhatTheClassImplies) {
  using webhook::RequestExpression;
  topology::Policy policy = SelectorPolicy();
  const std::vector<TenantSelector> inference =
      webhook::TenantSelectors(topology::ResolveTenant(policy, "inference", {}));
  // mig.nvidia.com hands out MIG devices only: device-types is moot, the profiles and the
  // memory cap are one expression.
  EXPECT_EQ(RequestExpression(inference, "mig.nvidia.com"),
            absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory));
  // A class the project cannot read gets every limit.
  EXPECT_EQ(RequestExpression(inference, "mig-1g-12gb.gpu.nvidia.com"),
            absl::StrCat(kMigOnly, " && (", kInferenceProfiles, ") && ", kInferenceMemory));
  // Whole GPUs the tier may not use: device-types stays (validation denies it anyway), the
  // profiles are moot.
  EXPECT_EQ(RequestExpression(inference, "gpu.nvidia.com"),
            absl::StrCat(kMigOnly, " && ", kInferenceMemory));
  const std::vector<TenantSelector> notebooks =
      webhook::TenantSelectors(topology::ResolveTenant(policy, "notebooks", {}));
  EXPECT_EQ(RequestExpression(notebooks, "gpu.nvidia.com"), "");
  EXPECT_EQ(RequestExpression(notebooks, "vfio.gpu.nvidia.com"), notebooks[0].expression);

  // Written so: nothing into a request whose class implies every limit, and the annotation
  // says which requests each limit went into.
  Mutated m = MutateAndApply(Yaml(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}},
                            {name: other, exactly: {deviceClassName: my-gpus.example.com}}]}}
)"),
                             policy, ClaimOptions("notebooks"));
  EXPECT_EQ(At(m.object, "/spec/devices/requests/0/exactly/selectors"), nullptr);
  rapidjson::Document record = webhook_test::Json(
      At(m.object, "/metadata/annotations/gpu-tenancy.io~1selectors")->GetString());
  EXPECT_EQ(At(record, "/selectors")->Size(), 1u);
  EXPECT_EQ(At(record, "/selectors/0/requests")->Size(), 0u);
}

TEST(ClaimSelectorsTest, InjectedIntoEveryShapeOfRequest) {
  topology::Policy policy = SelectorPolicy();
  const std::string mig_class = absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory);
  const std::string all =
      absl::StrCat(kMigOnly, " && (", kInferenceProfiles, ") && ", kInferenceMemory);
  struct Case {
    std::string name, version, kind, yaml;
    std::vector<std::string> pointers;  // where the selectors must be, in order
    std::vector<std::vector<std::string>> want;
    std::vector<std::string> device_types_into;  // the requests device-types was written into
  } cases[] = {
      {"v1 exactly with a selector of its own",
       "v1",
       "ResourceClaim",
       R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: mig
      exactly:
        deviceClassName: mig.nvidia.com
        selectors: [{cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]
)",
       {"/spec/devices/requests/0/exactly/selectors"},
       {{"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", mig_class}},
       {}},
      {"firstAvailable: each subrequest; another driver's class untouched",
       "v1",
       "ResourceClaim",
       R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, annotations: {team: a}}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: mig.nvidia.com}
      - {name: small, deviceClassName: mig-1g-12gb.gpu.nvidia.com}
    - name: channel
      exactly: {deviceClassName: compute-domain-default-channel.nvidia.com}
)",
       {"/spec/devices/requests/0/firstAvailable/0/selectors",
        "/spec/devices/requests/0/firstAvailable/1/selectors",
        "/spec/devices/requests/1/exactly/selectors"},
       {{mig_class}, {all}, {}},
       {{"gpu/small"}}},
      {"v1beta1 flat request in a template",
       "v1beta1",
       "ResourceClaimTemplate",
       R"(apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: t}
spec:
  spec:
    devices:
      requests:
      - {name: mig, deviceClassName: mig.nvidia.com}
)",
       {"/spec/spec/devices/requests/0/selectors"},
       {{mig_class}},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Mutated m = MutateAndApply(Yaml(c.yaml), policy, ClaimOptions("inference", c.version, c.kind));
    for (size_t i = 0; i < c.pointers.size(); ++i) {
      EXPECT_EQ(Expressions(At(m.object, c.pointers[i])), c.want[i]) << c.pointers[i];
    }
    const rapidjson::Value* annotation =
        At(m.object, "/metadata/annotations/gpu-tenancy.io~1selectors");
    ASSERT_NE(annotation, nullptr);
    rapidjson::Document record = webhook_test::Json(annotation->GetString());
    EXPECT_STREQ(At(record, "/tenant")->GetString(), "inference");
    EXPECT_STREQ(At(record, "/tier")->GetString(), "mig-only");
    EXPECT_EQ(At(record, "/selectors")->Size(), 3u);
    EXPECT_STREQ(At(record, "/selectors/1/limit")->GetString(), "mig-profiles");
    EXPECT_EQ(Strings(At(record, "/selectors/0/requests")), c.device_types_into);
  }
}

// Claim "c" with request "mig" (class mig.nvidia.com) and then `more_requests` (YAML list items).
std::string MigClaimAnd(const std::string& more_requests) {
  return absl::StrCat(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - {name: mig, exactly: {deviceClassName: mig.nvidia.com}}
)",
                      more_requests);
}

// A plan in words: the tenant, the tier, and per kind of class its expression and limits.
std::string Described(const webhook::TenantSelectorPlan& plan) {
  std::string out = absl::StrCat(plan.tenant, "/", plan.tier, ":");
  for (const auto& both : plan.by_class_type) {
    for (const webhook::TenantSelectorPlan::ForClass& c : both) {
      absl::StrAppend(&out, " [", c.expression, "] limits");
      for (size_t i : c.limits) absl::StrAppend(&out, " ", plan.selectors[i].limit);
    }
  }
  return out;
}

// serve plans every tenant's selectors once per policy: a claim then gets exactly what planning
// for it alone gives, for each tenant (the unknown one too) and class, and a plan made for one
// policy is never used for another.
TEST(ClaimSelectorsTest, PlannedOncePerPolicyAsForEachClaimAlone) {
  auto policy = std::make_shared<const topology::Policy>(SelectorPolicy());
  const webhook::TenantSelectorPlans plans(policy);
  for (const char* ns : {"inference", "notebooks", "research", "nowhere"}) {
    for (bool shared : {false, true}) {
      SCOPED_TRACE(absl::StrCat(ns, shared ? ", shared devices published" : ""));
      const topology::TenantRef tenant = topology::ResolveTenant(*policy, ns, {});
      const webhook::TenantSelectorPlan* ahead = plans.For(tenant, shared);
      ASSERT_NE(ahead, nullptr);
      EXPECT_EQ(Described(*ahead), Described(webhook::PlanTenantSelectors(tenant, shared)));
    }
  }
  const webhook::TenantSelectorPlan* inference =
      plans.For(topology::ResolveTenant(*policy, "inference", {}), false);
  ASSERT_NE(inference, nullptr);
  EXPECT_EQ(inference->For("mig.nvidia.com").expression,
            absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory));
  EXPECT_EQ(inference->For("my-gpus.example.com").limits.size(), 3u);

  const std::string claim = MigClaimAnd(R"(    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.nvidia.com}
      - {name: other, deviceClassName: my-gpus.example.com}
)");
  const topology::ClusterSnapshot snapshot;
  for (const char* ns : {"inference", "notebooks", "research", "nowhere"}) {
    SCOPED_TRACE(ns);
    const std::string review = webhook_test::MakeReview(Yaml(claim), ClaimOptions(ns));
    EXPECT_EQ(webhook::Review(review, ReviewKind::kMutate, *policy, snapshot, {}, &plans).body,
              webhook::Review(review, ReviewKind::kMutate, *policy, snapshot).body);
  }

  // A reload: the same names, another memory cap, and a tier for namespaces of no tenant.
  absl::StatusOr<topology::Policy> reloaded = common::LoadPolicy(absl::StrReplaceAll(
      kPolicy, {{"20Gi", "40Gi"}, {"unknownTenant: deny", "unknownTenant: shared-only"}}));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  for (const char* ns : {"inference", "nowhere"}) {
    EXPECT_EQ(plans.For(topology::ResolveTenant(*reloaded, ns, {}), false), nullptr) << ns;
  }
  const std::string review = webhook_test::MakeReview(Yaml(claim), ClaimOptions("inference"));
  const std::string reply =
      webhook::Review(review, ReviewKind::kMutate, *reloaded, snapshot, {}, &plans).body;
  EXPECT_EQ(reply, webhook::Review(review, ReviewKind::kMutate, *reloaded, snapshot).body);
  Reply decoded = webhook_test::Decode(
      webhook::Review(review, ReviewKind::kMutate, *reloaded, snapshot, {}, &plans));
  const std::string patch = common::ToJson(decoded.patch);
  EXPECT_TRUE(absl::StrContains(patch, "40960Mi")) << patch;
  EXPECT_FALSE(absl::StrContains(patch, "20480Mi")) << patch;
}

// The cluster's MIG devices, each as {profile, memory} ("" memory: none published).
topology::ClusterSnapshot MigDevices(const topology::Policy& policy,
                                     const std::vector<std::pair<std::string, std::string>>& migs) {
  std::vector<topology::DraDevice> devices;
  for (const auto& [profile, memory] : migs) {
    topology::DraDevice d =
        testing_dra::NvidiaDevice("node-a", absl::StrCat("mig-", devices.size()), "mig", profile);
    if (!memory.empty()) {
      d.capacity[std::string(topology::kNvidiaMemoryCapacity)] = *topology::Quantity::Parse(memory);
    }
    devices.push_back(std::move(d));
  }
  topology::ClusterData data;
  data.dra_slices.push_back(testing_dra::NodeSlice("node-a", std::move(devices)));
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

// gpu-memory is left out of a request whose class hands out one device type when every device
// of that type published now is within the cap (each selector costs the allocator a CEL
// evaluation per device it considers); the annotation says for which requests. A class of no
// known type, a device over the cap or one publishing no memory keeps it.
TEST(ClaimSelectorsTest, NoMemoryCapWhereThePublishedDevicesImplyIt) {
  topology::Policy policy = SelectorPolicy();  // inference: MIG only, at most 20Gi
  const rapidjson::Document claim = Yaml(
      MigClaimAnd("    - {name: other, exactly: {deviceClassName: mig-1g-12gb.gpu.nvidia.com}}\n"));
  const std::string all =
      absl::StrCat(kMigOnly, " && (", kInferenceProfiles, ") && ", kInferenceMemory);
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> migs;
    std::string mig_selector;
    std::vector<std::string> implied;  // gpu-memory's impliedBySlices
  } cases[] = {
      {"every MIG device within 20Gi",
       {{"1g.10gb", "9984Mi"}, {"2g.20gb", "20096Mi"}},
       kInferenceProfiles,
       {"mig"}},
      {"one over it",
       {{"1g.10gb", "9984Mi"}, {"3g.40gb", "40448Mi"}},
       absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory),
       {}},
      {"one that publishes no memory",
       {{"1g.10gb", "9984Mi"}, {"1g.10gb", ""}},
       absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory),
       {}},
      {"no MIG device at all",
       {},
       absl::StrCat("(", kInferenceProfiles, ") && ", kInferenceMemory),
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const topology::ClusterSnapshot snapshot = MigDevices(policy, c.migs);
    Reply reply =
        RunReview(claim, ReviewKind::kMutate, policy, ClaimOptions("inference"), snapshot);
    ASSERT_TRUE(reply.has_patch);
    rapidjson::Document mutated;
    mutated.CopyFrom(claim, mutated.GetAllocator());
    ASSERT_TRUE(webhook::ApplyPatch(reply.patch, mutated).ok());
    EXPECT_EQ(Expressions(At(mutated, "/spec/devices/requests/0/exactly/selectors")),
              std::vector<std::string>{c.mig_selector});
    EXPECT_EQ(Expressions(At(mutated, "/spec/devices/requests/1/exactly/selectors")),
              std::vector<std::string>{all});
    rapidjson::Document record = webhook_test::Json(
        At(mutated, "/metadata/annotations/gpu-tenancy.io~1selectors")->GetString());
    ASSERT_STREQ(At(record, "/selectors/2/limit")->GetString(), "gpu-memory");
    EXPECT_EQ(Strings(At(record, "/selectors/2/impliedBySlices")), c.implied);
    const std::vector<std::string> written = c.implied.empty()
                                                 ? std::vector<std::string>{"mig", "other"}
                                                 : std::vector<std::string>{"other"};
    EXPECT_EQ(Strings(At(record, "/selectors/2/requests")), written);
  }
}

TEST(ClaimSelectorsTest, LeftAlone) {
  topology::Policy policy = SelectorPolicy();
  const std::string claim = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}
)";
  // A tier that allows every device type, for a tenant without limits: only labels.
  Mutated research = MutateAndApply(Yaml(claim), policy, ClaimOptions("research"));
  EXPECT_EQ(At(research.object, "/spec/devices/requests/0/exactly/selectors"), nullptr);
  EXPECT_EQ(At(research.object, "/metadata/annotations"), nullptr);

  // The scheduler's own claim for an extended resource: it has chosen the devices already.
  rapidjson::Document made = Yaml(claim);
  rapidjson::Document annotations =
      Yaml("{resource.kubernetes.io/extended-resource-claim: \"true\"}");
  made["metadata"].AddMember("annotations", rapidjson::Value(annotations, made.GetAllocator()),
                             made.GetAllocator());
  rapidjson::Document scheduler = Yaml("{username: system:kube-scheduler}");
  ReviewOptions from_scheduler = ClaimOptions("inference");
  from_scheduler.user_info = &scheduler;
  Mutated scheduler_made = MutateAndApply(made, policy, from_scheduler);
  EXPECT_EQ(At(scheduler_made.object, "/spec/devices/requests/0/exactly/selectors"), nullptr);

  // The same annotation from anyone else is the tenant's own claim: its selectors are written.
  rapidjson::Document tenant = Yaml("{username: \"system:serviceaccount:inference:default\"}");
  ReviewOptions from_tenant = ClaimOptions("inference");
  from_tenant.user_info = &tenant;
  Mutated forged = MutateAndApply(made, policy, from_tenant);
  ASSERT_NE(At(forged.object, "/spec/devices/requests/0/exactly/selectors"), nullptr);
  EXPECT_GT(At(forged.object, "/spec/devices/requests/0/exactly/selectors")->Size(), 0u);

  // UPDATE: the spec is immutable, so only labels could change.
  ReviewOptions update = ClaimOptions("inference");
  update.operation = "UPDATE";
  rapidjson::Document old = Yaml(claim);
  update.old_object = &old;
  Mutated updated = MutateAndApply(Yaml(claim), policy, update);
  EXPECT_EQ(At(updated.object, "/spec/devices/requests/0/exactly/selectors"), nullptr);
}

TEST(ClaimSelectorsTest, PinnedProfiles) {
  using Pinned = std::optional<std::vector<std::string>>;
  struct Row {
    const char* expression;
    Pinned want;
  } rows[] = {
      {"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", Pinned({"1g.10gb"})},
      {R"(device.attributes["gpu.nvidia.com"].profile=="3g.40gb")", Pinned({"3g.40gb"})},
      {"'2g.20gb' == device.attributes['gpu.nvidia.com'].profile", Pinned({"2g.20gb"})},
      {"device.attributes['gpu.nvidia.com']['profile'] == '1g.10gb'", Pinned({"1g.10gb"})},
      {"device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '7g.80gb']",
       Pinned({"1g.10gb", "7g.80gb"})},
      {"device.driver == 'gpu.nvidia.com' && (device.attributes['gpu.nvidia.com'].profile == "
       "'7g.80gb')",
       Pinned({"7g.80gb"})},
      // Read from the parsed tree, as CEL reads them: forms a scan of the text did not decide.
      {"(device.attributes['gpu.nvidia.com'].profile == '7g.80gb' && "
       "device.driver == 'gpu.nvidia.com') && true",
       Pinned({"7g.80gb"})},
      {R"(device.attributes["gpu.nvidia.com"].profile == "1g\x2e10gb")", Pinned({"1g.10gb"})},
      {"device.attributes['gpu.nvidia.com'].profile == r'3g.40gb'", Pinned({"3g.40gb"})},
      {"(device.attributes['gpu.nvidia.com']).profile == '2g.20gb'", Pinned({"2g.20gb"})},
      {"device.attributes['gpu.nvidia.com'].profile == 'a\\'b'", Pinned({"a'b"})},
      // Another conjunct outside the evaluated subset does not hide the pinned one.
      {"device.attributes['gpu.nvidia.com'].profile == '7g.80gb' && "
       "device.attributes['gpu.nvidia.com'].productName.matches('H100')",
       Pinned({"7g.80gb"})},
      // Not decidable from one conjunct: nothing is pinned.
      {"device.attributes['gpu.nvidia.com'].profile == '7g.80gb' || true", std::nullopt},
      {"!(device.attributes['gpu.nvidia.com'].profile == '7g.80gb')", std::nullopt},
      {"device.attributes['gpu.nvidia.com'].profile != '7g.80gb'", std::nullopt},
      {"device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', x]", std::nullopt},
      {"device.attributes['gpu.nvidia.com'].profile in []", std::nullopt},
      {"device.attributes['gpu.nvidia.com'].profile == '1g.10gb", std::nullopt},
      {"device.attributes['example.com'].profile == '1g.10gb'", std::nullopt},
      {"", std::nullopt},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(webhook::PinnedProfiles(row.expression), row.want) << row.expression;
  }
}

TEST(ClaimSelectorsTest, ValidationDecidesFromLiterals) {
  topology::Policy policy = SelectorPolicy();
  auto claim = [](const std::string& device_class, const std::string& selector) {
    std::string selectors =
        selector.empty() ? "" : ", selectors: [{cel: {expression: \"" + selector + "\"}}]";
    return Yaml(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: " +
        device_class + selectors + "}}]}}\n");
  };
  struct Case {
    std::string name, ns;
    rapidjson::Document object;
    std::string want;  // "" = allowed
  } cases[] = {
      {"full GPU for a MIG-only tier", "inference", claim("gpu.nvidia.com", ""),
       "[claim-device-class] ResourceClaim \"c\" request \"r\" asks for device class "
       "gpu.nvidia.com (gpu devices), but tenant \"inference\" (tier mig-only) may use only mig, "
       "mig-shared (device types mig); claim a MIG device with device class mig.nvidia.com"},
      {"MIG for a shared-only tier", "notebooks", claim("mig.nvidia.com", ""),
       "[claim-device-class] ResourceClaim \"c\" request \"r\" asks for device class "
       "mig.nvidia.com (mig devices), but tenant \"notebooks\" (tier shared-only) may use only "
       "mps, timeslice (device types gpu)"},
      {"a profile outside the list", "inference",
       claim("mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"),
       "[claim-mig-profile] ResourceClaim \"c\" request \"r\" selects MIG profile 3g.40gb, but "
       "tenant \"inference\" (tier mig-only) may use only 1g.10gb, 2g.20gb; select one of those"},
      {"a profile in the list", "inference",
       claim("mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"), ""},
      {"one allowed among the pinned", "inference",
       claim("mig.nvidia.com",
             "device.attributes['gpu.nvidia.com'].profile in ['7g.80gb', "
             "'1g.10gb']"),
       ""},
      {"a profile pinned inside a parenthesized chain", "inference",
       claim("mig.nvidia.com",
             "(device.attributes['gpu.nvidia.com'].profile == '7g.80gb' && "
             "device.driver == 'gpu.nvidia.com') && true"),
       "[claim-mig-profile] ResourceClaim \"c\" request \"r\" selects MIG profile 7g.80gb, but "
       "tenant \"inference\" (tier mig-only) may use only 1g.10gb, 2g.20gb; select one of those"},
      {"a class the project cannot read", "inference", claim("mig-1g-12gb.gpu.nvidia.com", ""), ""},
      {"any class for an all-type tier", "research", claim("vfio.gpu.nvidia.com", ""), ""},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    Reply r = RunReview(c.object, ReviewKind::kValidate, policy, ClaimOptions(c.ns));
    EXPECT_EQ(r.allowed, c.want.empty()) << r.message;
    EXPECT_EQ(r.message, c.want);
    // What the mutating webhook writes never trips the literal checks.
    Mutated m = MutateAndApply(c.object, policy, ClaimOptions(c.ns));
    Reply again = RunReview(m.object, ReviewKind::kValidate, policy, ClaimOptions(c.ns));
    EXPECT_EQ(again.message, c.want);
  }
}

}  // namespace claim_selectors_test
