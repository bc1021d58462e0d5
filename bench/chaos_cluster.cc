#include "bench/chaos_cluster.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "bench/soak_objects.h"
#include "bench/synthetic.h"
#include "common/json.h"
#include "test/support/serve_process.h"
#include "webhook/claim_quota.h"

namespace chaos {
namespace {

using testing_support::FakeApiServer;
using testing_support::Resource;

constexpr int kDraNodes = 2;
constexpr int kGpusPerDraNode = 4;

std::string DraSliceJson(const std::string& node) {
  std::string devices;
  for (int i = 0; i < kGpusPerDraNode; ++i) {
    absl::StrAppend(&devices, i ? "," : "", R"({"name":"gpu-)", i,
                    R"(","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-)", node, "-",
                    i, R"("}},"capacity":{"memory":{"value":"80Gi"}}})");
  }
  return absl::StrCat(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")", node,
      R"(-gpu.nvidia.com"},"spec":{"driver":"gpu.nvidia.com","nodeName":")", node,
      R"(","pool":{"name":")", node, R"(","generation":1,"resourceSliceCount":1},"devices":[)",
      devices, "]}}");
}

constexpr char kGpuDeviceClass[] =
    R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":)"
    R"("gpu.nvidia.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == )"
    R"('gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}})";

int64_t IntOf(const common::JsonValue* v) {
  if (!v) return 0;
  if (v->IsInt64()) return v->GetInt64();
  int64_t n = 0;
  if (v->IsString() && absl::SimpleAtoi(common::AsStringView(*v), &n)) return n;
  return 0;
}

bool IsGpuResource(absl::string_view name) { return absl::StartsWith(name, "nvidia.com/"); }

// The GPU resources a pod's containers request (limits where requests are absent).
ResourceCounts GpuRequests(const common::JsonValue& pod) {
  ResourceCounts out;
  const common::JsonValue* spec = common::FindNonNull(pod, "spec");
  const common::JsonValue* containers = spec ? common::FindNonNull(*spec, "containers") : nullptr;
  if (!containers || !containers->IsArray()) return out;
  for (const auto& c : containers->GetArray()) {
    const common::JsonValue* res = common::FindNonNull(c, "resources");
    if (!res) continue;
    const common::JsonValue* asked = common::FindNonNull(*res, "requests");
    if (!asked) asked = common::FindNonNull(*res, "limits");
    if (!asked || !asked->IsObject()) continue;
    for (const auto& m : asked->GetObject()) {
      if (IsGpuResource(common::AsStringView(m.name))) {
        out[std::string(common::AsStringView(m.name))] += IntOf(&m.value);
      }
    }
  }
  return out;
}

std::string Annotation(const common::JsonValue& obj, absl::string_view key) {
  const common::JsonValue* meta = common::FindNonNull(obj, "metadata");
  const common::JsonValue* annotations = meta ? common::FindNonNull(*meta, "annotations") : nullptr;
  return annotations ? std::string(common::StringOr(*annotations, key)) : std::string();
}

}  // namespace

std::string PolicyYaml(int claim_quota_gpus) {
  std::string policy = testing_support::ReadSource("cmd/demo/policy.yaml");
  const std::string lab =
      absl::StrCat("tenants:\n  - name: ", kClaimTenant, "\n    tier: trusted\n    namespaces: [",
                   kClaimNamespace, "]\n    quota:\n      gpus: ", claim_quota_gpus, "\n");
  size_t at = policy.find("\ntenants:\n");
  if (at == std::string::npos) return "";
  policy.replace(at + 1, 9, lab);
  return policy;
}

absl::Status LoadCluster(FakeApiServer& api, int nodes, const std::string& policy_yaml,
                         std::vector<std::string>& node_names) {
  absl::Status st = soak::LoadWebhookConfigurations(api, policy_yaml);
  for (const char* ns : {"research", "acme", "gpu-ops", "gpu-team", "default", "kube-system",
                         kClaimNamespace, kRecordNamespace}) {
    if (st.ok()) st = api.AddNamespace(ns);
  }
  for (int i = 0; i < nodes && st.ok(); ++i) {
    node_names.push_back(bench::NodeName(i));
    st = api.AddNode(bench::NodeJson(i, true));
    for (const std::string& pod : bench::PodsJson(i)) {
      if (st.ok()) st = api.AddPod(pod);
    }
  }
  for (int i = 0; i < kDraNodes && st.ok(); ++i) {
    st = api.Add(Resource::kResourceSlices, DraSliceJson(absl::StrCat("dra-", i)));
  }
  if (st.ok()) st = api.Add(Resource::kDeviceClasses, kGpuDeviceClass);
  return st;
}

std::string ClaimJson(const std::string& name, int gpus) {
  return absl::StrCat(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")", name,
      R"(","namespace":")", kClaimNamespace, R"(","uid":"uid-)", name,
      R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":)"
      R"("gpu.nvidia.com","count":)",
      gpus, "}}]}}}");
}

std::string ClaimReview(const std::string& uid, const std::string& name, int gpus, bool dry_run) {
  return absl::StrCat(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":")", uid,
      R"(","operation":"CREATE","kind":{"group":"resource.k8s.io","version":"v1",)",
      R"("kind":"ResourceClaim"},"resource":{"group":"resource.k8s.io","version":"v1",)",
      R"("resource":"resourceclaims"},"namespace":")", kClaimNamespace, R"(","name":")", name,
      R"(","userInfo":{"username":"system:serviceaccount:lab:runner"},"dryRun":)",
      dry_run ? "true" : "false", ",", R"("object":)", ClaimJson(name, gpus), "}}");
}

Truth ReadTruth(const FakeApiServer& api) {
  Truth t;
  for (const std::string& json : api.ListObjects(Resource::kPods)) {
    absl::StatusOr<rapidjson::Document> pod = common::ParseJson(json);
    if (!pod.ok()) continue;
    const common::JsonValue* spec = common::FindNonNull(*pod, "spec");
    std::string node(spec ? common::StringOr(*spec, "nodeName") : "");
    if (node.empty()) continue;
    ResourceCounts gpu = GpuRequests(*pod);
    if (gpu.empty()) continue;
    const common::JsonValue* meta = common::FindNonNull(*pod, "metadata");
    BoundPod p;
    p.ns = std::string(meta ? common::StringOr(*meta, "namespace") : "");
    p.name = std::string(meta ? common::StringOr(*meta, "name") : "");
    p.node = std::move(node);
    p.requests = std::move(gpu);
    p.gpu_index = Annotation(*pod, "gpu-tenancy.io/gpu-index");
    t.pods.emplace(absl::StrCat(p.ns, "/", p.name), std::move(p));
  }
  for (const std::string& json : api.ListObjects(Resource::kResourceClaims, kClaimNamespace)) {
    absl::StatusOr<rapidjson::Document> claim = common::ParseJson(json);
    if (!claim.ok()) continue;
    const common::JsonValue* meta = common::FindNonNull(*claim, "metadata");
    int64_t gpus = 0;
    const common::JsonValue* spec = common::FindNonNull(*claim, "spec");
    const common::JsonValue* devices = spec ? common::FindNonNull(*spec, "devices") : nullptr;
    const common::JsonValue* requests =
        devices ? common::FindNonNull(*devices, "requests") : nullptr;
    if (requests && requests->IsArray()) {
      for (const auto& r : requests->GetArray()) {
        const common::JsonValue* exactly = common::FindNonNull(r, "exactly");
        const common::JsonValue* count = exactly ? common::FindMember(*exactly, "count") : nullptr;
        gpus += count ? IntOf(count) : 1;
      }
    }
    t.claims[webhook::ClaimKey(kClaimNamespace, meta ? common::StringOr(*meta, "name") : "")] =
        gpus;
  }
  std::string record = api.GetObject(Resource::kConfigMaps, kRecordNamespace,
                                     webhook::UsageRecordName(kClaimTenant));
  if (absl::StatusOr<rapidjson::Document> doc = common::ParseJson(record); doc.ok()) {
    if (const common::JsonValue* data = common::FindNonNull(*doc, "data");
        data && data->IsObject()) {
      for (const auto& m : data->GetObject()) {
        t.record.emplace(common::AsStringView(m.name), common::AsStringView(m.value));
      }
    }
  }
  return t;
}

std::map<std::string, NodeCapacity> ReadCapacity(const FakeApiServer& api) {
  std::map<std::string, NodeCapacity> out;
  for (const std::string& json : api.ListObjects(Resource::kNodes)) {
    absl::StatusOr<rapidjson::Document> node = common::ParseJson(json);
    if (!node.ok()) continue;
    const common::JsonValue* meta = common::FindNonNull(*node, "metadata");
    NodeCapacity& c = out[std::string(meta ? common::StringOr(*meta, "name") : "")];
    const common::JsonValue* status = common::FindNonNull(*node, "status");
    const common::JsonValue* alloc = status ? common::FindNonNull(*status, "allocatable") : nullptr;
    if (alloc && alloc->IsObject()) {
      for (const auto& m : alloc->GetObject()) {
        if (IsGpuResource(common::AsStringView(m.name))) {
          c.allocatable[std::string(common::AsStringView(m.name))] = IntOf(&m.value);
        }
      }
    }
    const common::JsonValue* labels = meta ? common::FindNonNull(*meta, "labels") : nullptr;
    int64_t replicas = 0;
    if (labels &&
        absl::SimpleAtoi(common::StringOr(*labels, "nvidia.com/gpu.replicas"), &replicas) &&
        replicas > 0) {
      c.replicas_per_gpu = replicas;
    }
  }
  return out;
}

std::string CheckDevices(const Truth& truth, const std::map<std::string, NodeCapacity>& nodes) {
  std::map<std::string, ResourceCounts> used;  // node -> resource -> count
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> whole, shared;
  for (const auto& [key, p] : truth.pods) {
    for (const auto& [resource, n] : p.requests) used[p.node][resource] += n;
    if (p.gpu_index.empty()) continue;
    if (p.requests.count("nvidia.com/gpu")) whole[{p.node, p.gpu_index}].push_back(key);
    if (p.requests.count("nvidia.com/gpu.shared")) shared[{p.node, p.gpu_index}].push_back(key);
  }
  std::vector<std::string> problems;
  for (const auto& [node, resources] : used) {
    auto cap = nodes.find(node);
    for (const auto& [resource, n] : resources) {
      int64_t allocatable = 0;
      if (cap != nodes.end()) {
        auto a = cap->second.allocatable.find(resource);
        if (a != cap->second.allocatable.end()) allocatable = a->second;
      }
      if (n > allocatable) {
        problems.push_back(
            absl::StrCat(node, " has ", n, " ", resource, " bound, allocatable ", allocatable));
      }
    }
  }
  for (const auto& [at, pods] : whole) {
    if (pods.size() > 1) {
      problems.push_back(absl::StrCat("GPU ", at.second, " of ", at.first, " bound to ",
                                      absl::StrJoin(pods, " and ")));
    }
  }
  for (const auto& [at, pods] : shared) {
    auto cap = nodes.find(at.first);
    const int64_t replicas = cap == nodes.end() ? 1 : cap->second.replicas_per_gpu;
    if (static_cast<int64_t>(pods.size()) > replicas) {
      problems.push_back(absl::StrCat("time-sliced GPU ", at.second, " of ", at.first, " holds ",
                                      pods.size(), " pods, replicas ", replicas));
    }
  }
  return absl::StrJoin(problems, "; ");
}

std::string CheckPodQuotas(const Truth& truth, const topology::Policy& policy) {
  std::vector<std::string> problems;
  for (const topology::Tenant& tenant : policy.tenants) {
    const topology::TenantQuota& q = tenant.quota;
    if (q.empty()) continue;
    const std::set<std::string> namespaces(tenant.namespaces.begin(), tenant.namespaces.end());
    int64_t gpus = 0, slices = 0, replicas = 0, pods = 0;
    std::map<std::string, int64_t> mig;
    for (const auto& [key, p] : truth.pods) {
      if (!namespaces.count(p.ns)) continue;
      ++pods;
      for (const auto& [resource, n] : p.requests) {
        absl::string_view r = resource;
        if (r == "nvidia.com/gpu") {
          gpus += n;
        } else if (absl::EndsWith(r, ".shared")) {
          replicas += n;
        } else if (absl::ConsumePrefix(&r, "nvidia.com/mig-")) {
          mig[std::string(r)] += n;
          slices += n * (r.empty() ? 0 : r[0] - '0');
        }
      }
    }
    auto over = [&](absl::string_view item, int64_t held, const std::optional<int64_t>& limit) {
      if (limit && held > *limit) {
        problems.push_back(
            absl::StrCat("tenant ", tenant.name, " holds ", held, " ", item, ", quota ", *limit));
      }
    };
    over("GPUs", gpus, q.gpus);
    over("MIG compute slices", slices, q.mig_compute_slices);
    over("shared replicas", replicas, q.shared_replicas);
    over("GPU pods", pods, q.gpu_pods);
    for (const auto& [profile, limit] : q.mig_instances) {
      over(absl::StrCat("MIG ", profile, " instances"), mig[profile], limit);
    }
  }
  return absl::StrJoin(problems, "; ");
}

std::string CheckClaimQuota(const Truth& truth, int64_t quota_gpus, int64_t now_unix) {
  int64_t existing = 0, reserved = 0;
  for (const auto& [key, gpus] : truth.claims) existing += gpus;
  for (const auto& [key, text] : truth.record) {
    // An admission budget (webhook/claim_budget.h) is room, not claims: those admitted from it
    // count here once they exist.
    if (truth.claims.count(key) || absl::StartsWith(key, "budget.")) continue;
    absl::StatusOr<webhook::ClaimReservation> r = webhook::DecodeReservation(text);
    if (!r.ok() || now_unix - r->admitted_unix > webhook::kReservationGraceSeconds) continue;
    reserved += r->usage.gpus;
  }
  if (existing + reserved <= quota_gpus) return "";
  return absl::StrCat("tenant ", kClaimTenant, " holds ", existing, " GPUs in ",
                      truth.claims.size(), " claims and ", reserved,
                      " more in reservations for claims not created, quota ", quota_gpus);
}

}  // namespace chaos
