// plan/document_tree: the one tree JSON and YAML print. Builders keep member order; each branch
// (mig-parted, device-plugin configs, pod templates, DRA claims per mechanism, the policy's
// tenants) has the shape its consumer reads, compared as parsed JSON; the whole document lists
// its sections in order and mirrors the plan it came from.
#include "plan/document_tree.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/plan/render_test_util.h"

namespace plan {
namespace {

using testing::HasMember;
using testing::Json;
using testing::Keys;
using testing::Member;
using testing::TreeAsJson;

TEST(TreeTest, BuildersMakeEachKindAndKeepMemberOrder) {
  Tree t = Tree::Map();
  t.SetString("zeta", "z").SetInt("alpha", -3).SetBool("mid", true).Set("none", Tree::Null());
  t.Set("list", Tree::List().Push(Tree::Int(1)).Push(Tree::String("two")));
  t.Set("strings", Tree::Strings({"a", "b"}));
  EXPECT_EQ(Keys(t), (std::vector<std::string>{"zeta", "alpha", "mid", "none", "list", "strings"}));
  EXPECT_EQ(Member(t, "alpha").kind, Tree::Kind::kInt);
  EXPECT_EQ(Member(t, "alpha").integer, -3);
  EXPECT_EQ(Member(t, "none").kind, Tree::Kind::kNull);
  EXPECT_TRUE(TreeAsJson(t) == Json(R"({"zeta":"z","alpha":-3,"mid":true,"none":null,
      "list":[1,"two"],"strings":["a","b"]})"));
  EXPECT_EQ(Tree::Strings({}).kind, Tree::Kind::kList);
  EXPECT_TRUE(Tree::Strings({}).items.empty());
}

TEST(MigPartedTreeTest, EnabledEntriesListTheirInstancesDisabledOnesDoNot) {
  std::vector<MigPartedConfig> configs = {
      {"gpu-tenancy-h100-a", {{{0, 1}, true, {{"3g.40gb", 1}, {"1g.10gb", 2}}}, {{2}, false, {}}}},
      {"gpu-tenancy-h100-c", {{{0}, true, {{"7g.80gb", 1}}}}},
  };
  Tree t = MigPartedTree(configs);
  EXPECT_EQ(Keys(t), (std::vector<std::string>{"version", "mig-configs"}));
  EXPECT_TRUE(TreeAsJson(t) == Json(R"({"version":"v1","mig-configs":{
      "gpu-tenancy-h100-a":[
        {"devices":[0,1],"mig-enabled":true,"mig-devices":{"3g.40gb":1,"1g.10gb":2}},
        {"devices":[2],"mig-enabled":false}],
      "gpu-tenancy-h100-c":[{"devices":[0],"mig-enabled":true,"mig-devices":{"7g.80gb":1}}]}})"));
  // Largest profile first, as the config lists them.
  EXPECT_EQ(Keys(Member(Member(t, "mig-configs"), "gpu-tenancy-h100-a").items[0].members[2].second),
            (std::vector<std::string>{"3g.40gb", "1g.10gb"}));
  EXPECT_TRUE(TreeAsJson(MigPartedTree({})) == Json(R"({"version":"v1","mig-configs":{}})"));
}

TEST(DevicePluginConfigsTreeTest, OneNamedConfigPerSharingMethod) {
  Tree t = DevicePluginConfigsTree(
      {{"gpu-tenancy-timeslice-4", false, 4}, {"gpu-tenancy-mps-2", true, 2}});
  EXPECT_TRUE(TreeAsJson(t) == Json(R"({
      "gpu-tenancy-timeslice-4":{"version":"v1","sharing":{"timeSlicing":{"renameByDefault":true,
        "failRequestsGreaterThanOne":true,"resources":[{"name":"nvidia.com/gpu","replicas":4}]}}},
      "gpu-tenancy-mps-2":{"version":"v1","sharing":{"mps":{"renameByDefault":true,
        "failRequestsGreaterThanOne":true,"resources":[{"name":"nvidia.com/gpu","replicas":2}]}}}
      })"));
  EXPECT_TRUE(DevicePluginConfigsTree({}).members.empty());
}

TEST(PodsTreeTest, ResourcesWorkloadLabelMemoryAnnotationAndZoneSpread) {
  PodSnippet mig{"chat", "acme", 2, "acme", "nvidia.com/mig-1g.10gb", 1, true, std::nullopt};
  PodSnippet shared{"notebook",
                    "lab",
                    1,
                    "lab-ns",
                    "nvidia.com/gpu.shared",
                    1,
                    false,
                    std::pair<std::string, std::string>{"gpu-tenancy.io/gpu-memory", "4506Mi"}};
  EXPECT_TRUE(TreeAsJson(PodsTree({mig, shared})) == Json(R"([
      {"workload":"chat","tenant":"acme","replicas":2,"podTemplate":{
        "metadata":{"namespace":"acme","labels":{"gpu-tenancy.io/workload":"chat"}},
        "spec":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/mig-1g.10gb":1}}}],
          "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
            "whenUnsatisfiable":"DoNotSchedule",
            "labelSelector":{"matchLabels":{"gpu-tenancy.io/workload":"chat"}}}]}}},
      {"workload":"notebook","tenant":"lab","replicas":1,"podTemplate":{
        "metadata":{"namespace":"lab-ns","labels":{"gpu-tenancy.io/workload":"notebook"},
          "annotations":{"gpu-tenancy.io/gpu-memory":"4506Mi"}},
        "spec":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu.shared":1}}}]}}}
      ])"));
}

TEST(ClaimTreeTest, ATemplatePerPodOrAClaimSharedByTheWorkload) {
  struct Row {
    std::string name;
    ClaimSnippet claim;
    std::string json;
  };
  const std::vector<Row> rows = {
      {"MIG instance per pod",
       {"chat-gpu", "acme", Mechanism::kMig, "1g.10gb", 0, 0, ""},
       R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaimTemplate",
          "metadata":{"name":"chat-gpu","namespace":"acme"},
          "spec":{"spec":{"devices":{"requests":[{"name":"gpu","deviceClassName":"mig.nvidia.com",
            "selectors":[{"cel":{"expression":
              "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}]}}}})"},
      {"whole GPUs per pod",
       {"train-gpu", "lab", Mechanism::kExclusive, "", 2, 0, ""},
       R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaimTemplate",
          "metadata":{"name":"train-gpu","namespace":"lab"},
          "spec":{"spec":{"devices":{"requests":[{"name":"gpu","deviceClassName":"gpu.nvidia.com",
            "allocationMode":"ExactCount","count":2}]}}}})"},
      {"time-sliced, shared",
       {"nb-shared-gpu", "lab", Mechanism::kTimeslice, "", 0, 0, ""},
       R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim",
          "metadata":{"name":"nb-shared-gpu","namespace":"lab"},
          "spec":{"devices":{"requests":[{"name":"gpu","deviceClassName":"gpu.nvidia.com"}],
            "config":[{"requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com","parameters":{
              "apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",
              "sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Default"}}}}}]}}})"},
      {"MPS with limits, shared",
       {"inf-shared-gpu", "lab", Mechanism::kMps, "", 0, 25, "6759Mi"},
       R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim",
          "metadata":{"name":"inf-shared-gpu","namespace":"lab"},
          "spec":{"devices":{"requests":[{"name":"gpu","deviceClassName":"gpu.nvidia.com"}],
            "config":[{"requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com","parameters":{
              "apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",
              "sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":25,
                "defaultPinnedDeviceMemoryLimit":"6759Mi"}}}}}]}}})"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Tree t = ClaimTree(row.claim);
    EXPECT_EQ(Keys(t), (std::vector<std::string>{"apiVersion", "kind", "metadata", "spec"}));
    EXPECT_TRUE(TreeAsJson(t) == Json(row.json));
  }
}

TEST(PolicyTreeTest, EachTenantsLimitsAndTheCanaryWhenThereIsOne) {
  PolicySection policy;
  PolicyTenant mig;
  mig.name = "acme";
  mig.tier = "untrusted";
  mig.namespaces = {"acme", "acme-dev"};
  mig.gpu_memory_mib_per_pod = 10240;
  mig.mig_profiles = {"1g.10gb", "3g.40gb"};
  PolicyTenant shared{"lab", "trusted", {"lab"}, 4506, {}, true, true, 25, 6759};
  policy.tenants = {mig, shared};
  EXPECT_TRUE(TreeAsJson(PolicyTree(policy)) == Json(R"({"tenants":[
      {"name":"acme","tier":"untrusted","namespaces":["acme","acme-dev"],
       "limits":{"gpuMemoryPerPod":"10240Mi","migProfiles":["1g.10gb","3g.40gb"]}},
      {"name":"lab","tier":"trusted","namespaces":["lab"],
       "limits":{"gpuMemoryPerPod":"4506Mi","sharedReplicasPerPod":1,
         "mps":{"maxActiveThreadPercentage":25,"maxPinnedMemory":"6759Mi"}}}]})"));
  policy.canary_profile = "1g.10gb";
  Tree with_canary = PolicyTree(policy);
  EXPECT_EQ(Keys(with_canary), (std::vector<std::string>{"tenants", "canary"}));
  EXPECT_TRUE(TreeAsJson(Member(with_canary, "canary")) ==
              Json(R"({"migProfile":"1g.10gb","reserve":1})"));
}

TEST(DocumentTreeTest, SectionsInOrderMirroringThePlan) {
  PlanDocument doc = testing::MixedDocument();
  ASSERT_EQ(doc.plan.workloads.size(), 3u);
  Tree t = DocumentTree(doc);
  EXPECT_EQ(Keys(t), (std::vector<std::string>{"summary", "workloads", "gpus", "nvidiaSmi",
                                               "migParted", "devicePlugin", "nodeLabels", "pods",
                                               "resourceClaims", "policy", "warnings"}));
  const Summary& s = doc.summary;
  EXPECT_TRUE(TreeAsJson(Member(t, "summary")) ==
              TreeAsJson(Tree::Map()
                             .SetInt("gpusUsed", s.gpus_used)
                             .SetInt("gpusInFleet", 3)
                             .SetInt("baselineGpus", s.baseline_gpus)
                             .SetInt("gpusSaved", s.gpus_saved)
                             .SetInt("baselineReplicaGpus", s.baseline_replica_gpus)
                             .SetInt("lowerBound", s.lower_bound)
                             .SetBool("optimal", s.optimal)
                             .SetInt("maxTenantsPerGpu", s.max_tenants_per_gpu)
                             .SetString("baseline", s.baseline)
                             .SetString("text", s.text)));

  const Tree& workloads = Member(t, "workloads");
  ASSERT_EQ(workloads.items.size(), 3u);
  const std::vector<std::string> workload_keys = {"name",
                                                  "tenant",
                                                  "namespace",
                                                  "trust",
                                                  "latency",
                                                  "training",
                                                  "replicas",
                                                  "mirrored",
                                                  "replicaZones",
                                                  "mechanism",
                                                  "gpu",
                                                  "profile",
                                                  "gpusPerReplica",
                                                  "memory",
                                                  "rounding",
                                                  "reasons",
                                                  "warnings",
                                                  "baselineGpus",
                                                  "baselineReplicaGpus"};
  for (size_t i = 0; i < 3; ++i) {
    const WorkloadPlan& w = doc.plan.workloads[i];
    const Tree& o = workloads.items[i];
    SCOPED_TRACE(w.spec.name);
    EXPECT_EQ(Keys(o), workload_keys);
    EXPECT_EQ(Member(o, "mechanism").string, MechanismName(w.mechanism));
    EXPECT_EQ(Member(o, "gpu").kind, w.gpu_type.empty() ? Tree::Kind::kNull : Tree::Kind::kString);
    EXPECT_EQ(Member(o, "profile").kind, w.profile ? Tree::Kind::kString : Tree::Kind::kNull);
    EXPECT_EQ(Member(Member(o, "memory"), "totalBytes").integer, w.sizing.total_bytes);
    EXPECT_EQ(Member(Member(o, "memory"), "terms").items.size(), w.sizing.terms.size());
  }
  EXPECT_TRUE(TreeAsJson(Member(workloads.items[0], "replicaZones")) == Json(R"(["a","b"])"));
  EXPECT_TRUE(Member(workloads.items[1], "replicaZones").items.empty()) << "not mirrored";
  EXPECT_EQ(Member(workloads.items[2], "mechanism").string, "vm");

  const Tree& gpus = Member(t, "gpus");
  ASSERT_EQ(gpus.items.size(), doc.plan.gpus.size());
  int canaries = 0;
  for (size_t i = 0; i < gpus.items.size(); ++i) {
    const GpuPlan& g = doc.plan.gpus[i];
    const Tree& o = gpus.items[i];
    SCOPED_TRACE(g.node);
    EXPECT_EQ(Member(o, "use").string, GpuUseName(g.use));
    EXPECT_EQ(HasMember(o, "createOrder"), g.use == GpuUse::kMig);
    EXPECT_EQ(HasMember(o, "sharedMemoryMiB"),
              g.use == GpuUse::kTimeslice || g.use == GpuUse::kMps);
    ASSERT_EQ(Member(o, "instances").items.size(), g.instances.size());
    for (size_t k = 0; k < g.instances.size(); ++k) {
      const Tree& inst = Member(o, "instances").items[k];
      EXPECT_EQ(Keys(inst)[0], "workload");
      EXPECT_EQ(Member(inst, "canary").boolean, g.instances[k].holder.canary());
      if (g.instances[k].holder.canary()) {
        ++canaries;
        EXPECT_EQ(Member(inst, "workload").kind, Tree::Kind::kNull);
        EXPECT_FALSE(HasMember(inst, "replica"));
      } else {
        EXPECT_EQ(Member(inst, "replica").integer, g.instances[k].holder.replica + 1);
      }
      EXPECT_EQ(Member(inst, "profile").string, g.instances[k].profile->name);
    }
  }
  EXPECT_EQ(canaries, 2) << "one canary slice per MIG node";
  EXPECT_EQ(Member(t, "resourceClaims").items.size(), doc.claims.size());
  EXPECT_TRUE(TreeAsJson(Member(t, "warnings")) == TreeAsJson(Tree::Strings(doc.warnings)));
  EXPECT_TRUE(TreeAsJson(Member(t, "migParted")) == TreeAsJson(MigPartedTree(doc.mig_configs)));
  EXPECT_TRUE(TreeAsJson(Member(t, "policy")) == TreeAsJson(PolicyTree(doc.policy)));
}

TEST(DocumentTreeTest, AnEmptyDocumentStillHasEverySection) {
  EXPECT_TRUE(TreeAsJson(DocumentTree(PlanDocument{})) == Json(R"({
      "summary":{"gpusUsed":0,"gpusInFleet":0,"baselineGpus":0,"gpusSaved":0,
        "baselineReplicaGpus":0,"lowerBound":0,"optimal":false,"maxTenantsPerGpu":0,"baseline":"",
        "text":""},
      "workloads":[],"gpus":[],"nvidiaSmi":[],"migParted":{"version":"v1","mig-configs":{}},
      "devicePlugin":{"configs":{}},"nodeLabels":[],"pods":[],"resourceClaims":[],
      "policy":{"tenants":[]},"warnings":[]})"));
}

}  // namespace
}  // namespace plan
