// Test support, part of the kube-apiserver emulation: the emulated resources and what a stored
// object looks like (see apiserver_objects.h).
#include "test/support/apiserver_objects.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/json.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace testing_support::apiserver {
namespace {

// One row per resource, its BOOKMARK object on a line of its own.
// clang-format off
const ResourceInfo kInfos[kResourceCount] = {
    {Resource::kNodes, "nodes", "Node", "NodeList", "", "v1", false,
     R"({"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}})"},
    {Resource::kPods, "pods", "Pod", "PodList", "", "v1", true,
     R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"containers":null},"status":{}})"},
    {Resource::kNamespaces, "namespaces", "Namespace", "NamespaceList", "", "v1", false,
     R"({"kind":"Namespace","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{},"status":{}})"},
    {Resource::kLeases, "leases", "Lease", "LeaseList", "coordination.k8s.io",
     "coordination.k8s.io/v1", true,
     R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{}})"},
    {Resource::kEvents, "events", "Event", "EventList", "", "v1", true,
     R"({"kind":"Event","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"involvedObject":{},"reason":"","message":"","source":{},"firstTimestamp":null,"lastTimestamp":null,"count":0,"type":"","eventTime":null,"reportingComponent":"","reportingInstance":""})"},
    {Resource::kResourceSlices, "resourceslices", "ResourceSlice", "ResourceSliceList",
     "resource.k8s.io", "resource.k8s.io/v1", false,
     R"({"kind":"ResourceSlice","apiVersion":"%AV%","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"driver":"","pool":{"name":"","generation":0,"resourceSliceCount":0}}})"},
    {Resource::kResourceClaims, "resourceclaims", "ResourceClaim", "ResourceClaimList",
     "resource.k8s.io", "resource.k8s.io/v1", true,
     R"({"kind":"ResourceClaim","apiVersion":"%AV%","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"devices":{}},"status":{}})"},
    {Resource::kDeviceClasses, "deviceclasses", "DeviceClass", "DeviceClassList", "resource.k8s.io",
     "resource.k8s.io/v1", false,
     R"({"kind":"DeviceClass","apiVersion":"%AV%","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{}})"},
    {Resource::kResourceClaimTemplates, "resourceclaimtemplates", "ResourceClaimTemplate",
     "ResourceClaimTemplateList", "resource.k8s.io", "resource.k8s.io/v1", true,
     R"({"kind":"ResourceClaimTemplate","apiVersion":"%AV%","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"metadata":{"creationTimestamp":null},"spec":{"devices":{}}}})"},
    {Resource::kConfigMaps, "configmaps", "ConfigMap", "ConfigMapList", "", "v1", true,
     R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null}})"},
    {Resource::kPodDisruptionBudgets, "poddisruptionbudgets", "PodDisruptionBudget",
     "PodDisruptionBudgetList", "policy", "policy/v1", true,
     R"({"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{},"status":{"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}})"},
    {Resource::kReplicaSets, "replicasets", "ReplicaSet", "ReplicaSetList", "apps", "apps/v1", true,
     R"({"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}},"status":{"replicas":0}})"},
    {Resource::kStatefulSets, "statefulsets", "StatefulSet", "StatefulSetList", "apps", "apps/v1",
     true,
     R"({"kind":"StatefulSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},"serviceName":"","updateStrategy":{}},"status":{"replicas":0,"availableReplicas":0}})"},
    {Resource::kDeployments, "deployments", "Deployment", "DeploymentList", "apps", "apps/v1", true,
     R"({"kind":"Deployment","apiVersion":"apps/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},"strategy":{}},"status":{}})"},
    {Resource::kValidatingWebhookConfigurations, "validatingwebhookconfigurations",
     "ValidatingWebhookConfiguration", "ValidatingWebhookConfigurationList",
     "admissionregistration.k8s.io", "admissionregistration.k8s.io/v1", false,
     R"({"kind":"ValidatingWebhookConfiguration","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null}})"},
    {Resource::kMutatingWebhookConfigurations, "mutatingwebhookconfigurations",
     "MutatingWebhookConfiguration", "MutatingWebhookConfigurationList",
     "admissionregistration.k8s.io", "admissionregistration.k8s.io/v1", false,
     R"({"kind":"MutatingWebhookConfiguration","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null}})"},
};
// clang-format on

Value::MemberIterator FindMut(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return Value::MemberIterator();
  Value name(rapidjson::StringRef(key.data(), key.size()));
  return obj.FindMember(name);
}

// Reorders an object's members: `first` in that order, then the rest as they were.
void Reorder(Value& obj, const std::vector<absl::string_view>& first, Alloc& a) {
  if (!obj.IsObject()) return;
  Value out(rapidjson::kObjectType);
  for (absl::string_view key : first) {
    auto it = FindMut(obj, key);
    if (it != obj.MemberEnd()) out.AddMember(Value(it->name, a), Value(it->value, a), a);
  }
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    absl::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (std::find(first.begin(), first.end(), name) == first.end()) {
      out.AddMember(Value(it->name, a), Value(it->value, a), a);
    }
  }
  obj = std::move(out);
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

}  // namespace

const ResourceInfo& Info(Resource r) { return kInfos[static_cast<int>(r)]; }

std::string Qualified(const ResourceInfo& info) {
  return info.group[0] == '\0' ? info.plural : absl::StrCat(info.plural, ".", info.group);
}

bool ResourceForKind(absl::string_view kind, Resource* out) {
  for (const ResourceInfo& info : kInfos) {
    if (kind == info.kind) {
      *out = info.resource;
      return true;
    }
  }
  return false;
}

std::string KeyFor(const ResourceInfo& info, absl::string_view ns, absl::string_view name) {
  return info.namespaced ? absl::StrCat(ns, "/", name) : std::string(name);
}

std::string ToJson(const Value& v) { return common::ToJson(v); }

std::string JsonString(absl::string_view s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

Value* Mutable(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return nullptr;
  auto it = FindMut(obj, key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

Value& EnsureObject(Value& obj, absl::string_view key, Alloc& a) {
  if (Value* v = Mutable(obj, key)) {
    if (!v->IsObject()) v->SetObject();
    return *v;
  }
  obj.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a),
                Value(rapidjson::kObjectType), a);
  return (obj.MemberEnd() - 1)->value;
}

void SetMember(Value& obj, absl::string_view key, Value value, Alloc& a) {
  if (Value* v = Mutable(obj, key)) {
    *v = std::move(value);
    return;
  }
  obj.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a), value, a);
}

void SetString(Value& obj, absl::string_view key, absl::string_view s, Alloc& a) {
  SetMember(obj, key, Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a), a);
}

void EraseMember(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return;
  auto it = FindMut(obj, key);
  if (it != obj.MemberEnd()) obj.EraseMember(it);
}

std::string StringAt(const Value& obj, absl::string_view key) {
  return std::string(common::StringOr(obj, key));
}

std::string MetaString(const Value& obj, absl::string_view key) {
  const Value* meta = common::FindMember(obj, "metadata");
  return meta == nullptr ? "" : StringAt(*meta, key);
}

std::string FieldValue(const Value& obj, absl::string_view path) {
  const Value* v = &obj;
  for (absl::string_view seg : absl::StrSplit(path, '.')) {
    v = common::FindMember(*v, seg);
    if (v == nullptr) return "";
  }
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  if (v->IsInt64()) return absl::StrCat(v->GetInt64());
  return "";
}

std::string StripTypeMeta(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError()) return json;
  EraseMember(doc, "kind");
  EraseMember(doc, "apiVersion");
  return ToJson(doc);
}

void Normalize(const ResourceInfo& info, rapidjson::Document& doc, absl::string_view api_version) {
  Alloc& a = doc.GetAllocator();
  SetString(doc, "kind", info.kind, a);
  SetString(doc, "apiVersion", api_version, a);
  Reorder(doc, {"kind", "apiVersion", "metadata"}, a);
  Value& meta = EnsureObject(doc, "metadata", a);
  Reorder(meta,
          {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
           "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
           "annotations", "ownerReferences", "finalizers", "managedFields"},
          a);
}

std::string Now3339() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

std::string NewUid() {
  uint64_t hi = Rng()(), lo = Rng()();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                  // version 4
  lo = (lo & ~(0xC000ULL << 48)) | (0x8000ULL << 48);  // variant 10
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xFFFF),
                static_cast<unsigned long long>(hi & 0xFFFF),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

std::string RandomSuffix() {  // the alphabet of k8s.io/apimachinery/pkg/util/rand
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[Rng()() % (sizeof(kAlphabet) - 1)];
  return out;
}

bool ParseBool(absl::string_view s) {  // Go's strconv.ParseBool, true side
  return s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True";
}

}  // namespace testing_support::apiserver
