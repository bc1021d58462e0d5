#include "bench/dra_floor_objects.h"

#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "webhook/json_patch.h"

namespace bench::dra_floor {
namespace {

using Alloc = rapidjson::Document::AllocatorType;

absl::StatusOr<rapidjson::Document> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return absl::NotFoundError(absl::StrCat("test data ", path));
  return common::ParseJson(text);
}

// Sets (or adds) member `name` of object `holder` to `value`.
void Set(rapidjson::Value& holder, const char* name, rapidjson::Value value, Alloc& alloc) {
  if (auto it = holder.FindMember(name); it != holder.MemberEnd()) {
    it->value = std::move(value);
  } else {
    holder.AddMember(rapidjson::Value(name, alloc), std::move(value), alloc);
  }
}

void SetString(rapidjson::Value& holder, const char* name, const std::string& text, Alloc& alloc) {
  Set(holder, name, common::JsonString(text, alloc), alloc);
}

// `review` (a captured AdmissionReview) with its request's uid, name, namespace and object
// replaced; `user` replaces userInfo.username when not empty.
std::string Review(const rapidjson::Document& review, const std::string& uid, const std::string& ns,
                   const std::string& name, const rapidjson::Value& object,
                   const std::string& user = "") {
  rapidjson::Document out;
  out.CopyFrom(review, out.GetAllocator());
  Alloc& alloc = out.GetAllocator();
  rapidjson::Value& request = out["request"];
  SetString(request, "uid", uid, alloc);
  SetString(request, "name", name, alloc);
  SetString(request, "namespace", ns, alloc);
  Set(request, "object", rapidjson::Value(object, alloc), alloc);
  if (!user.empty()) {
    rapidjson::Value info(rapidjson::kObjectType);
    SetString(info, "username", user, alloc);
    rapidjson::Value groups(rapidjson::kArrayType);
    groups.PushBack(rapidjson::Value("system:serviceaccounts", alloc), alloc);
    groups.PushBack(rapidjson::Value("system:serviceaccounts:kube-system", alloc), alloc);
    groups.PushBack(rapidjson::Value("system:authenticated", alloc), alloc);
    info.AddMember("groups", groups, alloc);
    Set(request, "userInfo", std::move(info), alloc);
  }
  return common::ToJson(out);
}

absl::Status Patch(const rapidjson::Document& ops, rapidjson::Document& object) {
  if (!ops.IsArray() || ops.Empty()) return absl::OkStatus();
  return webhook::ApplyPatch(ops, object);
}

}  // namespace

std::string NodeName(int node) { return absl::StrCat("gpu-node-", node); }

std::string NodeJson(int node) {
  const std::string name = NodeName(node);
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"kubernetes.io/hostname":")", name,
      R"(","nvidia.com/gpu.present":"true"}},"status":{"allocatable":{"cpu":"96","memory":"1Ti",)"
      R"("pods":"110"},"capacity":{"cpu":"96","memory":"1Ti","pods":"110"}}})");
}

std::string GpuSliceJson(int node, int gpus) {
  const std::string name = NodeName(node);
  std::string devices;
  for (int i = 0; i < gpus; ++i) {
    absl::StrAppend(
        &devices, i ? "," : "", R"({"name":"gpu-)", i, R"(","attributes":{)",
        R"("type":{"string":"gpu"},"uuid":{"string":"GPU-)", node, "-", i, R"("},)",
        R"("productName":{"string":"NVIDIA H100 80GB HBM3"},"brand":{"string":"Nvidia"},)",
        R"("architecture":{"string":"Hopper"},"cudaComputeCapability":{"version":"9.0.0"},)",
        R"("driverVersion":{"version":"570.124.6"},"cudaDriverVersion":{"version":"12.8.0"},)",
        R"("index":{"int":)", i, R"(},"resource.kubernetes.io/pciBusID":{"string":"0000:)",
        absl::Hex(0x10 + i, absl::kZeroPad2),
        R"(:00.0"}},"capacity":{"memory":{"value":"81559Mi"}}})");
  }
  return absl::StrCat(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")", name,
      R"(-gpu.nvidia.com-x7k2p"},"spec":{"driver":"gpu.nvidia.com","nodeName":")", name,
      R"(","pool":{"name":")", name, R"(","generation":1,"resourceSliceCount":1},"devices":[)",
      devices, "]}}");
}

absl::StatusOr<ReviewFactory> ReviewFactory::Load(const std::string& testdata_dir) {
  ReviewFactory f;
  for (auto [doc, file] :
       {std::pair{&f.pod_review_, "09-mutate-Pod.CREATE.json"},
        std::pair{&f.claim_review_, "01-mutate-ResourceClaim.CREATE.json"},
        std::pair{&f.template_review_, "03-mutate-ResourceClaimTemplate.CREATE.json"}}) {
    absl::StatusOr<rapidjson::Document> read = ReadJson(absl::StrCat(testdata_dir, "/dra/", file));
    if (!read.ok()) return read.status();
    if (!read->IsObject() || !read->HasMember("request") || !(*read)["request"].IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": not an AdmissionReview"));
    }
    doc->Swap(*read);
  }
  // A template of one whole GPU, as a Deployment of inference pods names it.
  absl::StatusOr<rapidjson::Document> made = common::ParseJson(absl::StrCat(
      R"({"kind":"ResourceClaimTemplate","apiVersion":"resource.k8s.io/v1","metadata":{"name":")",
      kTemplateName, R"("},"spec":{"spec":{"devices":{"requests":[{"name":")", kClaimRequest,
      R"(","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount",)"
      R"("count":1}}]}}}})"));
  if (!made.ok()) return made.status();
  f.template_.Swap(*made);
  return f;
}

rapidjson::Document ReviewFactory::TemplateObject(const std::string& ns) const {
  rapidjson::Document object;
  object.CopyFrom(template_, object.GetAllocator());
  SetString(object["metadata"], "namespace", ns, object.GetAllocator());
  return object;
}

std::string ReviewFactory::TemplateReview(const std::string& ns, const std::string& uid) const {
  return Review(template_review_, uid, ns, kTemplateName, TemplateObject(ns));
}

std::string ReviewFactory::PodReview(const std::string& ns, const std::string& pod_name,
                                     const std::string& uid) const {
  rapidjson::Document pod;
  pod.CopyFrom(pod_review_["request"]["object"], pod.GetAllocator());
  Alloc& alloc = pod.GetAllocator();
  SetString(pod["metadata"], "name", pod_name, alloc);
  SetString(pod["metadata"], "namespace", ns, alloc);
  SetString(pod["spec"]["resourceClaims"][0], "resourceClaimTemplateName", kTemplateName, alloc);
  return Review(pod_review_, uid, ns, pod_name, pod);
}

std::string ReviewFactory::ClaimReview(const std::string& ns, const std::string& pod_name,
                                       const std::string& uid,
                                       const rapidjson::Value* template_spec) const {
  rapidjson::Document claim(rapidjson::kObjectType);
  Alloc& alloc = claim.GetAllocator();
  const std::string name = absl::StrCat(pod_name, "-gpu-sample");
  absl::StatusOr<rapidjson::Document> meta = common::ParseJson(absl::StrCat(
      R"({"name":")", name, R"(","generateName":")", pod_name, R"(-gpu-","namespace":")", ns,
      R"(","annotations":{"resource.kubernetes.io/pod-claim-name":")", kClaimRequest, R"("}})"));
  claim.AddMember("kind", "ResourceClaim", alloc);
  claim.AddMember("apiVersion", "resource.k8s.io/v1", alloc);
  claim.AddMember("metadata", rapidjson::Value(*meta, alloc), alloc);
  claim.AddMember(
      "spec", rapidjson::Value(template_spec ? *template_spec : template_["spec"]["spec"], alloc),
      alloc);
  return Review(claim_review_, uid, ns, name, claim,
                "system:serviceaccount:kube-system:resource-claim-controller");
}

absl::StatusOr<PodLoad> ReviewFactory::Make(const std::string& ns, const std::string& pod_name,
                                            const Patches& patches, int node, int device) const {
  PodLoad load;
  load.pod_name = pod_name;
  const std::string pod_uid = absl::StrCat("pod-uid-", ns, "-", pod_name);
  // kube-controller-manager's generated name: the pod's, the request's, five random characters.
  load.claim_name = absl::StrCat(pod_name, "-", kClaimRequest, "-",
                                 absl::Hex(std::hash<std::string>()(pod_name) % 0xfffff));

  rapidjson::Document pod;
  pod.CopyFrom(pod_review_["request"]["object"], pod.GetAllocator());
  {
    Alloc& alloc = pod.GetAllocator();
    SetString(pod["metadata"], "name", pod_name, alloc);
    SetString(pod["metadata"], "namespace", ns, alloc);
    SetString(pod["spec"]["resourceClaims"][0], "resourceClaimTemplateName", kTemplateName, alloc);
  }
  load.pod_mutate = Review(pod_review_, absl::StrCat(pod_uid, "-m"), ns, pod_name, pod);
  if (absl::Status s = Patch(patches.pod, pod); !s.ok()) return s;
  load.pod_validate = Review(pod_review_, absl::StrCat(pod_uid, "-v"), ns, pod_name, pod);
  SetString(pod["metadata"], "uid", pod_uid, pod.GetAllocator());
  load.pod_json = common::ToJson(pod);
  load.pod_status_patch =
      absl::StrCat(R"({"status":{"resourceClaimStatuses":[{"name":")", kClaimRequest,
                   R"(","resourceClaimName":")", load.claim_name, R"("}]}})");

  // The template's spec as stored, that is with the template's own mutation applied.
  rapidjson::Document stored_template = TemplateObject(ns);
  if (absl::Status s = Patch(patches.claim_template, stored_template); !s.ok()) return s;
  absl::StatusOr<rapidjson::Document> claim = common::ParseJson(absl::StrCat(
      R"({"kind":"ResourceClaim","apiVersion":"resource.k8s.io/v1","metadata":{"name":")",
      load.claim_name, R"(","generateName":")", pod_name, R"(-gpu-","namespace":")", ns,
      R"(","annotations":{"resource.kubernetes.io/pod-claim-name":")", kClaimRequest,
      R"("},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":")", pod_name, R"(","uid":")",
      pod_uid, R"(","controller":true,"blockOwnerDeletion":true}]}})"));
  if (!claim.ok()) return claim.status();
  claim->AddMember("spec", rapidjson::Value(stored_template["spec"]["spec"], claim->GetAllocator()),
                   claim->GetAllocator());
  const std::string controller = "system:serviceaccount:kube-system:resource-claim-controller";
  load.claim_mutate =
      Review(claim_review_, absl::StrCat(pod_uid, "-cm"), ns, load.claim_name, *claim, controller);
  if (absl::Status s = Patch(patches.claim, *claim); !s.ok()) return s;
  load.claim_validate =
      Review(claim_review_, absl::StrCat(pod_uid, "-cv"), ns, load.claim_name, *claim, controller);
  load.claim_json = common::ToJson(*claim);
  const std::string node_name = NodeName(node);
  load.claim_status_patch = absl::StrCat(
      R"({"status":{"allocation":{"devices":{"results":[{"request":")", kClaimRequest,
      R"(","driver":"gpu.nvidia.com","pool":")", node_name, R"(","device":"gpu-)", device,
      R"("}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",)"
      R"("operator":"In","values":[")",
      node_name, R"("]}]}]}},"reservedFor":[{"resource":"pods","name":")", pod_name, R"(","uid":")",
      pod_uid, R"("}]}})");
  return load;
}

absl::StatusOr<rapidjson::Document> PatchOfReply(const std::string& reply) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(reply);
  if (!doc.ok()) return doc.status();
  rapidjson::Document ops(rapidjson::kArrayType);
  const common::JsonValue* response =
      doc->IsObject() ? common::FindNonNull(*doc, "response") : nullptr;
  if (!response) return absl::InvalidArgumentError("reply has no response");
  const common::JsonValue* patch = common::FindNonNull(*response, "patch");
  if (!patch || !patch->IsString()) return ops;
  std::string decoded;
  if (!absl::Base64Unescape(common::AsStringView(*patch), &decoded)) {
    return absl::InvalidArgumentError("response.patch is not base64");
  }
  absl::StatusOr<rapidjson::Document> parsed = common::ParseJson(decoded);
  if (!parsed.ok()) return parsed.status();
  ops.Swap(*parsed);
  return ops;
}

}  // namespace bench::dra_floor
