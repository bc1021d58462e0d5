// Kubernetes JSON to model facts. The real payloads in test/testdata (recorded from kube-apiserver
// and kube-scheduler v1.28.7 and kept unchanged, docs/wire/README.md) must parse as they are.
#include "wire/k8s_codec.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/demand.h"

namespace wire {

using common::FindMember;
using common::FindNonNull;
using common::IndexPath;
using common::JsonValue;
using common::ParseJson;
using common::StringOr;
namespace {

using testing_support::JsonOrFail;
using testing_support::SourceFile;
using testing_support::Testdata;
using topology::ClusterData;
using topology::NodeFacts;
using topology::PodFacts;
using topology::Quantity;

int64_t Milli(const topology::ResourceList& list, absl::string_view name) {
  auto it = list.find(name);
  if (it == list.end()) {
    ADD_FAILURE() << "no " << name;
    return -1;
  }
  return it->second.milli();
}

const PodFacts* FindPod(const ClusterData& data, absl::string_view key) {
  for (const PodFacts& p : data.pods) {
    if (p.Key() == key) return &p;
  }
  return nullptr;
}

const NodeFacts* FindNode(const ClusterData& data, absl::string_view name) {
  for (const NodeFacts& n : data.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

// --- extender requests: Pod and Node objects without apiVersion/kind ---------------------------

TEST(K8sCodecTest, ExtenderRequestsParse) {
  struct Row {
    std::string name;
    std::string file;
    std::string pod;
    std::vector<std::string> nodes;  // full Node items; empty in names-only requests
  };
  const std::vector<Row> rows = {
      {"filter, full nodes",
       "extender/filter-nodecache-false.request.json",
       "gpu-team/pod-mig",
       {"cpu-node-c", "gpu-node-a", "gpu-node-b"}},
      {"filter, names only",
       "extender/filter-nodecache-true.request.json",
       "gpu-team/pod-mig-nc",
       {}},
      {"prioritize, full nodes",
       "extender/prioritize-nodecache-false.request.json",
       "gpu-team/pod-mig",
       {"cpu-node-c", "gpu-node-a", "gpu-node-b"}},
      {"prioritize, names only",
       "extender/prioritize-nodecache-true.request.json",
       "gpu-team/pod-mig-nc",
       {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    rapidjson::Document doc = JsonOrFail(Testdata(row.file));
    const JsonValue* pod_json = FindMember(doc, "Pod");
    ASSERT_NE(pod_json, nullptr);
    EXPECT_EQ(FindMember(*pod_json, "kind"), nullptr);  // the point of this fixture
    absl::StatusOr<PodFacts> pod = ParsePod(*pod_json);
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->Key(), row.pod);
    EXPECT_FALSE(pod->uid.empty());
    EXPECT_EQ(pod->phase, "Pending");
    EXPECT_EQ(pod->labels.at("app"), "harness");
    ASSERT_EQ(pod->containers.size(), 1u);
    EXPECT_EQ(pod->containers[0].name, "main");
    EXPECT_EQ(Milli(pod->containers[0].requests, "cpu"), 100);
    EXPECT_EQ(Milli(pod->containers[0].requests, "memory"), int64_t{64} * 1024 * 1024 * 1000);
    EXPECT_EQ(Milli(pod->containers[0].limits, "nvidia.com/mig-1g.10gb"), 1000);
    EXPECT_TRUE(pod->init_containers.empty());

    absl::StatusOr<topology::GpuDemand> demand =
        topology::ComputeDemand(*pod, topology::Policy::AllowAll());
    ASSERT_TRUE(demand.ok()) << demand.status();
    EXPECT_EQ(demand->devices.Get("nvidia.com/mig-1g.10gb"), 1);
    EXPECT_EQ(demand->devices.size(), 1u);

    std::vector<std::string> names;
    const JsonValue* nodes = FindNonNull(doc, "Nodes");
    if (nodes != nullptr) {
      const JsonValue* items = FindMember(*nodes, "items");
      ASSERT_NE(items, nullptr);
      ASSERT_TRUE(items->IsArray());
      for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        EXPECT_EQ(FindMember((*items)[i], "kind"), nullptr);
        absl::StatusOr<NodeFacts> node = ParseNode((*items)[i], IndexPath("Nodes.items", i));
        ASSERT_TRUE(node.ok()) << node.status();
        names.push_back(node->name);
      }
    }
    EXPECT_EQ(names, row.nodes);
  }
}

TEST(K8sCodecTest, ExtenderNodeFacts) {
  rapidjson::Document doc = JsonOrFail(Testdata("extender/filter-nodecache-false.request.json"));
  const JsonValue& items = *FindMember(*FindMember(doc, "Nodes"), "items");
  absl::StatusOr<NodeFacts> a = ParseNode(items[1]);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->name, "gpu-node-a");
  EXPECT_EQ(a->labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(a->labels.at("nvidia.com/mig.strategy"), "mixed");
  EXPECT_EQ(Milli(a->allocatable, "nvidia.com/gpu"), 4000);
  EXPECT_EQ(Milli(a->allocatable, "nvidia.com/gpu.shared"), 8000);
  EXPECT_EQ(Milli(a->allocatable, "nvidia.com/mig-1g.10gb"), 7000);
  EXPECT_EQ(Milli(a->allocatable, "memory"), int64_t{500} * 1024 * 1024 * 1024 * 1000);
  EXPECT_TRUE(a->taints.empty());

  absl::StatusOr<NodeFacts> b = ParseNode(items[2]);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(Milli(b->allocatable, "nvidia.com/gpu.shared"), 0);
  EXPECT_EQ(Milli(b->allocatable, "nvidia.com/mig-1g.10gb"), 0);

  absl::StatusOr<NodeFacts> c = ParseNode(items[0]);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->allocatable.count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(Milli(c->allocatable, "cpu"), 31000);
}

// --- apiserver lists --------------------------------------------------------------------------

TEST(K8sCodecTest, ApiserverListsParse) {
  struct Row {
    std::string name;
    std::string file;
    std::vector<std::string> nodes;
    size_t pods;
    size_t namespaces;
  };
  const std::vector<Row> rows = {
      {"nodes page 1", "apiserver/list-nodes-page1.json", {"cpu-node-c", "gpu-node-a"}, 0, 0},
      {"nodes page 2", "apiserver/list-nodes-page2.json", {"gpu-node-b"}, 0, 0},
      {"pods", "apiserver/list-pods.json", {}, 8, 0},
      {"namespaces", "apiserver/list-namespaces.json", {}, 0, 5},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    rapidjson::Document doc = JsonOrFail(Testdata(row.file));
    absl::StatusOr<ClusterData> data = ParseClusterList(doc);
    ASSERT_TRUE(data.ok()) << data.status();
    std::vector<std::string> names;
    for (const NodeFacts& n : data->nodes) names.push_back(n.name);
    EXPECT_EQ(names, row.nodes);
    EXPECT_EQ(data->pods.size(), row.pods);
    EXPECT_EQ(data->namespace_labels.size(), row.namespaces);
  }
}

TEST(K8sCodecTest, ListPodsContents) {
  absl::StatusOr<ClusterData> data =
      ParseClusterList(JsonOrFail(Testdata("apiserver/list-pods.json")));
  ASSERT_TRUE(data.ok()) << data.status();
  const PodFacts* gpu = FindPod(*data, "gpu-team/pod-gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->node_name, "gpu-node-b");
  EXPECT_EQ(gpu->phase, "Pending");
  EXPECT_EQ(Milli(gpu->containers[0].limits, "nvidia.com/gpu"), 1000);

  const PodFacts* shared = FindPod(*data, "gpu-team/pod-shared");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->node_name, "cpu-node-c");
  EXPECT_EQ(Milli(shared->containers[0].requests, "nvidia.com/gpu.shared"), 2000);

  const PodFacts* admit = FindPod(*data, "gpu-team/pod-admit");
  ASSERT_NE(admit, nullptr);
  EXPECT_EQ(admit->annotations.at("harness.example/mutated"), "true");
  EXPECT_EQ(admit->labels.at("tier"), "gpu");

  const PodFacts* warn = FindPod(*data, "gpu-team/pod-warn");
  ASSERT_NE(warn, nullptr);
  EXPECT_TRUE(
      absl::StrContains(warn->annotations.at("kubectl.kubernetes.io/last-applied-configuration"),
                        "\"harness.example/warn\":\"true\""));
}

// What admission reads besides resources is part of the pod's facts, so a live pod is judged
// as its CREATE was.
TEST(K8sCodecTest, PodDeviceAccessAndPlacementFacts) {
  rapidjson::Document pod = JsonOrFail(R"({"metadata":{"name":"p","namespace":"acme"},
    "spec":{"hostIPC":true,
      "nodeSelector":{"gpu-tenancy.io/pool":"gpu-mig","kubernetes.io/os":"linux"},
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
        "nodeSelectorTerms":[{"matchExpressions":[
          {"key":"gpu-tenancy.io/pool","operator":"In","values":["a","b"]},
          {"key":"zone","operator":"NotIn","values":["z"]}]}]}}},
      "volumes":[{"name":"dev","hostPath":{"path":"/dev/nvidia0"}},{"name":"tmp","emptyDir":{}}],
      "containers":[{"name":"main","securityContext":{"privileged":true,
          "capabilities":{"add":["SYS_ADMIN",7]}},
        "env":[{"name":"PATH","value":"/bin"},{"name":"NVIDIA_VISIBLE_DEVICES","value":"all"},
               {"name":"CUDA_MPS_PIPE_DIRECTORY","valueFrom":{"fieldRef":{}}}]}],
      "ephemeralContainers":[{"name":"debug","securityContext":{"privileged":"yes"}}]}})");
  absl::StatusOr<topology::PodFacts> facts = ParsePod(pod, "pod");
  ASSERT_TRUE(facts.ok()) << facts.status();
  ASSERT_EQ(facts->containers.size(), 1u);
  const topology::ContainerFacts& main = facts->containers[0];
  EXPECT_TRUE(main.privileged);
  EXPECT_EQ(main.capabilities_added, (std::vector<std::string>{"SYS_ADMIN"}));
  EXPECT_EQ(main.env, (std::vector<topology::EnvVar>{{"NVIDIA_VISIBLE_DEVICES", "all"},
                                                     {"CUDA_MPS_PIPE_DIRECTORY", ""}}))
      << "only the device variables are kept";
  ASSERT_EQ(facts->ephemeral_containers.size(), 1u);
  EXPECT_FALSE(facts->ephemeral_containers[0].privileged) << "a string is not true";
  EXPECT_TRUE(facts->host_ipc);
  EXPECT_EQ(facts->host_paths, (std::vector<topology::HostPathVolume>{{"dev", "/dev/nvidia0"}}));
  EXPECT_EQ(facts->node_selector.at("gpu-tenancy.io/pool"), "gpu-mig");
  EXPECT_EQ(facts->required_affinity_in,
            (std::vector<topology::NodeAffinityIn>{{"gpu-tenancy.io/pool", {"a", "b"}}}));
}

TEST(K8sCodecTest, ListNamespacesLabels) {
  absl::StatusOr<ClusterData> data =
      ParseClusterList(JsonOrFail(Testdata("apiserver/list-namespaces.json")));
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_TRUE(data->namespace_labels.contains("gpu-team"));
  const topology::Labels& labels = data->namespace_labels.at("gpu-team");
  EXPECT_EQ(labels.at("harness.example/webhooks"), "enabled");
  EXPECT_EQ(labels.at("kubernetes.io/metadata.name"), "gpu-team");
  for (const char* ns : {"default", "kube-node-lease", "kube-public", "kube-system"}) {
    EXPECT_TRUE(data->namespace_labels.contains(ns)) << ns;
  }
}

TEST(K8sCodecTest, PagedNodeListsCombine) {
  ClusterData all;
  for (const char* file : {"apiserver/list-nodes-page1.json", "apiserver/list-nodes-page2.json"}) {
    absl::StatusOr<ClusterData> page = ParseClusterList(JsonOrFail(Testdata(file)));
    ASSERT_TRUE(page.ok()) << page.status();
    for (NodeFacts& n : page->nodes) all.nodes.push_back(std::move(n));
  }
  ASSERT_EQ(all.nodes.size(), 3u);
  const NodeFacts* b = FindNode(all, "gpu-node-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->labels.at("nvidia.com/mig.strategy"), "single");
  EXPECT_EQ(Milli(b->allocatable, "nvidia.com/gpu"), 8000);
}

// --- admission reviews --------------------------------------------------------------------------

TEST(K8sCodecTest, AdmissionReviewPodsParse) {
  struct Row {
    std::string name;
    std::string file;
    std::string pod;
    bool has_old;
  };
  const std::vector<Row> rows = {
      {"mutating create", "admission/pod-create.mutating.request.json", "gpu-team/pod-admit",
       false},
      {"validating create", "admission/pod-create.validating.request.json", "gpu-team/pod-admit",
       false},
      {"dry run", "admission/pod-dryrun.validating.request.json", "gpu-team/pod-dryrun", false},
      {"update", "admission/pod-update.validating.request.json", "gpu-team/pod-admit", true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    rapidjson::Document doc = JsonOrFail(Testdata(row.file));
    const JsonValue* request = FindMember(doc, "request");
    ASSERT_NE(request, nullptr);
    const JsonValue* object = FindMember(*request, "object");
    ASSERT_NE(object, nullptr);
    absl::StatusOr<PodFacts> pod = ParsePod(*object, "request.object");
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->Key(), row.pod);
    EXPECT_EQ(Milli(pod->containers.at(0).limits, "nvidia.com/mig-1g.10gb"), 1000);
    const JsonValue* old = FindNonNull(*request, "oldObject");
    EXPECT_EQ(old != nullptr, row.has_old);
    if (old != nullptr) {
      absl::StatusOr<PodFacts> old_pod = ParsePod(*old, "request.oldObject");
      ASSERT_TRUE(old_pod.ok()) << old_pod.status();
      EXPECT_EQ(old_pod->Key(), row.pod);
      EXPECT_EQ(old_pod->labels.count("tier"), 0u);
      EXPECT_EQ(pod->labels.at("tier"), "gpu");
      EXPECT_EQ(pod->node_name, "gpu-node-a");
    }
  }
}

TEST(K8sCodecTest, ResourceClaimIsIgnoredInAList) {
  rapidjson::Document review =
      JsonOrFail(Testdata("admission/resourceclaim-v1alpha2-create.validating.request.json"));
  const JsonValue* object = FindMember(*FindMember(review, "request"), "object");
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(StringOr(*object, "kind"), "ResourceClaim");
  rapidjson::Document list;
  list.SetObject();
  list.AddMember("kind", "List", list.GetAllocator());
  rapidjson::Value items(rapidjson::kArrayType);
  items.PushBack(rapidjson::Value(*object, list.GetAllocator()), list.GetAllocator());
  list.AddMember("items", items, list.GetAllocator());
  absl::StatusOr<ClusterData> data = ParseClusterList(list);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(data->nodes.empty());
  EXPECT_TRUE(data->pods.empty());
  EXPECT_TRUE(data->dra_claims.empty()) << "v1alpha2 claims are not read";
}

// spec.resourceClaims: a claim by name, or a template whose claim the status names once made.
TEST(K8sCodecTest, PodsReadTheirResourceClaims) {
  rapidjson::Document pod = JsonOrFail(R"({"metadata":{"name":"p","namespace":"team-a"},
      "spec":{"containers":[{"name":"c"}],"resourceClaims":[
        {"name":"gpu","resourceClaimName":"shared-gpu"},
        {"name":"mig","resourceClaimTemplateName":"one-mig"},
        {"name":"later","resourceClaimTemplateName":"one-mig"}]},
      "status":{"resourceClaimStatuses":[{"name":"mig","resourceClaimName":"p-mig-x7k2"}]}})");
  absl::StatusOr<topology::PodFacts> facts = ParsePod(pod);
  ASSERT_TRUE(facts.ok()) << facts.status();
  EXPECT_EQ(
      facts->resource_claims,
      (std::vector<topology::PodClaimRef>{
          {"gpu", "shared-gpu", ""}, {"mig", "p-mig-x7k2", "one-mig"}, {"later", "", "one-mig"}}));
  rapidjson::Document bad =
      JsonOrFail(R"({"metadata":{"name":"p"},"spec":{"containers":[],"resourceClaims":[1]}})");
  EXPECT_EQ(ParsePod(bad).status().message(), "pod.spec.resourceClaims: expected objects");
}

// kubectl get namespaces,nodes,pods,resourceslices,resourceclaims,deviceclasses -A -o json
TEST(K8sCodecTest, AClusterFileCarriesDraObjects) {
  absl::StatusOr<ClusterData> data = ParseClusterText(Testdata("dra/cluster-with-claims.json"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->nodes.size(), 1u);
  EXPECT_EQ(data->pods.size(), 2u);
  ASSERT_EQ(data->dra_slices.size(), 1u);
  EXPECT_EQ(data->dra_slices[0].devices.size(), 3u);
  ASSERT_EQ(data->dra_claims.size(), 1u);
  EXPECT_EQ(data->dra_claims[0].name, "tenant-a-inference");
  EXPECT_TRUE(data->dra_claims[0].allocated);
  EXPECT_EQ(data->dra_classes.size(), 2u);
}

// --- the YAML cluster file and pod manifests
// ------------------------------------------------------

TEST(K8sCodecTest, DemoClusterYamlParses) {
  absl::StatusOr<ClusterData> data = ParseClusterText(SourceFile("cmd/demo/cluster.yaml"));
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<std::string> names;
  for (const NodeFacts& n : data->nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mig-a", "mig-b", "mig-1g", "mig-c", "ts-a", "excl-a",
                                             "cpu-a"}));
  EXPECT_EQ(data->pods.size(), 9u);
  EXPECT_EQ(data->namespace_labels.size(), 6u);
  EXPECT_EQ(data->namespace_labels.at("bank-prod").at("gpu-tenancy.io/tenant"), "bank");

  const NodeFacts* mig_b = FindNode(*data, "mig-b");
  ASSERT_NE(mig_b, nullptr);
  EXPECT_EQ(Milli(mig_b->allocatable, "nvidia.com/mig-3g.40gb"), 2000);
  EXPECT_EQ(mig_b->labels.at("nvidia.com/gpu.count"), "2");  // quoted YAML stays a string
  ASSERT_EQ(mig_b->taints.size(), 1u);                       // through a YAML alias
  EXPECT_EQ(mig_b->taints[0].key, "gpu-tenancy.io/pool");
  EXPECT_EQ(mig_b->taints[0].value, "gpu-mig");
  EXPECT_EQ(mig_b->taints[0].effect, "NoSchedule");

  const PodFacts* notebook = FindPod(*data, "research/notebook-1");
  ASSERT_NE(notebook, nullptr);
  EXPECT_EQ(notebook->annotations.at("gpu-tenancy.io/gpu-memory"), "24Gi");
  EXPECT_EQ(notebook->annotations.at("gpu-tenancy.io/gpu-index"), "0");
  EXPECT_EQ(notebook->node_name, "ts-a");
  EXPECT_EQ(Milli(notebook->containers[0].requests, "nvidia.com/gpu.shared"), 1000);

  const PodFacts* waiting = FindPod(*data, "acme/waiting");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->node_name, "");
  EXPECT_EQ(waiting->phase, "Pending");
  const PodFacts* old_job = FindPod(*data, "research/old-job");
  ASSERT_NE(old_job, nullptr);
  EXPECT_FALSE(old_job->HoldsResources());
}

TEST(K8sCodecTest, DemoPodManifestsParse) {
  struct Row {
    std::string name;
    std::string file;
    std::string key;
    std::string resource;
    int64_t count;
  };
  const std::vector<Row> rows = {
      {"MIG inference", "cmd/demo/pods/mig-inference.yaml", "acme/llm-b", "nvidia.com/mig-3g.40gb",
       1},
      {"shared notebook", "cmd/demo/pods/shared-notebook.yaml", "research/notebook-3",
       "nvidia.com/gpu.shared", 1},
      {"exclusive training", "cmd/demo/pods/exclusive-training.yaml", "research/finetune",
       "nvidia.com/gpu", 1},
      {"too big", "cmd/demo/pods/too-big.yaml", "research/pretrain", "nvidia.com/gpu", 8},
      {"untrusted shared", "cmd/demo/pods/untrusted-shared.yaml", "acme/cheap-inference",
       "nvidia.com/gpu.shared", 1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<rapidjson::Document> doc = ParseObjectText(SourceFile(row.file));
    ASSERT_TRUE(doc.ok()) << doc.status();
    absl::StatusOr<PodFacts> pod = ParsePod(*doc);
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->Key(), row.key);
    // Unquoted YAML numbers are JSON numbers, still whole units.
    EXPECT_EQ(Milli(pod->containers.at(0).limits, row.resource), row.count * 1000);
  }
}

TEST(K8sCodecTest, ClusterTextJsonAndYamlAgree) {
  const std::string json =
      R"({"kind":"List","items":[{"kind":"Node","metadata":{"name":"n1","labels":{"a":"b"}},)"
      R"("status":{"allocatable":{"nvidia.com/gpu":"2"}}}]})";
  const std::string yaml =
      "kind: List\nitems:\n- kind: Node\n  metadata:\n    name: n1\n    labels: {a: b}\n"
      "  status:\n    allocatable:\n      nvidia.com/gpu: 2\n";
  for (const std::string& text : {json, yaml}) {
    absl::StatusOr<ClusterData> data = ParseClusterText(text);
    ASSERT_TRUE(data.ok()) << data.status();
    ASSERT_EQ(data->nodes.size(), 1u);
    EXPECT_EQ(data->nodes[0].name, "n1");
    EXPECT_EQ(data->nodes[0].labels.at("a"), "b");
    EXPECT_EQ(Milli(data->nodes[0].allocatable, "nvidia.com/gpu"), 2000);
  }
}

TEST(K8sCodecTest, ClusterListShapes) {
  struct Row {
    std::string name;
    std::string text;
    size_t nodes, pods, namespaces;
    std::string error;  // substring; empty: ok
  };
  const std::vector<Row> rows = {
      {"single Node object", R"({"kind":"Node","metadata":{"name":"n"}})", 1, 0, 0, ""},
      {"single Pod object", R"({"kind":"Pod","metadata":{"name":"p"},"spec":{}})", 0, 1, 0, ""},
      {"kubectl List with other kinds", R"({"kind":"List","items":[
          {"kind":"ConfigMap","metadata":{"name":"c"}},
          {"kind":"Namespace","metadata":{"name":"ns","labels":{"x":"y"}}},
          {"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{}}]})",
       0, 1, 1, ""},
      {"PodList items take the item kind", R"({"kind":"PodList","items":[
          {"metadata":{"name":"p"},"spec":{}}]})",
       0, 1, 0, ""},
      {"empty list", R"({"kind":"List","items":[]})", 0, 0, 0, ""},
      {"not a list", R"({"kind":"ConfigMap"})", 0, 0, 0, "cluster file: no items"},
      {"not an object", R"([1,2])", 0, 0, 0, "cluster file: expected a List object"},
      {"items not an array", R"({"kind":"List","items":{}})", 0, 0, 0, "items: expected array"},
      {"bad item names its index",
       R"({"kind":"NodeList","items":[{"metadata":{"name":"a"}},{"metadata":{}}]})", 0, 0, 0,
       "items[1].metadata.name"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<ClusterData> data = ParseClusterText(row.text);
    if (!row.error.empty()) {
      ASSERT_FALSE(data.ok());
      EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(absl::StrContains(data.status().message(), row.error)) << data.status();
      continue;
    }
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(data->nodes.size(), row.nodes);
    EXPECT_EQ(data->pods.size(), row.pods);
    EXPECT_EQ(data->namespace_labels.size(), row.namespaces);
  }
}

// --- errors name the JSON path ------------------------------------------------------------------

TEST(K8sCodecTest, NodeErrorsNameThePath) {
  struct Row {
    std::string name;
    std::string json;
    std::string error;  // exact message
  };
  const std::vector<Row> rows = {
      {"bad quantity in allocatable",
       R"({"metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"lots"}}})",
       "node.status.allocatable.nvidia.com/gpu: quantity \"lots\" is not a valid Kubernetes "
       "quantity: no digits"},
      {"quantity of the wrong type",
       R"({"metadata":{"name":"n"},"status":{"allocatable":{"cpu":true}}})",
       "node.status.allocatable.cpu: quantity must be a string or number"},
      {"allocatable not an object", R"({"metadata":{"name":"n"},"status":{"allocatable":[]}})",
       "node.status.allocatable: expected object"},
      {"missing metadata", R"({"status":{}})", "node.metadata: missing"},
      {"missing name", R"({"metadata":{}})", "node.metadata.name: missing"},
      {"empty name", R"({"metadata":{"name":""}})", "node.metadata.name: empty"},
      {"label value not a string", R"({"metadata":{"name":"n","labels":{"a":1}}})",
       "node.metadata.labels.a: expected string value"},
      {"not an object", R"("node")", "node: expected object"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<NodeFacts> node = ParseNode(JsonOrFail(row.json));
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(node.status().message(), row.error)) << node.status();
  }
}

TEST(K8sCodecTest, PodErrorsNameThePath) {
  struct Row {
    std::string name;
    std::string json;
    std::string error;  // prefix of the message
  };
  const std::vector<Row> rows = {
      {"bad limit",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c",)"
       R"("resources":{"limits":{"nvidia.com/gpu":"1 Gi"}}}]}})",
       "pod.spec.containers[0].resources.limits.nvidia.com/gpu: quantity \"1 Gi\""},
      {"bad init request",
       R"({"metadata":{"name":"p"},"spec":{"containers":[],)"
       R"("initContainers":[{},{"resources":{"requests":{"cpu":"1.2.3"}}}]}})",
       "pod.spec.initContainers[1].resources.requests.cpu: quantity \"1.2.3\""},
      {"bad overhead", R"({"metadata":{"name":"p"},"spec":{"overhead":{"cpu":"x"}}})",
       "pod.spec.overhead.cpu: quantity \"x\""},
      {"container not an object", R"({"metadata":{"name":"p"},"spec":{"containers":["c"]}})",
       "pod.spec.containers[0]: expected object"},
      {"containers not an array", R"({"metadata":{"name":"p"},"spec":{"containers":{}}})",
       "pod.spec.containers: expected array"},
      {"missing spec", R"({"metadata":{"name":"p"}})", "pod.spec: missing"},
      {"annotation not a string", R"({"metadata":{"annotations":{"a":null}},"spec":{}})",
       "pod.metadata.annotations.a: expected string value"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<PodFacts> pod = ParsePod(JsonOrFail(row.json));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(pod.status().message(), row.error)) << pod.status();
  }
}

TEST(K8sCodecTest, PodDetails) {
  absl::StatusOr<PodFacts> pod = ParsePod(JsonOrFail(R"({
    "metadata": {"generateName": "job-", "namespace": "team", "labels": null},
    "spec": {
      "nodeName": "n1",
      "overhead": {"cpu": "250m"},
      "initContainers": [{"name": "sidecar", "restartPolicy": "Always",
                          "resources": {"limits": {"nvidia.com/gpu": 1}}},
                         {"name": "setup", "resources": null}],
      "containers": [{"name": "main", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"},
                                                    "limits": null}}]
    },
    "status": {"phase": "Running"}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "");  // generateName: no name yet
  EXPECT_EQ(pod->namespace_name, "team");
  EXPECT_EQ(pod->node_name, "n1");
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_TRUE(pod->HoldsResources());
  ASSERT_EQ(pod->init_containers.size(), 2u);
  EXPECT_TRUE(pod->init_containers[0].restartable);
  EXPECT_FALSE(pod->init_containers[1].restartable);
  EXPECT_EQ(Milli(pod->init_containers[0].limits, "nvidia.com/gpu"), 1000);
  EXPECT_EQ(Milli(pod->containers[0].requests, "cpu"), 500);
  EXPECT_TRUE(pod->containers[0].limits.empty());
  EXPECT_EQ(Milli(pod->overhead, "cpu"), 250);
}

TEST(K8sCodecTest, QuantityValues) {
  struct Row {
    std::string name;
    std::string json;
    int64_t milli;
  };
  const std::vector<Row> rows = {
      {"string", R"("8Gi")", int64_t{8} * 1024 * 1024 * 1024 * 1000},
      {"integer", "8", 8000},
      {"negative integer", "-2", -2000},
      {"fraction", "0.25", 250},
      {"exponent number", "1e3", 1000000},
      {"number with many significant digits", "1234567.5", 1234567500},
      {"tiny number rounds up", "0.0001", 1},
      {"large exponent number", "1e15", int64_t{1'000'000'000'000'000'000}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    rapidjson::Document doc = JsonOrFail(row.json);
    absl::StatusOr<Quantity> q = ParseQuantityValue(doc, "x");
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->milli(), row.milli);
  }
  rapidjson::Document huge = JsonOrFail("9223372036854775807");
  absl::StatusOr<Quantity> q = ParseQuantityValue(huge, "x.y");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "x.y: quantity too large");
  rapidjson::Document null_value = JsonOrFail("null");
  EXPECT_EQ(ParseQuantityValue(null_value, "x").status().message(),
            "x: quantity must be a string or number");
}

TEST(AnnotationOfTest, PresentAbsentAndOddShapes) {
  auto of = [](const char* json) {
    absl::StatusOr<rapidjson::Document> doc = ParseJson(json);
    EXPECT_TRUE(doc.ok()) << json;
    return AnnotationOf(&*doc, "gpu-tenancy.io/devices");
  };
  EXPECT_EQ(of(R"({"metadata":{"annotations":{"gpu-tenancy.io/devices":"{}"}}})"),
            std::optional<std::string>("{}"));
  EXPECT_EQ(of(R"({"metadata":{"annotations":{"gpu-tenancy.io/devices":""}}})"),
            std::optional<std::string>(""));  // present, if empty
  EXPECT_EQ(of(R"({"metadata":{"annotations":{"gpu-tenancy.io/devices":[1]}}})"),
            std::optional<std::string>("[1]"));  // not a string: still present
  EXPECT_EQ(of(R"({"metadata":{"annotations":{"other":"x"}}})"), std::nullopt);
  EXPECT_EQ(of(R"({"metadata":{"annotations":null}})"), std::nullopt);
  EXPECT_EQ(of(R"({"metadata":"odd"})"), std::nullopt);
  EXPECT_EQ(of(R"([])"), std::nullopt);
  EXPECT_EQ(AnnotationOf(nullptr, "gpu-tenancy.io/devices"), std::nullopt);
}

}  // namespace
}  // namespace wire
