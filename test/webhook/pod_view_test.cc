// webhook/pod_view: ParsePodView reads a Pod into what the rules see (containers of every list,
// resources, security context, device env, hostPath volumes, hostIPC, pool selections, the GPU
// demand), ContainerView::Label and PodView::HasGpuRequests; malformed pods name the JSON path.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"
#include "webhook/pod_rules.h"

namespace webhook {
namespace {

using webhook_test::TestPolicy;
using webhook_test::Yaml;

PodView MustView(const std::string& yaml, const topology::Policy& policy,
                 absl::string_view ns = "acme") {
  rapidjson::Document doc = Yaml(yaml);
  absl::StatusOr<PodView> view = ParsePodView(doc, policy, ns, "object");
  EXPECT_TRUE(view.ok()) << view.status() << "\n" << yaml;
  return view.ok() ? *std::move(view) : PodView();
}

std::string Spec(const std::string& spec, const std::string& metadata = "{name: p}") {
  return "metadata: " + metadata + "\nspec:\n" + spec;
}

TEST(PodViewTest, ContainersInListOrderWithLabels) {
  const PodView view = MustView(Spec("  ephemeralContainers: [{name: dbg}]\n"
                                     "  initContainers: [{name: setup}, {name: warm}]\n"
                                     "  containers: [{name: main}, {name: side}]\n"),
                                TestPolicy());
  struct Row {
    std::string name;
    ContainerList list;
    std::string label;
  };
  const std::vector<Row> want = {
      {"main", ContainerList::kContainer, "container \"main\""},
      {"side", ContainerList::kContainer, "container \"side\""},
      {"setup", ContainerList::kInit, "init container \"setup\""},
      {"warm", ContainerList::kInit, "init container \"warm\""},
      {"dbg", ContainerList::kEphemeral, "ephemeral container \"dbg\""},
  };
  ASSERT_EQ(view.containers.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(view.containers[i].name, want[i].name);
    EXPECT_EQ(view.containers[i].list, want[i].list);
    EXPECT_EQ(view.containers[i].Label(), want[i].label);
  }
}

TEST(PodViewTest, ContainerFields) {
  struct Row {
    std::string name;
    std::string container;  // a YAML flow map
    bool privileged;
    std::vector<std::string> caps;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> limits;
  };
  const std::vector<Row> rows = {
      {"bare", "{name: c}", false, {}, {}, {}},
      {"privileged", "{name: c, securityContext: {privileged: true}}", true, {}, {}, {}},
      {"privileged false", "{name: c, securityContext: {privileged: false}}", false, {}, {}, {}},
      {"privileged as a string does not count",
       "{name: c, securityContext: {privileged: 'true'}}",
       false,
       {},
       {},
       {}},
      {"capabilities, non-strings skipped",
       "{name: c, securityContext: {capabilities: {add: [SYS_ADMIN, 7, IPC_LOCK], drop: [ALL]}}}",
       false,
       {"SYS_ADMIN", "IPC_LOCK"},
       {},
       {}},
      {"only device env, in order",
       "{name: c, env: [{name: PATH, value: /bin}, {name: CUDA_MPS_PIPE_DIRECTORY, value: /p},"
       " {name: NVIDIA_VISIBLE_DEVICES, value: all}, {name: NVIDIA_DRIVER_CAPABILITIES,"
       " valueFrom: {fieldRef: {fieldPath: x}}}]}",
       false,
       {},
       {{"CUDA_MPS_PIPE_DIRECTORY", "/p"},
        {"NVIDIA_VISIBLE_DEVICES", "all"},
        {"NVIDIA_DRIVER_CAPABILITIES", ""}},
       {}},
      {"resources",
       "{name: c, resources: {requests: {cpu: 1}, limits: {nvidia.com/gpu: 2}}}",
       false,
       {},
       {},
       {"nvidia.com/gpu"}},
      {"null resources",
       "{name: c, resources: null, securityContext: null, env: null}",
       false,
       {},
       {},
       {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const PodView view = MustView(Spec("  containers: [" + row.container + "]\n"), TestPolicy());
    ASSERT_EQ(view.containers.size(), 1u);
    const ContainerView& c = view.containers[0];
    EXPECT_EQ(c.privileged, row.privileged);
    EXPECT_EQ(c.capabilities_added, row.caps);
    std::vector<std::pair<std::string, std::string>> env;
    for (const topology::EnvVar& e : c.env) env.emplace_back(e.name, e.value);
    EXPECT_EQ(env, row.env);
    std::vector<std::string> limits;
    for (const auto& [name, q] : c.limits) limits.push_back(name);
    EXPECT_EQ(limits, row.limits);
  }
  const PodView r =
      MustView(Spec("  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n"),
               TestPolicy());
  EXPECT_EQ(r.containers[0].requests.at("cpu").milli(), 500);
  EXPECT_EQ(r.containers[0].requests.at("memory").milli(), int64_t{1073741824} * 1000);
}

TEST(PodViewTest, VolumesAndHostIpc) {
  struct Row {
    std::string name;
    std::string spec;
    std::vector<std::pair<std::string, std::string>> host_paths;
    bool host_ipc;
  };
  const std::vector<Row> rows = {
      {"none", "", {}, false},
      {"hostPath only",
       "  volumes: [{name: dev, hostPath: {path: /dev/nvidia0}}, {name: e, emptyDir: {}},"
       " {name: run, hostPath: {path: /run, type: Directory}}]\n",
       {{"dev", "/dev/nvidia0"}, {"run", "/run"}},
       false},
      {"null hostPath is not one", "  volumes: [{name: x, hostPath: null}]\n", {}, false},
      {"hostIPC true", "  hostIPC: true\n", {}, true},
      {"hostIPC false", "  hostIPC: false\n", {}, false},
      {"hostIPC not a bool", "  hostIPC: 'yes'\n", {}, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const PodView view = MustView(Spec(row.spec + "  containers: [{name: c}]\n"), TestPolicy());
    std::vector<std::pair<std::string, std::string>> paths;
    for (const topology::HostPathVolume& v : view.facts.host_paths) {
      paths.emplace_back(v.volume, v.path);
    }
    EXPECT_EQ(paths, row.host_paths);
    EXPECT_EQ(view.facts.host_ipc, row.host_ipc);
  }
}

TEST(PodViewTest, PoolSelections) {
  const std::string required =
      "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
      "        nodeSelectorTerms:\n";
  struct Row {
    std::string name;
    std::string spec;
    std::vector<std::pair<std::string, std::string>> want;
  };
  const std::vector<Row> rows = {
      {"none", "", {}},
      {"nodeSelector",
       "  nodeSelector: {gpu-tenancy.io/pool: gpu-mig, zone: a}\n",
       {{"gpu-mig", "nodeSelector"}}},
      {"nodeSelector on another label", "  nodeSelector: {pool: gpu-mig}\n", {}},
      {"affinity In, values deduplicated across terms",
       required + "        - matchExpressions: [{key: gpu-tenancy.io/pool, operator: In,"
                  " values: [gpu-mig, gpu-timeslice]}]\n"
                  "        - matchExpressions: [{key: gpu-tenancy.io/pool, operator: In,"
                  " values: [gpu-mig, '']}]\n",
       {{"gpu-mig", "required node affinity"}, {"gpu-timeslice", "required node affinity"}}},
      {"affinity NotIn and other keys ignored",
       required + "        - matchExpressions: [{key: gpu-tenancy.io/pool, operator: NotIn,"
                  " values: [gpu-mig]}, {key: zone, operator: In, values: [a]}]\n",
       {}},
      {"preferred affinity ignored",
       "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
       "      - weight: 1\n        preference:\n          matchExpressions: [{key:"
       " gpu-tenancy.io/pool, operator: In, values: [gpu-mig]}]\n",
       {}},
      {"nodeSelector then affinity",
       "  nodeSelector: {gpu-tenancy.io/pool: gpu-mig}\n" + required +
           "        - matchExpressions: [{key: gpu-tenancy.io/pool, operator: In,"
           " values: [gpu-timeslice]}]\n",
       {{"gpu-mig", "nodeSelector"}, {"gpu-timeslice", "required node affinity"}}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const PodView view = MustView(Spec(row.spec + "  containers: [{name: c}]\n"), TestPolicy());
    std::vector<std::pair<std::string, std::string>> got;
    for (const PoolSelection& s : view.pool_selections) got.emplace_back(s.pool, s.how);
    EXPECT_EQ(got, row.want);
  }
  topology::Policy other = TestPolicy();
  other.pool_label = "example.com/pool";
  const PodView view =
      MustView(Spec("  nodeSelector: {gpu-tenancy.io/pool: a, example.com/pool: b}\n"
                    "  containers: [{name: c}]\n"),
               other);
  ASSERT_EQ(view.pool_selections.size(), 1u);
  EXPECT_EQ(view.pool_selections[0].pool, "b");
}

TEST(PodViewTest, DemandAndGpuRequests) {
  struct Row {
    std::string name;
    std::string limits;
    std::string annotations;
    bool demand_ok;
    bool gpu;
    int64_t memory_mib;
  };
  const std::vector<Row> rows = {
      {"cpu only", "{cpu: 1}", "{}", true, false, 0},
      {"whole gpu", "{nvidia.com/gpu: 1}", "{}", true, true, 0},
      {"mig", "{nvidia.com/mig-1g.10gb: 1}", "{}", true, true, 0},
      {"memory annotation alone", "{cpu: 1}", "{gpu-tenancy.io/gpu-memory: 10Gi}", true, true,
       10240},
      {"bad memory annotation is a demand error", "{nvidia.com/gpu.shared: 1}",
       "{gpu-tenancy.io/gpu-memory: lots}", false, true, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const PodView view =
        MustView(Spec("  containers: [{name: c, resources: {limits: " + row.limits + "}}]\n",
                      "{name: p, annotations: " + row.annotations + "}"),
                 TestPolicy());
    EXPECT_EQ(view.demand.ok(), row.demand_ok) << view.demand.status();
    EXPECT_EQ(view.HasGpuRequests(), row.gpu);
    if (view.demand.ok()) {
      EXPECT_EQ(view.demand->memory_mib, row.memory_mib);
    }
  }
}

TEST(PodViewTest, NamespaceAndMetadata) {
  const topology::Policy policy = TestPolicy();
  const PodView given =
      MustView(Spec("  containers: [{name: c}]\n",
                    "{name: p, namespace: research, labels: {app: x}, annotations: {a: b,"
                    " gpu-tenancy.io/gpu-memory: 1Gi}}"),
               policy, "acme");
  EXPECT_EQ(given.facts.name, "p");
  EXPECT_EQ(given.facts.namespace_name, "research");
  EXPECT_TRUE(given.facts.labels.empty());
  EXPECT_EQ(given.facts.annotations.size(), 1u);
  EXPECT_EQ(given.facts.annotations.count("gpu-tenancy.io/gpu-memory"), 1u);
  const PodView defaulted = MustView(Spec("  containers: [{name: c}]\n"), policy, "acme");
  EXPECT_EQ(defaulted.facts.namespace_name, "acme");
}

TEST(PodViewTest, CapturedPod) {
  rapidjson::Document review = webhook_test::Json(
      webhook_test::ReadTestData("admission/pod-create.validating.request.json"));
  const common::JsonValue* request = common::FindMember(review, "request");
  ASSERT_NE(request, nullptr);
  const common::JsonValue* object = common::FindMember(*request, "object");
  ASSERT_NE(object, nullptr);
  absl::StatusOr<PodView> view = ParsePodView(*object, TestPolicy(), "", "request.object");
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->facts.namespace_name, "gpu-team");
  ASSERT_FALSE(view->containers.empty());
  EXPECT_EQ(view->containers[0].list, ContainerList::kContainer);
  EXPECT_TRUE(view->HasGpuRequests());
  EXPECT_FALSE(view->facts.host_ipc);
}

TEST(PodViewTest, MalformedPodsNameThePath) {
  struct Row {
    std::string name;
    std::string yaml;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"containers not an array", Spec("  containers: {name: c}\n"), "object.spec.containers"},
      {"container not an object", Spec("  containers: [{name: c}]\n  initContainers: [x]\n"),
       "object.spec.initContainers[0]"},
      {"bad quantity",
       Spec("  containers: [{name: c}, {name: d, resources: {limits: {cpu: lots}}}]\n"),
       "object.spec.containers[1].resources.limits"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    rapidjson::Document doc = Yaml(row.yaml);
    absl::StatusOr<PodView> view = ParsePodView(doc, TestPolicy(), "acme", "object");
    ASSERT_FALSE(view.ok());
    EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(view.status().message(), row.message)) << view.status();
  }
  rapidjson::Document no_spec = Yaml("metadata: {name: p}\n");
  EXPECT_FALSE(ParsePodView(no_spec, TestPolicy(), "acme", "object").ok());
}

}  // namespace
}  // namespace webhook
