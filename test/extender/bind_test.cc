// extender/bind: the bind verb's protocol against a BindBackend that places pods on the demo
// model (cmd/demo) with topology::Place, the way kube::ClusterState does. The order of steps
// and which of them run after each failure, the reply kube-scheduler reads (parsed JSON), the
// annotations a placement becomes, and HTTP 400 naming the field of a malformed body.
#include "extender/bind.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/extender/demo_model.h"
#include "topology/wellknown.h"

namespace extender {
namespace {

constexpr char kWaitingUid[] = "00000000-0000-4000-8000-000000000009";

// Pods come from the demo cluster (plus any a test adds); Assume places them with Place.
// Every call is recorded; each step can be made to fail.
class FakeBackend : public BindBackend {
 public:
  FakeBackend() : data_(testing::DemoCluster()), state_(testing::ModelOf(data_)) {}

  absl::StatusOr<topology::PodFacts> LookupPod(const wire::BindingArgs& args) override {
    steps.push_back("lookup");
    looked_up = args;
    if (!lookup_error.ok()) return lookup_error;
    for (const topology::PodFacts& pod : data_.pods) {
      if (pod.namespace_name == args.pod_namespace && pod.name == args.pod_name) return pod;
    }
    return absl::NotFoundError("pod " + args.pod_namespace + "/" + args.pod_name + " not found");
  }
  absl::StatusOr<topology::PlaceOutcome> Assume(const topology::PodFacts& pod,
                                                const std::string& node) override {
    steps.push_back("assume " + node);
    if (!assume_error.ok()) return assume_error;
    const topology::NodeState* n = state_.snapshot->FindNode(node);
    if (!n) return absl::NotFoundError("node " + node + " is not in the cluster");
    absl::StatusOr<topology::GpuDemand> demand = topology::ComputeDemand(pod, *state_.policy);
    if (!demand.ok()) return demand.status();
    absl::StatusOr<topology::PodContext> ctx = topology::MakePodContext(
        pod, *state_.policy, state_.snapshot->NamespaceLabels(pod.namespace_name));
    if (!ctx.ok()) return ctx.status();
    topology::QuotaUsage held;
    if (ctx->tenant.tenant) {
      held = topology::TenantUsage(*state_.snapshot, *state_.policy, ctx->tenant.name);
    }
    return topology::Place(*demand, *ctx, *n, held, state_.snapshot->dra());
  }
  void Forget(const std::string& uid) override { steps.push_back("forget " + uid); }
  absl::Status PostBinding(const wire::BindingArgs& args,
                           const topology::Labels& annotations) override {
    steps.push_back("post " + args.pod_namespace + "/" + args.pod_name + " " + args.node);
    posted = annotations;
    return post_error;
  }
  void Report(const wire::BindingArgs& args, const topology::Placement* placement,
              absl::string_view error) override {
    steps.push_back("report " + args.pod_uid);
    reported_placement = placement ? std::optional(*placement) : std::nullopt;
    reported_error = std::string(error);
  }

  void AddPod(topology::PodFacts pod) { data_.pods.push_back(std::move(pod)); }

  absl::Status lookup_error, assume_error, post_error;
  std::vector<std::string> steps;
  wire::BindingArgs looked_up;
  topology::Labels posted;
  std::optional<topology::Placement> reported_placement;
  std::string reported_error = "(not reported)";

 private:
  topology::ClusterData data_;
  topology::ModelState state_;
};

std::string Body(const std::string& ns, const std::string& name, const std::string& uid,
                 const std::string& node) {
  return R"({"PodName":")" + name + R"(","PodNamespace":")" + ns + R"(","PodUID":")" + uid +
         R"(","Node":")" + node + R"("})";
}

std::string ErrorOf(const VerbReply& r) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(r.body);
  EXPECT_TRUE(doc.ok() && doc->IsObject() && doc->MemberCount() == 1) << r.body;
  if (!doc.ok()) return "(not JSON)";
  return std::string(common::StringOr(*doc, "Error", "(no Error)"));
}

TEST(BindTest, AFittingPodIsAssumedThenBoundWithItsPlacementAsAnnotations) {
  FakeBackend backend;
  VerbReply r = Bind(Body("acme", "waiting", kWaitingUid, "mig-a"), backend);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(ErrorOf(r), "");
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.failed, 0);
  EXPECT_TRUE(r.gpu_pod);
  EXPECT_EQ(backend.steps,
            (std::vector<std::string>{"lookup", "assume mig-a", "post acme/waiting mig-a",
                                      std::string("report ") + kWaitingUid}));
  EXPECT_EQ(backend.posted, (topology::Labels{{"gpu-tenancy.io/tenant", "acme"},
                                              {"gpu-tenancy.io/tier", "untrusted"},
                                              {"gpu-tenancy.io/pool", "gpu-mig"},
                                              {"gpu-tenancy.io/mig-profile", "3g.40gb"}}));
  ASSERT_TRUE(backend.reported_placement.has_value());
  EXPECT_EQ(backend.reported_placement->node, "mig-a");
  EXPECT_EQ(backend.reported_error, "");
}

TEST(BindTest, ASharedPodRecordsTheGpuWhoseMemoryItWasPromised) {
  FakeBackend backend;
  topology::PodFacts pod;
  pod.namespace_name = "research";
  pod.name = "notebook-3";
  pod.uid = "u-3";
  pod.annotations.emplace("gpu-tenancy.io/gpu-memory", "16Gi");
  topology::ContainerFacts c;
  c.limits.emplace("nvidia.com/gpu.shared", topology::Quantity::FromUnits(1));
  pod.containers.push_back(c);
  backend.AddPod(pod);
  // ts-a: GPU 0 has 16Gi of 40Gi free, GPU 1 32Gi: the fullest that still holds it is GPU 0.
  VerbReply r = Bind(Body("research", "notebook-3", "u-3", "ts-a"), backend);
  EXPECT_EQ(ErrorOf(r), "");
  EXPECT_EQ(backend.posted, (topology::Labels{{"gpu-tenancy.io/tenant", "research"},
                                              {"gpu-tenancy.io/tier", "trusted"},
                                              {"gpu-tenancy.io/pool", "gpu-timeslice"},
                                              {"gpu-tenancy.io/gpu-index", "0"}}));
}

TEST(BindTest, EachFailureStopsAtItsStepAndIsAnsweredAsError) {
  struct Row {
    std::string name;
    std::string node;
    absl::Status lookup_error, assume_error, post_error;
    std::string error;
    std::vector<std::string> steps;
  };
  const std::string report = std::string("report ") + kWaitingUid;
  const std::vector<Row> rows = {
      {"pod not found",
       "mig-a",
       absl::NotFoundError("pod acme/waiting not found"),
       {},
       {},
       "gpu-tenancy bind: pod acme/waiting not found",
       {"lookup", report}},
      {"cache not synced",
       "mig-a",
       {},
       absl::FailedPreconditionError("cache not synced"),
       {},
       "gpu-tenancy bind: cache not synced",
       {"lookup", "assume mig-a", report}},
      {"node no longer fits",
       "mig-b",
       {},
       {},
       {},
       "gpu-tenancy bind: node mig-b no longer fits: nvidia.com/mig-3g.40gb: requested 1, free 0 "
       "of 2",
       {"lookup", "assume mig-b", report}},
      {"node mid MIG reconfiguration",
       "mig-c",
       {},
       {},
       {},
       "gpu-tenancy bind: node mig-c no longer fits: MIG reconfiguration in progress "
       "(nvidia.com/mig.config.state=pending)",
       {"lookup", "assume mig-c", report}},
      {"Binding refused: the assumption is forgotten",
       "mig-a",
       {},
       {},
       absl::AbortedError("409: pod acme/waiting is already assigned to node mig-b"),
       "gpu-tenancy bind: 409: pod acme/waiting is already assigned to node mig-b",
       {"lookup", "assume mig-a", "post acme/waiting mig-a", std::string("forget ") + kWaitingUid,
        report}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FakeBackend backend;
    backend.lookup_error = row.lookup_error;
    backend.assume_error = row.assume_error;
    backend.post_error = row.post_error;
    VerbReply r = Bind(Body("acme", "waiting", kWaitingUid, row.node), backend);
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(ErrorOf(r), row.error);
    EXPECT_EQ(r.failed, 1);
    EXPECT_EQ(r.kept, 0);
    EXPECT_EQ(backend.steps, row.steps);
    EXPECT_FALSE(backend.reported_placement.has_value());
    EXPECT_EQ(backend.reported_error, row.error);
  }
}

TEST(BindTest, KubeSchedulersCapturedRequestIsRead) {
  FakeBackend backend;
  VerbReply r = Bind(testing::ReadTestData("extender/bind.request.json"), backend);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(backend.looked_up.pod_name, "pod-bind");
  EXPECT_EQ(backend.looked_up.pod_namespace, "gpu-team");
  EXPECT_EQ(backend.looked_up.pod_uid, "8a96f868-e622-4ed7-9ef7-dafa0a600f3b");
  EXPECT_EQ(backend.looked_up.node, "cpu-node-c");
  EXPECT_EQ(ErrorOf(r), "gpu-tenancy bind: pod gpu-team/pod-bind not found");
}

TEST(BindTest, MalformedBodiesAre400NamingTheFieldAndTouchNothing) {
  struct Row {
    std::string name;
    std::string body;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"not JSON", "{\"PodName\":", "invalid JSON at byte 11: Invalid value."},
      {"empty body", "", "invalid JSON at byte 0: The document is empty."},
      {"nested without bound",
       "{\"PodName\":" + std::string(100000, '[') + std::string(100000, ']') + "}",
       "invalid JSON: nested deeper than 512 levels"},
      {"not an object", R"(["waiting"])", "ExtenderBindingArgs: expected a JSON object"},
      {"no PodName", R"({"PodNamespace":"acme","PodUID":"u","Node":"mig-a"})",
       "ExtenderBindingArgs.PodName: missing or not a non-empty string"},
      {"empty PodNamespace", Body("", "waiting", "u", "mig-a"),
       "ExtenderBindingArgs.PodNamespace: missing or not a non-empty string"},
      {"PodUID not a string", R"({"PodName":"w","PodNamespace":"acme","PodUID":7,"Node":"n"})",
       "ExtenderBindingArgs.PodUID: missing or not a non-empty string"},
      {"Node null", R"({"PodName":"w","PodNamespace":"acme","PodUID":"u","Node":null})",
       "ExtenderBindingArgs.Node: missing or not a non-empty string"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FakeBackend backend;
    VerbReply r = Bind(row.body, backend);
    EXPECT_EQ(r.http_status, 400);
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(r.body);
    ASSERT_TRUE(doc.ok()) << r.body;
    EXPECT_EQ(doc->MemberCount(), 1u) << r.body;
    EXPECT_EQ(common::StringOr(*doc, "error"), row.error);
    EXPECT_TRUE(backend.steps.empty()) << "a malformed body reaches no backend step";
  }
}

TEST(PlacementAnnotationsTest, WritesWhatThePlacementKnows) {
  struct Row {
    std::string name;
    topology::Placement placement;
    topology::Labels want;
  };
  const std::string t(topology::kTenantAnnotation), tier(topology::kTierAnnotation),
      pool(topology::kPoolAnnotation), gpu(topology::kGpuIndexAnnotation),
      mig(topology::kMigProfileAnnotation);
  const std::vector<Row> rows = {
      {"denied tenant: its name only",
       {"n", "unknown", "", "", std::nullopt, ""},
       {{t, "unknown"}}},
      {"whole GPUs",
       {"n", "lab", "trusted", "gpu-exclusive", std::nullopt, ""},
       {{t, "lab"}, {tier, "trusted"}, {pool, "gpu-exclusive"}}},
      {"shared GPU 0 is written as 0",
       {"n", "lab", "trusted", "ts", 0, ""},
       {{t, "lab"}, {tier, "trusted"}, {pool, "ts"}, {gpu, "0"}}},
      {"MIG slice",
       {"n", "acme", "untrusted", "gpu-mig", std::nullopt, "1g.10gb"},
       {{t, "acme"}, {tier, "untrusted"}, {pool, "gpu-mig"}, {mig, "1g.10gb"}}},
      {"everything",
       {"n", "x", "y", "z", 3, "3g.40gb"},
       {{t, "x"}, {tier, "y"}, {pool, "z"}, {gpu, "3"}, {mig, "3g.40gb"}}},
      {"fair sharing: borrowed",
       {"n", "batch", "trusted", "gpu-exclusive", std::nullopt, "", "borrowed"},
       {{t, "batch"},
        {tier, "trusted"},
        {pool, "gpu-exclusive"},
        {std::string(topology::kShareAnnotation), "borrowed"}}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(PlacementAnnotations(row.placement), row.want);
  }
}

}  // namespace
}  // namespace extender
