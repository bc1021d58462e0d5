#include "webhook/match_conditions.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "topology/wellknown.h"
#include "webhook/claim_rules.h"
#include "webhook/pod_rule_checks.h"

namespace webhook {
namespace {

using pod_rules_internal::kDeviceCapabilities;
using pod_rules_internal::kDeviceEnv;
using pod_rules_internal::kDeviceHostPaths;
using pod_rules_internal::kMpsPipeMarker;

// A CEL string literal.
std::string Quote(absl::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

template <typename Range>
std::string ListOf(const Range& items) {
  std::vector<std::string> quoted;
  for (const auto& item : items) quoted.push_back(Quote(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// `pred` (over `c`) for some container of any of the three lists.
std::string AnyContainer(absl::string_view pred) {
  std::vector<std::string> lists;
  for (absl::string_view list : {"containers", "initContainers", "ephemeralContainers"}) {
    lists.push_back(absl::StrCat("(has(object.spec.", list, ") && object.spec.", list,
                                 ".exists(c, ", pred, "))"));
  }
  return absl::StrJoin(lists, " || ");
}

// A resource name the pod rules must see: every extended resource, that is every name with a
// domain (native resources such as cpu, memory and hugepages-2Mi have none). An allow-list: GPU
// names the service knows, a GPU vendor's names it does not (unknown-demand), DRA extended
// resources (deviceclass.resource.kubernetes.io/<class> and any name a DeviceClass maps), whose
// names no condition could list ahead of the classes.
std::string ExtendedResourceName(absl::string_view n) { return absl::StrCat(n, ".contains('/')"); }

// CEL: `text` matches the policy pattern (topology::MatchesPattern).
std::string PatternMatch(absl::string_view pattern, absl::string_view text) {
  const size_t star = pattern.find('*');
  if (star == absl::string_view::npos) return absl::StrCat(text, " == ", Quote(pattern));
  const absl::string_view prefix = pattern.substr(0, star);
  const absl::string_view suffix = pattern.substr(star + 1);
  return absl::StrCat("(", text, ".startsWith(", Quote(prefix), ") && ", text, ".endsWith(",
                      Quote(suffix), ") && size(", text, ") >= ", prefix.size() + suffix.size(),
                      ")");
}

// CEL: `text` matches one of `patterns` ("false" for none).
std::string AnyPattern(const std::vector<std::string>& patterns, absl::string_view text) {
  if (patterns.empty()) return "false";
  std::vector<std::string> parts;
  for (const std::string& p : patterns) parts.push_back(PatternMatch(p, text));
  return absl::StrCat("(", absl::StrJoin(parts, " || "), ")");
}

// A raw hostPath `p` that HostPathReach (device_access_rules.cc) may find, whatever the
// cleaning: the path is cleaned there, so the condition over-approximates on the raw text.
std::string DeviceHostPath(absl::string_view p) {
  std::vector<std::string> parts;
  // Anything "." or ".." or "//" rewrites is taken, whatever it cleans to.
  parts.push_back(absl::StrCat(p, ".startsWith('.')"));
  parts.push_back(absl::StrCat(p, ".contains('/.')"));
  parts.push_back(absl::StrCat(p, ".contains('//')"));
  parts.push_back(absl::StrCat(p, ".contains(", Quote(kMpsPipeMarker), ")"));
  std::vector<std::string> parents = {"", "/"};
  for (absl::string_view device : kDeviceHostPaths) {
    // The cleaned path starts with the device path, so its last segment starts a raw segment.
    absl::string_view last = device.substr(device.rfind('/') + 1);
    parts.push_back(absl::StrCat(p, ".contains(", Quote(absl::StrCat("/", last)), ")"));
    parts.push_back(absl::StrCat(p, ".startsWith(", Quote(last), ")"));
    // Every directory above it, with or without the leading and a trailing slash.
    std::vector<absl::string_view> segments = absl::StrSplit(device, '/', absl::SkipEmpty());
    std::string dir;
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      dir = absl::StrCat(dir, i == 0 ? "" : "/", segments[i]);
      for (std::string form :
           {absl::StrCat("/", dir), absl::StrCat("/", dir, "/"), dir, absl::StrCat(dir, "/")}) {
        if (std::find(parents.begin(), parents.end(), form) == parents.end()) {
          parents.push_back(std::move(form));
        }
      }
    }
  }
  parts.push_back(absl::StrCat(p, " in ", ListOf(parents)));
  std::vector<std::string> unique;
  for (std::string& part : parts) {
    if (std::find(unique.begin(), unique.end(), part) == unique.end()) {
      unique.push_back(std::move(part));
    }
  }
  return absl::StrJoin(unique, " || ");
}

// The PriorityClass names every tenant with a list allows; nullopt when no tenant has one.
std::optional<std::vector<std::string>> PriorityClassesEveryoneMayUse(
    const topology::Policy& policy) {
  std::optional<std::vector<std::string>> common;
  for (const topology::Tenant& t : policy.tenants) {
    if (t.priority_classes.empty()) continue;
    if (!common) {
      common = t.priority_classes;
      continue;
    }
    std::vector<std::string> kept;
    for (const std::string& name : *common) {
      if (std::find(t.priority_classes.begin(), t.priority_classes.end(), name) !=
          t.priority_classes.end()) {
        kept.push_back(name);
      }
    }
    common = std::move(kept);
  }
  return common;
}

// `x`'s annotation `key` is there. `x != null` first: oldObject is null on CREATE, and
// selecting a field of null is an error in cel-go.
std::string HasAnnotation(absl::string_view x, absl::string_view key) {
  return absl::StrCat(x, " != null && has(", x, ".metadata) && has(", x,
                      ".metadata.annotations) && ", Quote(key), " in ", x, ".metadata.annotations");
}

// Annotation `key` is added, changed or removed by the request (absent and present differ; on
// CREATE, present at all). Values are read only where both are there, so it never errs.
std::string AnnotationChanges(absl::string_view key) {
  const std::string now = HasAnnotation("object", key);
  const std::string before = HasAnnotation("oldObject", key);
  return absl::StrCat("(", now, ") ? !(", before, ") || object.metadata.annotations[", Quote(key),
                      "] != oldObject.metadata.annotations[", Quote(key), "] : (", before, ")");
}

std::vector<MatchClause> PodClauses(const topology::Policy& policy, ReviewKind webhook) {
  std::vector<MatchClause> out;
  const std::string gpu_name = ExtendedResourceName("n");
  auto resources = [&](absl::string_view field) {
    return absl::StrCat("(has(c.resources.", field, ") && c.resources.", field, ".exists(n, ",
                        gpu_name, "))");
  };
  out.push_back(
      {"pod-extended-resources",
       "unknown-tenant, tier-shared, fail-requests-greater-than-one, tenant-limits, "
       "invalid-gpu-request, tenant-quota, dra-extended-resource, unknown-demand, the "
       "time-slicing warning; mutation: labels, pool affinity, tolerations, GPU memory",
       absl::StrCat(AnyContainer(absl::StrCat("has(c.resources) && (", resources("requests"),
                                              " || ", resources("limits"), ")")),
                    " || (has(object.spec.overhead) && object.spec.overhead.exists(n, ", gpu_name,
                    "))")});
  out.push_back({"pod-gpu-memory-annotation",
                 "tenant-limits, invalid-gpu-request, unknown-tenant; mutation: GPU memory",
                 absl::StrCat("has(object.metadata) && has(object.metadata.annotations) && ",
                              Quote(policy.memory_annotation), " in object.metadata.annotations")});
  out.push_back({"pod-resource-claims",
                 "unknown-tenant, device-access (claims for NVIDIA GPU classes make a GPU pod); "
                 "mutation: pool affinity, tolerations",
                 "has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0"});
  if (webhook == ReviewKind::kMutate) return out;
  out.push_back({"pod-privileged", "device-access, unknown-tenant",
                 AnyContainer("has(c.securityContext) && has(c.securityContext.privileged) && "
                              "c.securityContext.privileged == true")});
  out.push_back(
      {"pod-device-capabilities", "device-access, unknown-tenant",
       AnyContainer(absl::StrCat("has(c.securityContext) && has(c.securityContext.capabilities) && "
                                 "has(c.securityContext.capabilities.add) && "
                                 "c.securityContext.capabilities.add.exists(a, a.upperAscii() in ",
                                 ListOf(kDeviceCapabilities), ")"))});
  out.push_back(
      {"pod-device-env", "device-access, unknown-tenant",
       AnyContainer(absl::StrCat("has(c.env) && c.env.exists(e, has(e.name) && e.name in ",
                                 ListOf(kDeviceEnv), ")"))});
  out.push_back({"pod-device-host-paths", "device-access, unknown-tenant",
                 absl::StrCat("has(object.spec.volumes) && object.spec.volumes.exists(v, "
                              "has(v.hostPath) && (!has(v.hostPath.path) || ",
                              DeviceHostPath("v.hostPath.path"), "))")});
  out.push_back({"pod-host-ipc", "device-access, unknown-tenant",
                 "has(object.spec.hostIPC) && object.spec.hostIPC == true"});
  const std::string label = Quote(policy.pool_label);
  out.push_back(
      {"pod-pool-selector", "tier-shared (a pool the tier may not use)",
       absl::StrCat(
           "(has(object.spec.nodeSelector) && ", label,
           " in object.spec.nodeSelector) || (has(object.spec.affinity) && "
           "has(object.spec.affinity.nodeAffinity) && "
           "has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) "
           "&& has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
           ".nodeSelectorTerms) && "
           "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
           ".nodeSelectorTerms.exists(t, has(t.matchExpressions) && t.matchExpressions.exists(e, "
           "has(e.key) && e.key == ",
           label, ")))")});
  // Any pod, GPU or not: a device annotation on a CPU pod would still mislead the inventory.
  out.push_back({"pod-devices-annotation", "device-annotation (added, changed or removed)",
                 AnnotationChanges(topology::kPodDevicesAnnotation)});
  const bool default_priorities =
      std::any_of(policy.tenants.begin(), policy.tenants.end(),
                  [](const topology::Tenant& t) { return t.priority_classes.empty(); });
  if (default_priorities) {
    // kube-apiserver's Priority admission has filled spec.priority and spec.preemptionPolicy
    // before any webhook, so the condition reads what the rule reads.
    out.push_back({"pod-preempting-priority",
                   "priority-class (a tenant without priorityClasses may use only priorities that "
                   "cannot preempt across tenants)",
                   "has(object.spec.priority) && (object.spec.priority < 0 || "
                   "(object.spec.priority > 0 && !(has(object.spec.preemptionPolicy) && "
                   "object.spec.preemptionPolicy == 'Never')))"});
  }
  if (std::optional<std::vector<std::string>> everyone = PriorityClassesEveryoneMayUse(policy)) {
    out.push_back({"pod-priority-class",
                   "priority-class (any pod of a tenant with priorityClasses; the classes every "
                   "such tenant may use are left out)",
                   absl::StrCat("has(object.spec.priorityClassName) && "
                                "!(object.spec.priorityClassName in ",
                                ListOf(*everyone), ")")});
  }
  return out;
}

// `pred` (over `h`) for some holder of deviceClassName: a v1beta1 request, a v1/v1beta2
// request's `exactly`, or a firstAvailable subrequest (ParseClaimView's NoteRequest).
std::string AnyRequest(absl::string_view spec,
                       const std::function<std::string(absl::string_view h)>& pred) {
  auto on = [&](absl::string_view h) { return absl::StrCat("(", pred(h), ")"); };
  return absl::StrCat("has(", spec, ".devices) && has(", spec, ".devices.requests) && ", spec,
                      ".devices.requests.exists(r, ", on("r"), " || (has(r.exactly) && ",
                      on("r.exactly"), ") || (has(r.firstAvailable) && r.firstAvailable.exists(s, ",
                      on("s"), ")))");
}

std::vector<MatchClause> ClaimClauses(const topology::Policy& policy, ReviewKind webhook,
                                      MatchKind kind) {
  const std::string spec =
      kind == MatchKind::kResourceClaimTemplate ? "object.spec.spec" : "object.spec";
  std::vector<MatchClause> out;
  const topology::AdmissionAllowList& allow = policy.admission;
  out.push_back({"claim-gpu-device-class",
                 "unknown-tenant, claim-device-class, claim-mig-profile, claim-shared-capacity, "
                 "dra-extended-resource, tenant-quota; mutation: labels, tenant selectors",
                 AnyRequest(spec, [&](absl::string_view h) {
                   return absl::StrCat(
                       "has(", h, ".deviceClassName) && ",
                       AnyPattern(allow.gpu_device_classes, absl::StrCat(h, ".deviceClassName")));
                 })});
  out.push_back({"claim-nvidia-config",
                 "unknown-tenant, claim-sharing, claim-mps-limits; mutation: labels, MPS limits",
                 absl::StrCat("has(", spec, ".devices) && has(", spec, ".devices.config) && ", spec,
                              ".devices.config.exists(c, has(c.opaque) && has(c.opaque.driver) && "
                              "c.opaque.driver == ",
                              Quote(kNvidiaDraDriver), ")")});
  out.push_back({"claim-nvidia-resource-class", "unknown-tenant (resource.k8s.io/v1alpha2)",
                 absl::StrCat("has(", spec, ".resourceClassName) && ", spec,
                              ".resourceClassName.lowerAscii().contains('nvidia')")});
  if (webhook == ReviewKind::kMutate) return out;
  // An allow-list: a class in neither list is unknown demand, which validation judges.
  out.push_back({"claim-unmapped-device-class", "unknown-demand, unknown-tenant",
                 AnyRequest(spec, [&](absl::string_view h) {
                   const std::string name = absl::StrCat(h, ".deviceClassName");
                   return absl::StrCat("has(", h, ".deviceClassName) && !",
                                       AnyPattern(allow.gpu_device_classes, name), " && !",
                                       AnyPattern(allow.other_device_classes, name));
                 })});
  out.push_back({"claim-admin-access", "device-access (admin access to any device class)",
                 AnyRequest(spec, [](absl::string_view h) {
                   return absl::StrCat("has(", h, ".adminAccess) && ", h, ".adminAccess == true");
                 })});
  const bool any_quota = std::any_of(policy.tenants.begin(), policy.tenants.end(),
                                     [](const topology::Tenant& t) { return !t.quota.empty(); });
  if (kind == MatchKind::kResourceClaim && any_quota) {
    // A class's own selectors decide which devices it gives, and a condition cannot read them.
    out.push_back({"claim-quota", "tenant-quota (devices are counted by the class's selectors)",
                   AnyRequest(spec, [](absl::string_view h) {
                     return absl::StrCat("has(", h, ".deviceClassName)");
                   })});
  }
  return out;
}

// Only the device-annotation rule reads a Node, and only a change of its annotation.
std::vector<MatchClause> NodeClauses(ReviewKind webhook) {
  if (webhook == ReviewKind::kMutate) return {};
  return {{"node-gpu-devices-annotation", "device-annotation (added, changed or removed)",
           AnnotationChanges(topology::kNodeDevicesAnnotation)}};
}

}  // namespace

std::vector<MatchClause> MatchClauses(const topology::Policy& policy, ReviewKind webhook,
                                      MatchKind kind) {
  if (kind == MatchKind::kPod) return PodClauses(policy, webhook);
  if (kind == MatchKind::kNode) return NodeClauses(webhook);
  return ClaimClauses(policy, webhook, kind);
}

MatchCondition WebhookMatchCondition(const topology::Policy& policy, ReviewKind webhook,
                                     const std::set<std::string>& without) {
  struct Kind {
    MatchKind kind;
    const char* name;
    const char* guard;
  };
  const Kind kinds[] = {
      {MatchKind::kPod, "Pod", "has(object.spec)"},
      {MatchKind::kResourceClaim, "ResourceClaim", "has(object.spec)"},
      {MatchKind::kResourceClaimTemplate, "ResourceClaimTemplate",
       "has(object.spec) && has(object.spec.spec)"},
      // Its clause guards itself (it reads metadata only, of object and oldObject).
      {MatchKind::kNode, "Node", ""},
  };
  std::vector<std::string> per_kind;
  for (const Kind& k : kinds) {
    const std::vector<MatchClause> all = MatchClauses(policy, webhook, k.kind);
    if (all.empty()) continue;  // a kind this webhook is not sent
    std::vector<std::string> clauses;
    for (const MatchClause& c : all) {
      if (without.count(c.name)) continue;
      clauses.push_back(absl::StrCat("  // ", c.name, ": ", c.covers, "\n  (", c.expression, ")"));
    }
    if (clauses.empty()) clauses.push_back("  false");
    const std::string guard = *k.guard ? absl::StrCat(k.guard, " && ") : "";
    per_kind.push_back(absl::StrCat("(request.kind.kind == ", Quote(k.name), " && ", guard, "(\n",
                                    absl::StrJoin(clauses, " ||\n"), "\n))"));
  }
  return {webhook == ReviewKind::kValidate ? "gpu-or-device-access" : "gpu-objects",
          absl::StrCat(absl::StrJoin(per_kind, " ||\n"), "\n")};
}

}  // namespace webhook
