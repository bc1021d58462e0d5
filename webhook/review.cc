#include "webhook/review.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "topology/wellknown.h"
#include "webhook/claim_rules.h"
#include "webhook/claim_selectors.h"
#include "webhook/device_annotation_rules.h"
#include "webhook/pod_mutation.h"
#include "webhook/pod_rules.h"
#include "webhook/rule_table.h"
#include "wire/dra_codec.h"
#include "wire/k8s_codec.h"

namespace webhook {
namespace {

using common::FindNonNull;
using common::JsonValue;
using common::StringOr;

constexpr absl::string_view kDraGroup = "resource.k8s.io";
constexpr absl::string_view kDraVersions[] = {"v1", "v1beta1", "v1beta2", "v1alpha2", "v1alpha3"};

// The first chunk of each review's document: reused by every review a thread decides, so its
// memory stays in the caches and no review asks the allocator for the 64 KiB chunk RapidJSON
// would (an allocation from the slow path, every time). Bodies larger than this grow the pool
// with chunks of their own, freed with the review.
constexpr size_t kReviewScratchBytes = 128 * 1024;
char* ReviewScratch() {
  thread_local std::unique_ptr<char[]> scratch(new char[kReviewScratchBytes]);
  return scratch.get();
}

std::string ErrorBody(absl::string_view message) {
  rapidjson::StringBuffer buffer;
  common::JsonWriter w(buffer);
  w.StartObject();
  w.Key("error");
  common::WriteString(w, message);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

ReviewOutcome BadRequest(absl::string_view message) {
  ReviewOutcome out;
  out.http_status = 400;
  out.allowed = false;
  out.message = std::string(message);
  out.body = ErrorBody(message);
  return out;
}

// `patch_json` is o.patch.ToJson() (the caller has it already).
std::string ReplyBody(absl::string_view uid, const ObjectOutcome& o, ReviewKind kind,
                      absl::string_view patch_json) {
  const bool with_patch = kind == ReviewKind::kMutate && !o.patch.empty();
  // Sized for the patch's base64 (4 bytes per 3) and the rest, so the buffer grows at most once.
  rapidjson::StringBuffer buffer(nullptr, 1024 + (with_patch ? patch_json.size() / 3 * 4 + 4 : 0));
  common::JsonWriter w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  common::WriteString(w, kAdmissionApiVersion);
  w.Key("kind");
  common::WriteString(w, "AdmissionReview");
  w.Key("response");
  w.StartObject();
  w.Key("uid");
  common::WriteString(w, uid);
  w.Key("allowed");
  w.Bool(o.allowed);
  if (!o.allowed) {
    w.Key("status");
    w.StartObject();
    w.Key("code");
    w.Int(403);
    w.Key("reason");
    common::WriteString(w, "Forbidden");
    w.Key("message");
    common::WriteString(w, o.message);
    w.EndObject();
  }
  if (!o.warnings.empty()) {
    w.Key("warnings");
    w.StartArray();
    for (const std::string& text : o.warnings) common::WriteString(w, text);
    w.EndArray();
  }
  if (!o.audit_annotations.empty()) {
    w.Key("auditAnnotations");
    w.StartObject();
    for (const auto& [key, value] : o.audit_annotations) {
      common::WriteString(w, key);
      common::WriteString(w, value);
    }
    w.EndObject();
  }
  // A validating reply with patch or patchType is a call failure at the API server.
  if (with_patch) {
    w.Key("patchType");
    common::WriteString(w, "JSONPatch");
    w.Key("patch");
    // JsonPatch::ToBase64, serialised once. Base64 needs no JSON escape: written raw, quoted.
    std::string quoted = absl::StrCat("\"", absl::Base64Escape(patch_json), "\"");
    w.RawValue(quoted.data(), quoted.size(), rapidjson::kStringType);
  }
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

bool IsPodKind(const ObjectRequest& r) {
  return r.group.empty() && r.version == "v1" && r.kind == "Pod";
}

bool IsDraClaimKind(const ObjectRequest& r) {
  if (r.group != kDraGroup) return false;
  if (r.kind != "ResourceClaim" && r.kind != "ResourceClaimTemplate") return false;
  for (absl::string_view v : kDraVersions) {
    if (r.version == v) return true;
  }
  return false;
}

// metadata.name, else generateName ("" when neither).
std::string ObjectName(const JsonValue& object) {
  const JsonValue* meta = FindNonNull(object, "metadata");
  if (!meta || !meta->IsObject()) return "";
  absl::string_view name = StringOr(*meta, "name");
  return std::string(name.empty() ? StringOr(*meta, "generateName") : name);
}

// request.userInfo: the username and the node-name extra of a pod-bound ServiceAccount token.
// kube-apiserver always sends it; absent (hand-made reviews) is an anonymous caller.
absl::Status ReadUser(const JsonValue& req, UserIdentity& user) {
  const JsonValue* info = FindNonNull(req, "userInfo");
  if (!info) return absl::OkStatus();
  if (!info->IsObject()) return absl::InvalidArgumentError("request.userInfo: expected object");
  if (const JsonValue* name = FindNonNull(*info, "username")) {
    if (!name->IsString()) {
      return absl::InvalidArgumentError("request.userInfo.username: expected string");
    }
    user.username = std::string(common::AsStringView(*name));
  }
  const JsonValue* extra = FindNonNull(*info, "extra");
  if (!extra) return absl::OkStatus();
  if (!extra->IsObject()) {
    return absl::InvalidArgumentError("request.userInfo.extra: expected object");
  }
  const JsonValue* nodes = FindNonNull(*extra, kNodeNameExtra);
  if (!nodes) return absl::OkStatus();
  const std::string path = absl::StrCat("request.userInfo.extra[\"", kNodeNameExtra, "\"]");
  if (!nodes->IsArray()) return absl::InvalidArgumentError(path + ": expected a list of strings");
  for (const JsonValue& node : nodes->GetArray()) {
    if (!node.IsString()) {
      return absl::InvalidArgumentError(path + ": expected a list of strings");
    }
    user.node_names.emplace_back(common::AsStringView(node));
  }
  return absl::OkStatus();
}

void FinishVerdict(const std::vector<Violation>& violations, ObjectOutcome& out) {
  if (violations.empty()) return;
  out.allowed = false;
  out.rule = violations.front().rule;
  out.message = DenialMessage(violations);
  out.audit_annotations["rule"] = out.rule;
  out.audit_annotations["violations"] = absl::StrCat(violations.size());
}

void TenantAudit(const topology::TenantRef& tenant, ObjectOutcome& out) {
  out.audit_annotations["tenant"] = tenant.name;
  out.audit_annotations["tier"] = tenant.tier ? tenant.tier->name : "none";
}

absl::Status ReviewPod(const ObjectRequest& r, ReviewKind kind, const topology::Policy& policy,
                       const topology::TenantRef& tenant, ObjectOutcome& out) {
  const bool update = r.operation == "UPDATE";
  const bool ephemeral = r.sub_resource == "ephemeralcontainers";
  ASSIGN_OR_RETURN(PodView pod,
                   ParsePodView(*r.object, policy, r.namespace_name, "request.object"));
  if (r.dra) pod.gpu_claims = GpuClaimUses(pod.facts, *r.dra, policy.admission);
  pod.dra_extended = DraExtendedAsks(pod, r.dra, policy.admission);
  std::optional<PodView> old_pod;
  if (update && r.old_object && r.old_object->IsObject()) {
    absl::StatusOr<PodView> parsed =
        ParsePodView(*r.old_object, policy, r.namespace_name, "request.oldObject");
    // The stored object is what it is; an unreadable one only means nothing to compare with.
    if (parsed.ok()) old_pod = std::move(*parsed);
  }
  TenantAudit(tenant, out);
  if (kind == ReviewKind::kMutate) {
    std::vector<std::string> changed;
    MutatePod(*r.object, pod, policy, tenant, update, out.patch, changed);
    if (!changed.empty()) out.audit_annotations["mutated"] = absl::StrJoin(changed, ",");
    return absl::OkStatus();
  }
  // Read from the raw objects: PodView keeps only the annotations the other rules read.
  DeviceAnnotationChange devices;
  devices.annotation = topology::kPodDevicesAnnotation;
  devices.new_value = wire::AnnotationOf(r.object, devices.annotation);
  if (update) devices.old_value = wire::AnnotationOf(r.old_object, devices.annotation);
  devices.node = pod.facts.node_name;
  devices.object = absl::StrCat("pod \"", r.namespace_name, "/", ObjectName(*r.object), "\"");
  // UPDATE compares with the old pod; without one the mutable-input rules see it as changed.
  const PodView no_old_pod;
  const PodView* old = update ? (old_pod ? &*old_pod : &no_old_pod) : nullptr;
  const PodView ephemeral_view = ephemeral ? EphemeralContainersOf(pod) : PodView{};
  PodRuleContext ctx{ephemeral ? ephemeral_view : pod,
                     old,
                     policy,
                     tenant,
                     r.namespace_name,
                     r.snapshot ? &r.snapshot->dra() : r.dra,
                     r.snapshot,
                     &r.user,
                     ephemeral ? nullptr : &devices,
                     update || ephemeral ? nullptr : r.tenant_held};
  Findings found = RunPodRules(ctx, ephemeral ? kOnEphemeral : update ? kOnUpdate : kOnCreate);
  out.warnings = std::move(found.warnings);
  FinishVerdict(found.violations, out);
  return absl::OkStatus();
}

void ReviewClaim(const ObjectRequest& r, ReviewKind kind, const topology::Policy& policy,
                 const topology::TenantRef& tenant, ObjectOutcome& out) {
  const bool update = r.operation == "UPDATE";
  ClaimView claim = ParseClaimView(*r.object, r.kind, policy.admission);
  // Believed from the scheduler's identity only: anyone may write the annotation, and a claim
  // that carries it would otherwise skip the tenant's selectors.
  claim.extended_resource_claim = claim.extended_resource_annotation &&
                                  policy.admission.IsSchedulerUser(r.user.username) &&
                                  r.kind == "ResourceClaim";
  TenantAudit(tenant, out);
  const bool judged = !claim.gpu_use.empty() ||
                      std::any_of(claim.requests.begin(), claim.requests.end(), [](const auto& q) {
                        return q.class_kind == topology::DeviceClassKind::kUnknown;
                      });
  if (kind == ReviewKind::kValidate && claim.extended_resource_annotation &&
      !claim.extended_resource_claim && !update && judged) {
    out.warnings.push_back(absl::StrCat(
        "annotation ", wire::kExtendedResourceClaimAnnotation,
        " ignored: only kube-scheduler (policy admission.schedulerUsers) makes such claims, "
        "and this request comes from ",
        r.user.username.empty() ? "an unnamed user" : absl::StrCat("\"", r.user.username, "\""),
        "; the claim is judged as the tenant's own"));
  }
  if (kind == ReviewKind::kMutate) {
    const TenantSelectorPlan* selectors = nullptr;
    std::optional<TenantSelectorPlan> planned_here;
    if (!update) {
      const bool shared_devices_published =
          r.dra && r.dra->device_set && r.dra->device_set->publishes_shared_devices;
      // For finds only a tenant of the plans' own policy.
      if (r.selector_plans) selectors = r.selector_plans->For(tenant, shared_devices_published);
      if (!selectors) {
        selectors = &planned_here.emplace(PlanTenantSelectors(tenant, shared_devices_published));
      }
    }
    std::vector<std::string> changed;
    MutateClaim(*r.object, claim, tenant, selectors,
                r.dra && r.dra->device_set ? r.dra->device_set.get() : nullptr, out.patch, changed,
                out.warnings);
    if (!changed.empty()) out.audit_annotations["mutated"] = absl::StrJoin(changed, ",");
    return;
  }
  if (update) return;  // a claim's spec is immutable: it was judged at creation
  ClaimRuleContext ctx{claim,
                       *r.object,
                       policy,
                       tenant,
                       r.namespace_name,
                       r.dra,
                       r.sub_resource.empty() ? r.snapshot : nullptr,
                       r.claim_quota,
                       r.dry_run};
  Findings found = RunClaimRules(ctx);
  out.warnings.insert(out.warnings.end(), found.warnings.begin(), found.warnings.end());
  FinishVerdict(found.violations, out);
}

// A Node's own device annotation (validation only): no tenant, no other rule.
void ReviewNode(const ObjectRequest& r, const topology::Policy& policy, ObjectOutcome& out) {
  DeviceAnnotationChange change;
  change.annotation = topology::kNodeDevicesAnnotation;
  change.new_value = wire::AnnotationOf(r.object, change.annotation);
  if (r.operation == "UPDATE")
    change.old_value = wire::AnnotationOf(r.old_object, change.annotation);
  change.node = ObjectName(*r.object);
  change.object = absl::StrCat("node \"", change.node, "\"");
  change.is_node = true;
  FinishVerdict(RunNodeRules({policy, r.user, change}).violations, out);
}

// group/version/kind from {"group","version","kind"}.
void ReadGvk(const JsonValue& gvk, ObjectRequest& r) {
  r.group = std::string(StringOr(gvk, "group"));
  r.version = std::string(StringOr(gvk, "version"));
  r.kind = std::string(StringOr(gvk, "kind"));
}

// group/version/kind from an object's apiVersion ("apps/v1", "v1") and kind.
void ReadObjectGvk(const JsonValue& object, ObjectRequest& r) {
  absl::string_view api_version = StringOr(object, "apiVersion");
  size_t slash = api_version.find('/');
  if (slash == absl::string_view::npos) {
    r.group = "";
    r.version = std::string(api_version);
  } else {
    r.group = std::string(api_version.substr(0, slash));
    r.version = std::string(api_version.substr(slash + 1));
  }
  r.kind = std::string(StringOr(object, "kind"));
}

}  // namespace

absl::StatusOr<ObjectOutcome> ReviewObject(const ObjectRequest& r, ReviewKind kind,
                                           const topology::Policy& policy,
                                           const topology::Labels& namespace_labels) {
  ObjectOutcome out;
  if (r.operation != "CREATE" && r.operation != "UPDATE") return out;
  if (!r.object || !r.object->IsObject()) {
    return absl::InvalidArgumentError("request.object: expected object");
  }
  const bool pod = IsPodKind(r);
  const bool claim = IsDraClaimKind(r);
  if (r.group.empty() && r.version == "v1" && r.kind == "Node") {
    if (kind != ReviewKind::kValidate || !r.sub_resource.empty()) return out;
    out.handled = true;
    ReviewNode(r, policy, out);
    return out;
  }
  if (!pod && !claim) return out;
  if (!r.sub_resource.empty() &&
      !(pod && kind == ReviewKind::kValidate && r.sub_resource == "ephemeralcontainers")) {
    return out;
  }
  out.handled = true;
  topology::TenantRef tenant = topology::ResolveTenant(policy, r.namespace_name, namespace_labels);
  if (pod) {
    RETURN_IF_ERROR(ReviewPod(r, kind, policy, tenant, out));
  } else {
    ReviewClaim(r, kind, policy, tenant, out);
  }
  // The mutating webhook never denies: policy denials belong to validation.
  if (kind == ReviewKind::kMutate) out.allowed = true;
  return out;
}

ReviewOutcome Review(absl::string_view body, ReviewKind kind, const topology::Policy& policy,
                     const topology::ClusterSnapshot& snapshot,
                     const ClaimQuotaContext& claim_quota,
                     const TenantSelectorPlans* selector_plans) {
  // Only read while this review is decided, never copied from: parsed in place.
  rapidjson::MemoryPoolAllocator<> pool(ReviewScratch(), kReviewScratchBytes);
  absl::StatusOr<rapidjson::Document> doc = common::ParseJsonInPlace(body, &pool);
  if (!doc.ok()) return BadRequest(doc.status().message());
  if (!doc->IsObject()) return BadRequest("body: expected an AdmissionReview object");
  absl::string_view api_version = StringOr(*doc, "apiVersion");
  if (api_version != kAdmissionApiVersion) {
    return BadRequest(
        absl::StrCat("apiVersion: expected ", kAdmissionApiVersion, ", got \"", api_version, "\""));
  }
  absl::string_view review_kind = StringOr(*doc, "kind");
  if (review_kind != "AdmissionReview") {
    return BadRequest(absl::StrCat("kind: expected AdmissionReview, got \"", review_kind, "\""));
  }
  absl::StatusOr<const JsonValue*> request = common::RequireObject(*doc, "request", "");
  if (!request.ok()) return BadRequest(request.status().message());
  const JsonValue& req = **request;
  absl::StatusOr<absl::string_view> uid = common::RequireString(req, "uid", "request");
  if (!uid.ok()) return BadRequest(uid.status().message());
  if (uid->empty()) return BadRequest("request.uid: empty");
  absl::StatusOr<absl::string_view> operation = common::RequireString(req, "operation", "request");
  if (!operation.ok()) return BadRequest(operation.status().message());

  ObjectRequest r;
  r.operation = std::string(*operation);
  r.object = FindNonNull(req, "object");
  r.old_object = FindNonNull(req, "oldObject");
  r.sub_resource = std::string(StringOr(req, "subResource"));
  if (absl::Status user = ReadUser(req, r.user); !user.ok()) return BadRequest(user.message());
  if (const JsonValue* gvk = common::FindMember(req, "kind")) {
    if (!gvk->IsObject()) return BadRequest("request.kind: expected object");
    ReadGvk(*gvk, r);
  } else if (r.object && r.object->IsObject()) {
    ReadObjectGvk(*r.object, r);
  }
  r.namespace_name = std::string(StringOr(req, "namespace"));
  if (r.namespace_name.empty() && r.object && r.object->IsObject()) {
    if (const JsonValue* meta = FindNonNull(*r.object, "metadata")) {
      r.namespace_name = std::string(StringOr(*meta, "namespace"));
    }
  }
  // A dry run gets the same verdict, warnings and patch as the real request, but reserves no
  // quota (the webhooks declare sideEffects: NoneOnDryRun).
  const JsonValue* dry_run_value = FindNonNull(req, "dryRun");
  const bool dry_run = dry_run_value && dry_run_value->IsBool() && dry_run_value->GetBool();

  const topology::Labels& namespace_labels = snapshot.NamespaceLabels(r.namespace_name);
  topology::TenantRef tenant = topology::ResolveTenant(policy, r.namespace_name, namespace_labels);
  topology::QuotaUsage held;  // read by the pod rules only; a claim's quota counts its own way
  if (kind == ReviewKind::kValidate && IsPodKind(r) && tenant.tenant &&
      !tenant.tenant->quota.empty()) {
    held = topology::TenantUsage(snapshot, policy, tenant.name);
    r.tenant_held = &held;
  }
  r.dra = &snapshot.dra();
  r.snapshot = &snapshot;
  r.claim_quota = &claim_quota;
  r.dry_run = dry_run;
  r.selector_plans = selector_plans;
  absl::StatusOr<ObjectOutcome> outcome = ReviewObject(r, kind, policy, namespace_labels);
  if (!outcome.ok()) return BadRequest(outcome.status().message());
  ReviewOutcome out;
  out.allowed = outcome->allowed;
  out.rule = outcome->rule;
  out.message = outcome->message;
  out.warnings = outcome->warnings;
  if (kind == ReviewKind::kMutate && !outcome->patch.empty()) {
    out.patch_json = outcome->patch.ToJson();
  }
  out.body = ReplyBody(*uid, *outcome, kind, out.patch_json);
  out.kind = r.kind;
  out.namespace_name = r.namespace_name;
  out.name = std::string(StringOr(req, "name"));
  if (out.name.empty() && r.object && r.object->IsObject()) out.name = ObjectName(*r.object);
  // A Node belongs to no tenant.
  if (!(r.group.empty() && r.kind == "Node")) {
    out.tenant = tenant.name;
    out.tier = tenant.tier ? tenant.tier->name : "";
  }
  return out;
}

}  // namespace webhook
