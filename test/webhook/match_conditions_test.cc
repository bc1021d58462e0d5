// The webhooks' matchConditions select every request the webhooks act on: for pods and claims
// made at random (seeded, so a failure reproduces) and for a table of each escape hatch, each
// GPU resource family and each write of a node-agent device annotation, whenever Review
// denies, warns or patches, the generated condition, evaluated as CEL over the very
// AdmissionReview, is true; it is never an error; each clause is needed (without it, some
// request the webhook acts on would be skipped); and ordinary Node updates are never sent.
#include "webhook/match_conditions.h"

#include <cctype>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cel/data.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"
#include "test/webhook/cel_json.h"
#include "test/webhook/random_admission.h"
#include "test/webhook/webhook_test_util.h"
#include "topology/scheduler_wiring.h"
#include "webhook/review.h"

namespace webhook {
namespace {

using cel::CelCondition;
using cel::CelData;
using cel::CelOutcome;
using cel::CelResult;
using webhook_test::Generator;
using webhook_test::kNamespaces;
using webhook_test::MakeRequest;
using webhook_test::Request;

// The webhook test policy, with what only some policies have: PriorityClass lists, a quota
// enforced at admission, and resource names outside nvidia.com/.
constexpr char kPolicy[] = R"(
tiers:
  - {name: untrusted, modes: [exclusive, mig]}
  - {name: trusted, modes: [exclusive, mig, mig-shared, mps, timeslice]}
  - {name: platform, modes: [exclusive, mig, mig-shared, mps, timeslice], deviceAccess: true}
tenants:
  - name: acme
    tier: untrusted
    namespaces: [acme]
    priorityClasses: [acme-low, shared-high]
    limits: {gpuMemoryPerPod: 80Gi, migProfiles: [1g.10gb, 2g.20gb, 3g.40gb]}
    quota: {gpus: 2}
  - name: bank
    tier: untrusted
    namespaceSelector: {matchLabels: {gpu-tenancy.io/tenant: bank}}
    limits: {migProfiles: [3g.40gb]}
  - name: research
    tier: trusted
    namespaces: [research]
    priorityClasses: [shared-high, research-low]
    limits:
      gpuMemoryPerPod: 40Gi
      sharedReplicasPerPod: 1
      mps: {maxActiveThreadPercentage: 50, maxPinnedMemory: 20Gi}
  - {name: gpu-platform, tier: platform, namespaces: [gpu-ops]}
unknownTenant: deny
quotaEnforcement: admission
poolLabel: gpu-tenancy.io/pool
pools:
  - {name: gpu-mig, mode: mig, taint: {key: gpu-tenancy.io/pool, value: gpu-mig, effect: NoSchedule}}
  - {name: gpu-timeslice, mode: timeslice}
  - {name: gpu-exclusive, mode: exclusive}
sharedResources: [example.com/vgpu]
memoryResources: [nvidia.com/gpu.memory, example.com/gpu-mem]
admission:
  deviceClasses:
    other: [nic.example.com, "compute-domain-*.nvidia.com"]
)";

const topology::Policy& TestPolicy() {
  static const topology::Policy* policy = [] {
    absl::StatusOr<topology::Policy> p = common::LoadPolicy(kPolicy);
    EXPECT_TRUE(p.ok()) << p.status();
    return new topology::Policy(p.ok() ? *p : topology::Policy());
  }();
  return *policy;
}

// Four GPUs; a custom class that selects them, one that selects none; a GPU claim and a NIC
// claim (and templates) in every namespace, for pods' spec.resourceClaims.
const topology::ClusterSnapshot& TestSnapshot() {
  static const topology::ClusterSnapshot* snapshot = [] {
    topology::ClusterData data;
    std::vector<topology::DraDevice> devices;
    for (int i = 0; i < 4; ++i) {
      devices.push_back(testing_dra::NvidiaDevice("node-a", absl::StrCat("gpu-", i)));
    }
    data.dra_slices.push_back(testing_dra::NodeSlice("node-a", devices));
    data.dra_classes.push_back({"gpu.nvidia.com", {"device.driver == 'gpu.nvidia.com'"}, ""});
    data.dra_classes.push_back({"my-gpus", {"device.driver == 'gpu.nvidia.com'"}, ""});
    data.dra_classes.push_back({"nic.example.com", {"device.driver == 'nic.example.com'"}, ""});
    for (const std::string& ns : kNamespaces) {
      data.namespace_labels[ns] = {};
      for (const auto& [name, device_class] : std::vector<std::pair<std::string, std::string>>{
               {"gpu", "gpu.nvidia.com"}, {"nic", "nic.example.com"}}) {
        topology::DraClaim claim;
        claim.namespace_name = ns;
        claim.name = name;
        claim.device_classes = {device_class};
        data.dra_claims.push_back(claim);
        data.dra_claim_templates.push_back(claim);
      }
    }
    data.namespace_labels["bank-ns"] = {{"gpu-tenancy.io/tenant", "bank"}};
    return new topology::ClusterSnapshot(
        topology::BuildSnapshot(data, common::BuiltinCatalog(), TestPolicy()));
  }();
  return *snapshot;
}

struct Verdict {
  bool acted = false;  // denied, warned, patched, or a call failure
  std::string what;
  CelResult condition;
};

Verdict Judge(const Request& r, ReviewKind webhook, const CelCondition& condition) {
  rapidjson::Document object = webhook_test::Json(r.object);
  rapidjson::Document old_object;
  webhook_test::ReviewOptions o;
  o.ns = r.ns;
  o.kind = r.kind;
  o.sub_resource = r.sub_resource;
  if (r.kind == "Node") {
    o.resource = "nodes";
  } else if (r.kind != "Pod") {
    o.group = "resource.k8s.io";
    o.resource = r.kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates";
  }
  rapidjson::Document user_info;
  if (!r.user_info.empty()) {
    user_info = webhook_test::Json(r.user_info);
    o.user_info = &user_info;
  }
  if (!r.old_object.empty()) {
    old_object = webhook_test::Json(r.old_object);
    o.operation = "UPDATE";
    o.old_object = &old_object;
  }
  const std::string body = webhook_test::MakeReview(object, o);
  ReviewOutcome out = Review(body, webhook, TestPolicy(), TestSnapshot());
  Verdict v;
  v.acted =
      out.http_status != 200 || !out.allowed || !out.warnings.empty() || !out.patch_json.empty();
  v.what =
      absl::StrCat("status ", out.http_status, ", allowed ", out.allowed, ", ", out.message,
                   " warnings [", absl::StrJoin(out.warnings, "; "), "] patch ", out.patch_json);
  rapidjson::Document review = webhook_test::Json(body);
  const rapidjson::Value* request = webhook_test::At(review, "/request");
  const CelData request_data = webhook_test::ToCelData(*request);
  const CelData* object_data = request_data.Find("object");
  const CelData* old_data = request_data.Find("oldObject");
  v.condition = condition.Evaluate(
      {{"object", object_data}, {"oldObject", old_data}, {"request", &request_data}});
  return v;
}

// request.userInfo of the node agent's pod-bound token on `node`.
std::string AgentUserInfo(const std::string& node) {
  return absl::StrCat(
      R"({"username":"system:serviceaccount:gpu-tenancy-system:gpu-tenancy-node-agent",)",
      R"("extra":{"authentication.kubernetes.io/node-name":[")", node, R"("]}})");
}

// A CPU-only pod bound to gpu-a, with `annotations` (JSON members, may be empty).
std::string CpuPodOnGpuA(const std::string& annotations) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web")",
      annotations.empty() ? "" : absl::StrCat(",\"annotations\":{", annotations, "}"),
      R"(},"spec":{"nodeName":"gpu-a","containers":[{"name":"main"}]}})");
}

// Node gpu-a with `annotations` (JSON members, may be empty) and `labels` (the same).
std::string NodeGpuA(const std::string& annotations, const std::string& labels = "") {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-a")",
      annotations.empty() ? "" : absl::StrCat(",\"annotations\":{", annotations, "}"),
      labels.empty() ? "" : absl::StrCat(",\"labels\":{", labels, "}"),
      R"(},"status":{"capacity":{"nvidia.com/gpu":"8"}}})");
}

// A request for `object` (after `old_object`, UPDATE, when not empty) from `user_info`.
Request AnnotationRequest(std::string name, std::string kind, std::string object,
                          std::string old_object, std::string user_info = "") {
  Request r = MakeRequest(std::move(name), std::move(object), kind == "Node" ? "" : "acme", kind);
  r.old_object = std::move(old_object);
  r.user_info = std::move(user_info);
  return r;
}

constexpr char kPodDevices[] = R"("gpu-tenancy.io/devices":"{\"main\":[\"GPU-1\"]}")";
constexpr char kPodDevicesOther[] = R"("gpu-tenancy.io/devices":"{\"main\":[\"GPU-2\"]}")";
constexpr char kNodeDevices[] = R"("gpu-tenancy.io/gpu-devices":"[\"GPU-1\"]")";
constexpr char kNodeDevicesOther[] = R"("gpu-tenancy.io/gpu-devices":"[\"GPU-1\",\"GPU-2\"]")";

CelCondition Compile(ReviewKind webhook, const std::set<std::string>& without = {}) {
  const MatchCondition c = WebhookMatchCondition(TestPolicy(), webhook, without);
  std::vector<std::string> variables(std::begin(kMatchConditionVariables),
                                     std::end(kMatchConditionVariables));
  CelCondition compiled = CelCondition::Compile(c.expression, variables);
  EXPECT_TRUE(compiled.supported()) << compiled.unsupported_reason() << "\n" << c.expression;
  return compiled;
}

// Hand-picked rows: every escape hatch device-access knows, every GPU resource family, the
// claim shapes, and the requests the webhooks must not see.
std::vector<Request> TableRows() {
  auto pod = [](const std::string& name, const std::string& ns, const std::string& spec_extra,
                const std::string& container_extra, const std::string& metadata_extra = "") {
    return MakeRequest(
        name,
        absl::StrCat("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"",
                     metadata_extra, "},\"spec\":{\"containers\":[{\"name\":\"main\"",
                     container_extra, "}]", spec_extra, "}}"),
        ns);
  };
  auto limit = [](const std::string& name, const std::string& q = "1") {
    return absl::StrCat(",\"resources\":{\"limits\":{\"", name, "\":\"", q, "\"}}");
  };
  std::vector<Request> rows = {
      pod("privileged", "acme", "", ",\"securityContext\":{\"privileged\":true}"),
      pod("CAP_SYS_ADMIN", "acme", "",
          ",\"securityContext\":{\"capabilities\":{\"add\":[\"CAP_SYS_ADMIN\"]}}"),
      pod("sys_admin", "acme", "",
          ",\"securityContext\":{\"capabilities\":{\"add\":[\"sys_admin\"]}}"),
      pod("ALL capabilities", "acme", "",
          ",\"securityContext\":{\"capabilities\":{\"add\":[\"ALL\"]}}"),
      pod("NVIDIA_VISIBLE_DEVICES=all", "acme", "",
          ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]"),
      pod("NVIDIA_DRIVER_CAPABILITIES", "acme", "",
          ",\"env\":[{\"name\":\"NVIDIA_DRIVER_CAPABILITIES\",\"value\":\"compute\"}]"),
      pod("CUDA_MPS_PIPE_DIRECTORY from a secret", "acme", "",
          ",\"env\":[{\"name\":\"CUDA_MPS_PIPE_DIRECTORY\",\"valueFrom\":{\"secretKeyRef\":{"
          "\"name\":\"s\",\"key\":\"k\"}}}]"),
      pod("hostIPC", "acme", ",\"hostIPC\":true", ""),
      pod("unknown tenant, privileged", "nobody", "", ",\"securityContext\":{\"privileged\":true}"),
      pod("pool selector of another tier", "acme",
          ",\"nodeSelector\":{\"gpu-tenancy.io/pool\":"
          "\"gpu-timeslice\"}",
          ""),
      pod("priority class of no tenant", "acme", ",\"priorityClassName\":\"system-node-critical\"",
          ""),
      pod("memory annotation alone", "research", "", "",
          ",\"annotations\":{\"gpu-tenancy.io/gpu-memory\":\"20Gi\"}"),
      pod("unreadable memory annotation", "acme", "", "",
          ",\"annotations\":{\"gpu-tenancy.io/gpu-memory\":\"lots\"}"),
      pod("claim for a GPU class", "acme",
          ",\"resourceClaims\":[{\"name\":\"g\","
          "\"resourceClaimName\":\"gpu\"}]",
          ""),
      pod("claim from a template for a GPU class", "nobody",
          ",\"resourceClaims\":[{\"name\":\"g\","
          "\"resourceClaimTemplateName\":\"gpu\"}]",
          ""),
      pod("init container GPU", "nobody",
          ",\"initContainers\":[{\"name\":\"i\",\"resources\":"
          "{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}]",
          ""),
  };
  for (const char* path : {"/dev/nvidia0",
                           "/dev/nvidiactl",
                           "/dev/dri",
                           "/dev/dri/card0",
                           "/run/nvidia",
                           "/var/run/nvidia-persistenced",
                           "/tmp/nvidia-mps",
                           "/dev",
                           "/",
                           "/var/run",
                           "/var",
                           "/tmp",
                           "/run",
                           "/dev/../dev/nvidia0",
                           "//dev//nvidia0",
                           "/dev/",
                           "dev/nvidia0",
                           "/home/../dev",
                           "/data/nvidia-mps-pipe",
                           "/dev/./dri"}) {
    rows.push_back(
        pod(absl::StrCat("hostPath ", path), "acme",
            absl::StrCat(",\"volumes\":[{\"name\":\"v\",\"hostPath\":{\"path\":\"", path, "\"}}]"),
            ""));
  }
  // Every GPU resource family, in the namespace of no tenant (unknown-tenant denies it).
  std::vector<std::string> names = {"nvidia.com/gpu",          "nvidia.com/gpu.shared",
                                    "nvidia.com/mig-1g.10gb",  "nvidia.com/mig-3g.40gb.shared",
                                    "nvidia.com/gpu.memory",   "example.com/gpu-mem",
                                    "example.com/vgpu",        "nvidia.com/mps-core",
                                    "nvidia.com/anything-else"};
  for (const topology::ManagedResource& m :
       topology::ManagedResources(common::BuiltinCatalog(), TestPolicy())) {
    names.push_back(m.name);
  }
  for (const std::string& name : names) {
    rows.push_back(pod(absl::StrCat("resource ", name), "nobody", "", limit(name, "1")));
  }
  auto claim = [](const std::string& name, const std::string& kind, const std::string& ns,
                  const std::string& devices) {
    std::string spec = absl::StrCat("{\"devices\":{", devices, "}}");
    if (kind == "ResourceClaimTemplate") spec = absl::StrCat("{\"spec\":", spec, "}");
    return MakeRequest(name,
                       absl::StrCat("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"", kind,
                                    "\",\"metadata\":{\"name\":\"k\"},\"spec\":", spec, "}"),
                       ns, kind);
  };
  for (const char* kind : {"ResourceClaim", "ResourceClaimTemplate"}) {
    rows.push_back(claim(absl::StrCat(kind, " admin access to NICs"), kind, "acme",
                         "\"requests\":[{\"name\":\"n\",\"exactly\":{\"deviceClassName\":"
                         "\"nic.example.com\",\"adminAccess\":true}}]"));
    rows.push_back(claim(absl::StrCat(kind, " GPU class, unknown tenant"), kind, "nobody",
                         "\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                         "\"gpu.nvidia.com\"}}]"));
    rows.push_back(claim(absl::StrCat(kind, " MIG subrequest"), kind, "acme",
                         "\"requests\":[{\"name\":\"g\",\"firstAvailable\":[{\"name\":\"a\","
                         "\"deviceClassName\":\"mig.nvidia.com\"}]}]"));
    rows.push_back(claim(absl::StrCat(kind, " time-slicing config"), kind, "acme",
                         "\"config\":[{\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":{"
                         "\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\"}}}}]"));
  }
  // resource.k8s.io/v1alpha2: a resource class instead of device requests.
  for (const char* ns : {"nobody", "acme"}) {
    rows.push_back(MakeRequest(
        absl::StrCat("v1alpha2 NVIDIA resource class in ", ns),
        R"({"apiVersion":"resource.k8s.io/v1alpha2","kind":"ResourceClaim","metadata":{"name":"k"},
            "spec":{"resourceClassName":"NVIDIA-gpu"}})",
        ns, "ResourceClaim"));
  }
  rows.push_back(claim("custom GPU class past the quota", "ResourceClaim", "acme",
                       "\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                       "\"my-gpus\",\"count\":3}}]"));
  // Device annotations written by anyone but the node agent of the object's node: on a CPU-only
  // pod (no other clause selects it) and on a Node.
  const std::string agent_on_b = AgentUserInfo("gpu-b");
  for (const auto& [what, user] : std::vector<std::pair<std::string, std::string>>{
           {"tenant", ""}, {"agent of gpu-b", agent_on_b}}) {
    rows.push_back(AnnotationRequest(absl::StrCat("CPU pod created with devices by ", what), "Pod",
                                     CpuPodOnGpuA(kPodDevices), "", user));
    rows.push_back(AnnotationRequest(absl::StrCat("CPU pod devices added by ", what), "Pod",
                                     CpuPodOnGpuA(kPodDevices), CpuPodOnGpuA(""), user));
    rows.push_back(AnnotationRequest(absl::StrCat("CPU pod devices changed by ", what), "Pod",
                                     CpuPodOnGpuA(kPodDevicesOther), CpuPodOnGpuA(kPodDevices),
                                     user));
    rows.push_back(AnnotationRequest(absl::StrCat("CPU pod devices removed by ", what), "Pod",
                                     CpuPodOnGpuA("\"team\":\"a\""), CpuPodOnGpuA(kPodDevices),
                                     user));
    rows.push_back(AnnotationRequest(absl::StrCat("Node created with gpu-devices by ", what),
                                     "Node", NodeGpuA(kNodeDevices), "", user));
    rows.push_back(AnnotationRequest(absl::StrCat("Node gpu-devices added by ", what), "Node",
                                     NodeGpuA(kNodeDevices), NodeGpuA(""), user));
    rows.push_back(AnnotationRequest(absl::StrCat("Node gpu-devices changed by ", what), "Node",
                                     NodeGpuA(kNodeDevicesOther), NodeGpuA(kNodeDevices), user));
    rows.push_back(AnnotationRequest(absl::StrCat("Node gpu-devices removed by ", what), "Node",
                                     NodeGpuA(""), NodeGpuA(kNodeDevices), user));
  }
  return rows;
}

// What must never reach the webhooks: they would not act on it, and an outage must not block it.
std::vector<Request> SkippedRows() {
  return {
      MakeRequest("CPU pod", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{
         "containers":[{"name":"main","resources":{"limits":{"cpu":"1","memory":"1Gi"}},
         "env":[{"name":"PATH","value":"/bin"}],"securityContext":{"privileged":false}}],
         "volumes":[{"name":"logs","hostPath":{"path":"/var/log"}}],"hostIPC":false,
         "priorityClassName":"shared-high","nodeSelector":{"kubernetes.io/os":"linux"}}})",
                  "acme"),
      MakeRequest("CPU pod of an unknown tenant",
                  R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w"},
         "spec":{"containers":[{"name":"main","image":"nginx"}]}})",
                  "nobody"),
      // A template: with a quota in the policy every ResourceClaim is sent (claim-quota).
      MakeRequest("NIC claim template",
                  R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
         "metadata":{"name":"n"},"spec":{"spec":{"devices":{"requests":[{"name":"n","exactly":{
         "deviceClassName":"nic.example.com"}}]}}}})",
                  "acme", "ResourceClaimTemplate"),
      // The kubelet's and controllers' Node writes, which must never wait on this webhook.
      AnnotationRequest("Node registered by the kubelet", "Node", NodeGpuA(""), ""),
      AnnotationRequest("Node labelled by GPU Feature Discovery", "Node",
                        NodeGpuA(kNodeDevices, R"("nvidia.com/gpu.count":"8")"),
                        NodeGpuA(kNodeDevices)),
      AnnotationRequest(
          "Node annotated by a controller", "Node",
          NodeGpuA(absl::StrCat(kNodeDevices, R"(,"node.alpha.kubernetes.io/ttl":"0")")),
          NodeGpuA(kNodeDevices)),
      AnnotationRequest("Node without annotations updated", "Node",
                        NodeGpuA("", R"("kubernetes.io/os":"linux")"), NodeGpuA("")),
      AnnotationRequest("CPU pod relabelled, devices kept", "Pod",
                        CpuPodOnGpuA(absl::StrCat(kPodDevices, R"(,"team":"b")")),
                        CpuPodOnGpuA(kPodDevices)),
  };
}

TEST(MatchConditionsTest, EveryRequestTheWebhooksActOnIsSelected) {
  for (ReviewKind webhook : {ReviewKind::kValidate, ReviewKind::kMutate}) {
    SCOPED_TRACE(webhook == ReviewKind::kValidate ? "validate" : "mutate");
    const CelCondition condition = Compile(webhook);
    Generator gen(34);
    std::vector<Request> requests = TableRows();
    for (int i = 0; i < 3000; ++i) requests.push_back(gen.Pod(i));
    for (int i = 0; i < 1500; ++i) requests.push_back(gen.Claim(i));
    int acted = 0, skipped = 0, failures = 0;
    for (const Request& r : requests) {
      Verdict v = Judge(r, webhook, condition);
      const bool ok = v.condition.outcome == CelOutcome::kTrue ||
                      (v.condition.outcome == CelOutcome::kFalse && !v.acted);
      acted += v.acted ? 1 : 0;
      skipped += v.condition.outcome == CelOutcome::kFalse ? 1 : 0;
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << r.name << " in " << r.ns << ": condition " << v.condition.detail
                      << (v.condition.outcome == CelOutcome::kFalse ? "false" : " (not a bool)")
                      << " but the webhook answered " << v.what << "\n"
                      << r.object;
      }
    }
    EXPECT_EQ(failures, 0);
    // The conditions are not trivially true: plenty of random requests are left alone.
    EXPECT_GT(acted, 500);
    EXPECT_GT(skipped, 500);
  }
}

TEST(MatchConditionsTest, TableRowsAreActedOnAndSelected) {
  const CelCondition validate = Compile(ReviewKind::kValidate);
  const CelCondition mutate = Compile(ReviewKind::kMutate);
  for (const Request& r : TableRows()) {
    SCOPED_TRACE(r.name);
    bool acted = false;
    for (const auto& [webhook, condition] :
         {std::pair{ReviewKind::kValidate, &validate}, std::pair{ReviewKind::kMutate, &mutate}}) {
      Verdict v = Judge(r, webhook, *condition);
      acted = acted || v.acted;
      if (v.acted) {
        EXPECT_EQ(v.condition.outcome, CelOutcome::kTrue) << v.condition.detail << "\n" << v.what;
      }
    }
    EXPECT_TRUE(acted) << "the row exercises no rule and no mutation";
  }
}

TEST(MatchConditionsTest, OtherRequestsSkipTheWebhooks) {
  for (ReviewKind webhook : {ReviewKind::kValidate, ReviewKind::kMutate}) {
    const CelCondition condition = Compile(webhook);
    for (const Request& r : SkippedRows()) {
      SCOPED_TRACE(r.name);
      Verdict v = Judge(r, webhook, condition);
      EXPECT_FALSE(v.acted) << v.what;
      EXPECT_EQ(v.condition.outcome, CelOutcome::kFalse) << v.condition.detail;
    }
  }
}

TEST(MatchConditionsTest, EveryClauseIsNeeded) {
  Generator gen(34);
  std::vector<Request> requests = TableRows();
  for (int i = 0; i < 3000; ++i) requests.push_back(gen.Pod(i));
  for (int i = 0; i < 1500; ++i) requests.push_back(gen.Claim(i));
  for (ReviewKind webhook : {ReviewKind::kValidate, ReviewKind::kMutate}) {
    std::set<std::string> names;
    for (MatchKind kind : {MatchKind::kPod, MatchKind::kResourceClaim,
                           MatchKind::kResourceClaimTemplate, MatchKind::kNode}) {
      for (const MatchClause& c : MatchClauses(TestPolicy(), webhook, kind)) names.insert(c.name);
    }
    for (const std::string& name : names) {
      SCOPED_TRACE(absl::StrCat(webhook == ReviewKind::kValidate ? "validate" : "mutate",
                                " without ", name));
      const CelCondition condition = Compile(webhook, {name});
      bool missed = false;
      for (size_t i = 0; i < requests.size() && !missed; ++i) {
        Verdict v = Judge(requests[i], webhook, condition);
        missed = v.acted && v.condition.outcome == CelOutcome::kFalse;
      }
      EXPECT_TRUE(missed) << "no request needs this clause";
    }
  }
}

// Every pair of before and after for a device annotation, on a Pod and on a Node, CREATE (no
// oldObject) included, from a caller who may not write it: the condition is never an error,
// and is true exactly when the annotation is added, changed or removed, which is exactly when
// the webhook denies. Metadata without annotations, or with none at all, is well-formed too.
TEST(MatchConditionsTest, DeviceAnnotationClausesSelectExactlyTheChanges) {
  const CelCondition condition = Compile(ReviewKind::kValidate);
  struct State {
    const char* name;
    std::optional<std::string> value;  // the annotation's value; nullopt: absent
    std::string others;                // other annotation members; "none": no annotations
  };
  const std::vector<State> states = {
      {"no annotations", std::nullopt, "none"},
      {"other annotations", std::nullopt, R"("a":"b")"},
      {"empty value", "", ""},
      {"value x", "x", R"("a":"b")"},
      {"value y", "y", ""},
  };
  struct Kind {
    const char* kind;
    const char* key;
    std::string (*make)(const std::string& annotations);
  };
  const Kind kinds[] = {
      {"Pod", "gpu-tenancy.io/devices", &CpuPodOnGpuA},
      {"Node", "gpu-tenancy.io/gpu-devices", [](const std::string& a) { return NodeGpuA(a); }},
  };
  int selected = 0;
  for (const Kind& k : kinds) {
    auto object = [&](const State& s) {
      std::vector<std::string> members;
      if (s.others != "none" && !s.others.empty()) members.push_back(s.others);
      if (s.value) members.push_back(absl::StrCat("\"", k.key, "\":\"", *s.value, "\""));
      return k.make(absl::StrJoin(members, ","));
    };
    for (const State& now : states) {
      for (int o = -1; o < static_cast<int>(states.size()); ++o) {
        const State* before = o < 0 ? nullptr : &states[o];
        SCOPED_TRACE(
            absl::StrCat(k.kind, ": ", before ? before->name : "CREATE", " -> ", now.name));
        const bool changes = before ? before->value != now.value : now.value.has_value();
        Verdict v =
            Judge(AnnotationRequest("row", k.kind, object(now), before ? object(*before) : "", ""),
                  ReviewKind::kValidate, condition);
        EXPECT_EQ(v.condition.outcome, changes ? CelOutcome::kTrue : CelOutcome::kFalse)
            << v.condition.detail;
        EXPECT_EQ(v.acted, changes) << v.what;
        selected += changes ? 1 : 0;
      }
    }
    // Without metadata (never from kube-apiserver, but well-formed JSON): false, not an error.
    for (const char* shape :
         {R"({"kind":"Node"})", R"({"metadata":{}})", R"({"metadata":{"annotations":{}}})"}) {
      SCOPED_TRACE(absl::StrCat(k.kind, " shape ", shape));
      rapidjson::Document doc = webhook_test::Json(shape);
      const CelData bare = webhook_test::ToCelData(doc);
      const CelData request =
          CelData::Map({{"operation", CelData::String("UPDATE")},
                        {"kind", CelData::Map({{"kind", CelData::String(k.kind)}})}});
      // A Pod's guard wants a spec; give the bare object one so the clause itself is reached.
      CelData with_spec = bare;
      with_spec.map.emplace_back("spec", CelData::Map({}));
      const CelData& x = std::string(k.kind) == "Pod" ? with_spec : bare;
      const CelData on_create = CelData::Null();  // oldObject as kube-apiserver gives it
      for (const CelData* old : {&on_create, &x}) {
        CelResult r =
            condition.Evaluate({{"object", &x}, {"oldObject", old}, {"request", &request}});
        EXPECT_EQ(r.outcome, CelOutcome::kFalse) << r.detail;
      }
    }
  }
  EXPECT_GT(selected, 20);
}

TEST(MatchConditionsTest, ConditionsAreWellFormed) {
  for (ReviewKind webhook : {ReviewKind::kValidate, ReviewKind::kMutate}) {
    const MatchCondition c = WebhookMatchCondition(TestPolicy(), webhook);
    // A qualified name, as kube-apiserver requires.
    EXPECT_TRUE(!c.name.empty() && c.name.size() <= 63 && isalnum(c.name.front()) &&
                isalnum(c.name.back()))
        << c.name;
    EXPECT_TRUE(Compile(webhook).supported());
  }
  // A policy without PriorityClass lists needs no priority clause.
  const topology::Policy plain = topology::Policy::AllowAll();
  for (const MatchClause& c : MatchClauses(plain, ReviewKind::kValidate, MatchKind::kPod)) {
    EXPECT_NE(c.name, "pod-priority-class");
  }
  for (const MatchClause& c :
       MatchClauses(plain, ReviewKind::kValidate, MatchKind::kResourceClaim)) {
    EXPECT_NE(c.name, "claim-quota");
  }
  // Nodes reach validation only: the mutating condition does not name them.
  EXPECT_TRUE(MatchClauses(plain, ReviewKind::kMutate, MatchKind::kNode).empty());
  EXPECT_EQ(WebhookMatchCondition(plain, ReviewKind::kMutate).expression.find("'Node'"),
            std::string::npos);
  EXPECT_NE(WebhookMatchCondition(plain, ReviewKind::kValidate).expression.find("'Node'"),
            std::string::npos);
}

}  // namespace
}  // namespace webhook
