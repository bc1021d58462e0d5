// The mutating webhook on pods: each patch is applied to the pod and the result checked, and
// mutating the result again must produce no patch (MutateAndApply asserts that).
#include "webhook/pod_mutation.h"

#include <string>
#include <vector>

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
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

ReviewOptions In(const std::string& ns) {
  ReviewOptions o;
  o.ns = ns;
  return o;
}

std::string JsonAt(const rapidjson::Value& root, const std::string& pointer) {
  const rapidjson::Value* v = At(root, pointer);
  return v ? common::ToJson(*v) : "<missing>";
}

TEST(PodMutationTest, ExactPatchForABarePod) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: acme}
spec:
  containers:
  - name: main
    resources: {limits: {nvidia.com/mig-1g.10gb: 1}}
)");
  Mutated m = MutateAndApply(pod, policy, In("acme"));
  ASSERT_TRUE(m.reply.has_patch);
  EXPECT_TRUE(m.reply.patch == Json(R"([
    {"op":"add","path":"/metadata/labels",
     "value":{"gpu-tenancy.io/tenant":"acme","gpu-tenancy.io/tier":"untrusted"}},
    {"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{
      "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchExpressions":[{"key":"gpu-tenancy.io/pool","operator":"In",
                              "values":["gpu-mig","gpu-exclusive"]}]}]}}}},
    {"op":"add","path":"/spec/tolerations","value":[
      {"key":"gpu-tenancy.io/pool","operator":"Equal","value":"gpu-mig","effect":"NoSchedule"}]}
  ])"))
      << common::ToJson(m.reply.patch);
  // What the validating webhook then sees passes it.
  webhook_test::Reply v = RunReview(m.object, ReviewKind::kValidate, policy, In("acme"));
  EXPECT_TRUE(v.allowed) << v.message;
}

TEST(PodMutationTest, Labels) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, ns, labels;
    std::string want_patch;  // exact
  } cases[] = {
      {"labels map exists", "acme", "{app: web}",
       R"([{"op":"add","path":"/metadata/labels/gpu-tenancy.io~1tenant","value":"acme"},
           {"op":"add","path":"/metadata/labels/gpu-tenancy.io~1tier","value":"untrusted"}])"},
      {"a spoofed tenant label is corrected", "acme",
       "{gpu-tenancy.io/tenant: research, gpu-tenancy.io/tier: untrusted}",
       R"([{"op":"replace","path":"/metadata/labels/gpu-tenancy.io~1tenant","value":"acme"}])"},
      {"already labelled", "acme", "{gpu-tenancy.io/tenant: acme, gpu-tenancy.io/tier: untrusted}",
       ""},
      {"tenant by namespace label", "bank-prod", "{}",
       R"([{"op":"add","path":"/metadata/labels/gpu-tenancy.io~1tenant","value":"bank"},
           {"op":"add","path":"/metadata/labels/gpu-tenancy.io~1tier","value":"untrusted"}])"},
      {"unknown tenant denied by policy: nothing", "nowhere", "{}", ""},
  };
  topology::ClusterSnapshot snapshot =
      webhook_test::SnapshotWithNamespace("bank-prod", {{"gpu-tenancy.io/tenant", "bank"}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // A GPU pod (only those are labelled); the other operations are checked elsewhere.
    rapidjson::Document pod = Yaml(absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: ", c.labels,
        "}\nspec:\n  containers:\n  - {name: main, resources: {limits: {nvidia.com/gpu: 1}}}\n"));
    webhook_test::Reply r = webhook_test::Decode(webhook::Review(
        webhook_test::MakeReview(pod, In(c.ns)), ReviewKind::kMutate, policy, snapshot));
    ASSERT_EQ(r.http_status, 200);
    EXPECT_TRUE(r.allowed);
    rapidjson::Document labels(rapidjson::kArrayType);
    if (r.has_patch) {
      for (const rapidjson::Value& op : r.patch.GetArray()) {
        if (common::StringOr(op, "path").rfind("/metadata/labels", 0) == 0) {
          labels.PushBack(rapidjson::Value(op, labels.GetAllocator()), labels.GetAllocator());
        }
      }
    }
    if (c.want_patch.empty()) {
      EXPECT_TRUE(labels.Empty()) << common::ToJson(labels);
    } else {
      EXPECT_TRUE(labels == Json(c.want_patch)) << common::ToJson(labels);
    }
  }
}

TEST(PodMutationTest, UnknownTenantAdmittedWithDefaultTier) {
  topology::Policy policy = TestPolicy();
  policy.unknown_tenant_tier = "trusted";
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/gpu: 1}}}\n");
  Mutated m = MutateAndApply(pod, policy, In("nowhere"));
  EXPECT_EQ(JsonAt(m.object, "/metadata/labels"),
            R"({"gpu-tenancy.io/tenant":"unknown","gpu-tenancy.io/tier":"trusted"})");
  EXPECT_EQ(JsonAt(m.object,
                   "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuring"
                   "Execution/nodeSelectorTerms/0/matchExpressions/0/values"),
            R"(["gpu-mig","gpu-timeslice","gpu-exclusive"])");
}

TEST(PodMutationTest, AffinityIsMergedNeverReplaced) {
  topology::Policy policy = TestPolicy();
  const std::string ours =
      R"({"key":"gpu-tenancy.io/pool","operator":"In","values":["gpu-mig","gpu-exclusive"]})";
  const std::string required =
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
  struct Case {
    std::string name;
    std::string affinity_yaml;                              // under spec (indented 2)
    std::vector<std::pair<std::string, std::string>> want;  // pointer -> JSON
  } cases[] = {
      {"no affinity",
       "",
       {{required + "/nodeSelectorTerms", absl::StrCat(R"([{"matchExpressions":[)", ours, "]}]")}}},
      {"pod anti-affinity only",
       "  affinity:\n    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
       "      - weight: 1\n        podAffinityTerm: {topologyKey: kubernetes.io/hostname}\n",
       {{"/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight",
         "1"},
        {required + "/nodeSelectorTerms", absl::StrCat(R"([{"matchExpressions":[)", ours, "]}]")}}},
      {"preferred node affinity only",
       "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
       "      - weight: 5\n        preference:\n          matchExpressions:\n"
       "          - {key: zone, operator: In, values: [a]}\n",
       {{"/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight",
         "5"},
        {required + "/nodeSelectorTerms", absl::StrCat(R"([{"matchExpressions":[)", ours, "]}]")}}},
      {"two user terms: ours is ANDed into each",
       "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
       "        nodeSelectorTerms:\n"
       "        - matchExpressions:\n          - {key: zone, operator: In, values: [a, b]}\n"
       "        - matchFields:\n          - {key: metadata.name, operator: In, values: [node-1]}\n",
       {{required + "/nodeSelectorTerms/0/matchExpressions",
         absl::StrCat(R"([{"key":"zone","operator":"In","values":["a","b"]},)", ours, "]")},
        {required + "/nodeSelectorTerms/1/matchFields",
         R"([{"key":"metadata.name","operator":"In","values":["node-1"]}])"},
        {required + "/nodeSelectorTerms/1/matchExpressions", absl::StrCat("[", ours, "]")}}},
      {"empty term list",
       "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
       "        nodeSelectorTerms: []\n",
       {{required + "/nodeSelectorTerms", absl::StrCat(R"([{"matchExpressions":[)", ours, "]}]")}}},
      {"user already narrows to the MIG pool: kept, ours added",
       "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
       "        nodeSelectorTerms:\n        - matchExpressions:\n"
       "          - {key: gpu-tenancy.io/pool, operator: In, values: [gpu-mig]}\n",
       {{required + "/nodeSelectorTerms/0/matchExpressions",
         absl::StrCat(R"([{"key":"gpu-tenancy.io/pool","operator":"In","values":["gpu-mig"]},)",
                      ours, "]")}}},
      {"ours already there (values in another order)",
       "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
       "        nodeSelectorTerms:\n        - matchExpressions:\n"
       "          - {key: gpu-tenancy.io/pool, operator: In, values: [gpu-exclusive, gpu-mig]}\n",
       {{required + "/nodeSelectorTerms/0/matchExpressions",
         R"([{"key":"gpu-tenancy.io/pool","operator":"In","values":["gpu-exclusive","gpu-mig"]}])"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod = Yaml(absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {gpu-tenancy.io/tenant: acme, "
        "gpu-tenancy.io/tier: untrusted}}\nspec:\n",
        c.affinity_yaml,
        "  tolerations: [{key: gpu-tenancy.io/pool, operator: Exists}]\n"
        "  containers:\n  - {name: main, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}\n"));
    Mutated m = MutateAndApply(pod, policy, In("acme"));
    for (const auto& [pointer, json] : c.want) {
      SCOPED_TRACE(pointer);
      const rapidjson::Value* got = At(m.object, pointer);
      ASSERT_NE(got, nullptr) << common::ToJson(m.object);
      EXPECT_TRUE(*got == Json(json)) << common::ToJson(*got);
    }
    // Only the affinity may change here (labels and tolerations are already right).
    if (m.reply.has_patch) {
      for (const auto& op : m.reply.patch.GetArray()) {
        EXPECT_EQ(std::string(common::StringOr(op, "path")).rfind("/spec/affinity", 0), 0u)
            << common::ToJson(op);
        EXPECT_EQ(common::StringOr(op, "op"), "add") << "never replace user affinity";
      }
    }
  }
}

TEST(PodMutationTest, Tolerations) {
  topology::Policy policy = TestPolicy();
  const std::string mig =
      R"({"key":"gpu-tenancy.io/pool","operator":"Equal","value":"gpu-mig","effect":"NoSchedule"})";
  const std::string ts =
      R"({"key":"gpu-tenancy.io/pool","operator":"Equal","value":"gpu-timeslice","effect":"NoSchedule"})";
  struct Case {
    std::string name, ns, tolerations_yaml, want;
  } cases[] = {
      {"none yet, untrusted", "acme", "", absl::StrCat("[", mig, "]")},
      {"none yet, trusted", "research", "", absl::StrCat("[", mig, ",", ts, "]")},
      {"others kept, ours appended", "acme",
       "  tolerations:\n  - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}\n",
       absl::StrCat(
           R"([{"key":"dedicated","operator":"Equal","value":"ml","effect":"NoSchedule"},)", mig,
           "]")},
      {"already tolerated by Exists on the key", "acme",
       "  tolerations:\n  - {key: gpu-tenancy.io/pool, operator: Exists}\n",
       R"([{"key":"gpu-tenancy.io/pool","operator":"Exists"}])"},
      {"already tolerated by tolerate-everything", "research",
       "  tolerations:\n  - {operator: Exists}\n", R"([{"operator":"Exists"}])"},
      {"the same toleration is not duplicated", "research",
       "  tolerations:\n  - {key: gpu-tenancy.io/pool, value: gpu-mig, effect: NoSchedule}\n",
       absl::StrCat(R"([{"key":"gpu-tenancy.io/pool","value":"gpu-mig","effect":"NoSchedule"},)",
                    ts, "]")},
      {"another effect does not count", "acme",
       "  tolerations:\n  - {key: gpu-tenancy.io/pool, operator: Exists, effect: NoExecute}\n",
       absl::StrCat(R"([{"key":"gpu-tenancy.io/pool","operator":"Exists","effect":"NoExecute"},)",
                    mig, "]")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod = Yaml(absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gpu-tenancy.io/gpu-memory: "
        "1024Mi}}\nspec:\n",
        c.tolerations_yaml,
        "  containers:\n  - {name: main, resources: {limits: {nvidia.com/gpu: 1}}}\n"));
    Mutated m = MutateAndApply(pod, policy, In(c.ns));
    const rapidjson::Value* got = At(m.object, "/spec/tolerations");
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(*got == Json(c.want)) << common::ToJson(*got);
  }
}

TEST(PodMutationTest, GpuMemoryAnnotationIsNormalised) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, annotations, limits;
    std::string want;  // annotation value after mutation; "" for none
  } cases[] = {
      {"Gi becomes Mi", "{gpu-tenancy.io/gpu-memory: 16Gi}", "{nvidia.com/gpu: 1}", "16384Mi"},
      {"bytes become Mi (rounded up)", "{gpu-tenancy.io/gpu-memory: '1000000000'}",
       "{nvidia.com/gpu: 1}", "954Mi"},
      {"from a memory resource", "{}", "{nvidia.com/gpu.shared: 1, nvidia.com/gpu.memory: 8192}",
       "8192Mi"},
      {"the larger of the two", "{gpu-tenancy.io/gpu-memory: 4Gi}",
       "{nvidia.com/gpu.shared: 1, nvidia.com/gpumem: 8192}", "8192Mi"},
      {"already normal", "{gpu-tenancy.io/gpu-memory: 2048Mi, other: x}", "{nvidia.com/gpu: 1}",
       "2048Mi"},
      {"none asked", "{}", "{nvidia.com/gpu: 1}", ""},
      {"unreadable is left for validation", "{gpu-tenancy.io/gpu-memory: lots}",
       "{nvidia.com/gpu: 1}", "lots"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod = Yaml(absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: ", c.annotations,
        "}\nspec:\n  containers:\n  - {name: main, resources: {limits: ", c.limits, "}}\n"));
    Mutated m = MutateAndApply(pod, policy, In("research"));
    const rapidjson::Value* value =
        At(m.object, "/metadata/annotations/gpu-tenancy.io~1gpu-memory");
    EXPECT_EQ(value ? std::string(common::AsStringView(*value)) : "", c.want);
  }
  // No annotations map at all: it is added whole.
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {gpu-tenancy.io/tenant: research, "
      "gpu-tenancy.io/tier: trusted}}\nspec:\n"
      "  tolerations: [{operator: Exists}]\n"
      "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
      "        nodeSelectorTerms:\n        - matchExpressions:\n"
      "          - {key: gpu-tenancy.io/pool, operator: In, values: [gpu-mig, gpu-timeslice, "
      "gpu-exclusive]}\n"
      "  containers:\n  - {name: main, resources: {limits: {nvidia.com/gpu.shared: 1, "
      "nvidia.com/gpu.memory: 512}}}\n");
  Mutated m = MutateAndApply(pod, policy, In("research"));
  EXPECT_TRUE(m.reply.patch == Json(R"([{"op":"add","path":"/metadata/annotations",
      "value":{"gpu-tenancy.io/gpu-memory":"512Mi"}}])"))
      << common::ToJson(m.reply.patch);
}

TEST(PodMutationTest, WhatIsNotMutated) {
  topology::Policy policy = TestPolicy();
  struct Case {
    std::string name, ns, operation, limits;
    bool want_labels;
    bool want_affinity;
  } cases[] = {
      // The webhook's matchConditions do not send such pods; the reply must not differ.
      {"CPU-only pod: untouched", "acme", "CREATE", "{cpu: 1}", false, false},
      {"GPU pod on UPDATE: metadata only", "acme", "UPDATE", "{nvidia.com/gpu: 1}", true, false},
      {"GPU pod on CREATE", "acme", "CREATE", "{nvidia.com/gpu: 1}", true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rapidjson::Document pod =
        Yaml(absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                          "  - {name: main, resources: {limits: ",
                          c.limits, "}}\n"));
    ReviewOptions o = In(c.ns);
    o.operation = c.operation;
    if (c.operation == "UPDATE") o.old_object = &pod;
    Mutated m = MutateAndApply(pod, policy, o);
    EXPECT_EQ(At(m.object, "/metadata/labels/gpu-tenancy.io~1tenant") != nullptr, c.want_labels);
    EXPECT_EQ(At(m.object, "/spec/affinity") != nullptr, c.want_affinity);
    EXPECT_EQ(At(m.object, "/spec/tolerations") != nullptr, c.want_affinity);
  }
  // A policy without pools: no affinity (an In with no values is invalid), labels still.
  policy.pools.clear();
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/gpu: 1}}}\n");
  Mutated m = MutateAndApply(pod, policy, In("acme"));
  EXPECT_EQ(At(m.object, "/spec/affinity"), nullptr);
  EXPECT_NE(At(m.object, "/metadata/labels"), nullptr);
}

TEST(PodMutationTest, DryRunMutatesTheSame) {
  topology::Policy policy = TestPolicy();
  rapidjson::Document pod = Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: main, resources: {limits: {nvidia.com/gpu: 1}}}\n");
  ReviewOptions dry = In("acme");
  dry.dry_run = true;
  webhook_test::Reply a = RunReview(pod, ReviewKind::kMutate, policy, In("acme"));
  webhook_test::Reply b = RunReview(pod, ReviewKind::kMutate, policy, dry);
  EXPECT_TRUE(a.body == b.body);
}

}  // namespace
