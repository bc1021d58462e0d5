// Reading a Pod object into the PodView the rules read: containers (resources, security
// context, device env), host path volumes, hostIPC, pool selections and the GPU demand.
#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/k8s_codec.h"
#include "topology/dra_extended.h"
#include "topology/status_macros.h"
#include "webhook/claim_selectors.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"

namespace webhook {
namespace {

using common::AsStringView;
using common::FindNonNull;
using common::JsonValue;
using common::StringOr;
using pod_rules_internal::kDeviceEnv;

absl::StatusOr<ContainerView> ParseContainer(const JsonValue& c, ContainerList list,
                                             absl::string_view path) {
  if (!c.IsObject()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected object"));
  ContainerView view;
  view.list = list;
  view.name = std::string(StringOr(c, "name"));
  if (const JsonValue* resources = FindNonNull(c, "resources");
      resources && resources->IsObject()) {
    std::string r_path = common::JoinPath(path, "resources");
    if (const JsonValue* req = common::FindMember(*resources, "requests")) {
      ASSIGN_OR_RETURN(view.requests,
                       common::ParseResourceList(*req, common::JoinPath(r_path, "requests")));
    }
    if (const JsonValue* lim = common::FindMember(*resources, "limits")) {
      ASSIGN_OR_RETURN(view.limits,
                       common::ParseResourceList(*lim, common::JoinPath(r_path, "limits")));
    }
  }
  // The API server has validated field types before any webhook runs; a hand-written manifest
  // with a wrong type simply does not count as asking for the thing.
  if (const JsonValue* sc = FindNonNull(c, "securityContext"); sc && sc->IsObject()) {
    const JsonValue* privileged = FindNonNull(*sc, "privileged");
    view.privileged = privileged && privileged->IsBool() && privileged->GetBool();
    if (const JsonValue* caps = FindNonNull(*sc, "capabilities"); caps && caps->IsObject()) {
      if (const JsonValue* add = FindNonNull(*caps, "add"); add && add->IsArray()) {
        for (const JsonValue& cap : add->GetArray()) {
          if (cap.IsString()) view.capabilities_added.emplace_back(AsStringView(cap));
        }
      }
    }
  }
  if (const JsonValue* env = FindNonNull(c, "env"); env && env->IsArray()) {
    for (const JsonValue& e : env->GetArray()) {
      if (!e.IsObject()) continue;
      absl::string_view name = StringOr(e, "name");
      if (std::find(kDeviceEnv.begin(), kDeviceEnv.end(), name) == kDeviceEnv.end()) continue;
      view.env.push_back({std::string(name), std::string(StringOr(e, "value"))});
    }
  }
  return view;
}

void ParsePoolSelections(const JsonValue& spec, const topology::Policy& policy, PodView& view) {
  if (const JsonValue* selector = FindNonNull(spec, "nodeSelector"); selector) {
    absl::string_view pool = StringOr(*selector, policy.pool_label);
    if (!pool.empty()) view.pool_selections.push_back({std::string(pool), "nodeSelector"});
  }
  const JsonValue* affinity = FindNonNull(spec, "affinity");
  const JsonValue* node = affinity ? FindNonNull(*affinity, "nodeAffinity") : nullptr;
  const JsonValue* required =
      node ? FindNonNull(*node, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  const JsonValue* terms = required ? FindNonNull(*required, "nodeSelectorTerms") : nullptr;
  if (!terms || !terms->IsArray()) return;
  std::set<std::string> seen;
  for (const JsonValue& term : terms->GetArray()) {
    const JsonValue* exprs = FindNonNull(term, "matchExpressions");
    if (!exprs || !exprs->IsArray()) continue;
    for (const JsonValue& e : exprs->GetArray()) {
      if (StringOr(e, "key") != policy.pool_label || StringOr(e, "operator") != "In") continue;
      const JsonValue* values = FindNonNull(e, "values");
      if (!values || !values->IsArray()) continue;
      for (const JsonValue& v : values->GetArray()) {
        std::string pool(AsStringView(v));
        if (!pool.empty() && seen.insert(pool).second) {
          view.pool_selections.push_back({pool, "required node affinity"});
        }
      }
    }
  }
}

}  // namespace

std::string ContainerView::Label() const {
  switch (list) {
    case ContainerList::kInit:
      return absl::StrCat("init container \"", name, "\"");
    case ContainerList::kEphemeral:
      return absl::StrCat("ephemeral container \"", name, "\"");
    case ContainerList::kContainer:
      break;
  }
  return absl::StrCat("container \"", name, "\"");
}

PodView EphemeralContainersOf(const PodView& pod) {
  PodView ephemeral;
  ephemeral.facts.namespace_name = pod.facts.namespace_name;
  ephemeral.facts.name = pod.facts.name;
  for (const ContainerView& c : pod.containers) {
    if (c.list == ContainerList::kEphemeral) ephemeral.containers.push_back(c);
  }
  return ephemeral;
}

std::string SchedulerOf(const topology::PodFacts& pod) {
  return pod.scheduler_name.empty() ? "default-scheduler" : pod.scheduler_name;
}

bool PodView::HasGpuRequests() const {
  if (demand.ok() && !demand->empty()) return true;
  if (!demand.ok()) return true;  // an unreadable GPU request is still a GPU request
  if (!gpu_claims.empty()) return true;
  return std::any_of(dra_extended.begin(), dra_extended.end(), [](const DraExtendedAsk& a) {
    return a.class_kind != topology::DeviceClassKind::kOther;
  });
}

std::vector<DraExtendedAsk> DraExtendedAsks(const PodView& pod, const topology::DraState* dra,
                                            const topology::AdmissionAllowList& allow) {
  std::vector<DraExtendedAsk> out;
  for (const ContainerView& c : pod.containers) {
    std::set<std::string> seen;
    for (const topology::ResourceList* resources : {&c.requests, &c.limits}) {
      for (const auto& [name, q] : *resources) {
        if (q.IsZero() || seen.count(name)) continue;
        std::string device_class;
        if (absl::StartsWith(name, topology::kDeviceClassResourcePrefix)) {
          device_class = name.substr(topology::kDeviceClassResourcePrefix.size());
        } else if (const topology::DraDeviceClass* backing =
                       dra ? topology::DraExtendedClass(*dra, name) : nullptr) {
          device_class = backing->name;
        } else {
          continue;
        }
        seen.insert(name);
        out.push_back({c.Label(), name, device_class, allow.ClassifyDeviceClass(device_class)});
      }
    }
  }
  return out;
}

std::vector<std::string> GpuClaimUses(const topology::PodFacts& pod, const topology::DraState& dra,
                                      const topology::AdmissionAllowList& allow) {
  std::vector<std::string> out;
  for (const topology::PodClaimRef& ref : pod.resource_claims) {
    const bool from_template = ref.claim.empty();
    const topology::DraClaim* claim =
        from_template ? dra.templates.Find(pod.namespace_name, ref.template_name)
                      : dra.claims.Find(pod.namespace_name, ref.claim);
    if (!claim) continue;
    for (const std::string& device_class : claim->device_classes) {
      if (allow.ClassifyDeviceClass(device_class) != topology::DeviceClassKind::kGpu) continue;
      out.push_back(absl::StrCat(
          "claim \"", ref.name, "\" (", from_template ? "ResourceClaimTemplate " : "ResourceClaim ",
          from_template ? ref.template_name : ref.claim, ", device class ", device_class, ")"));
      break;
    }
  }
  return out;
}

absl::StatusOr<PodView> ParsePodView(const JsonValue& pod, const topology::Policy& policy,
                                     absl::string_view namespace_name, absl::string_view path) {
  PodView view;
  // A pod may carry dozens of labels and annotations; the rules read one annotation.
  common::PodMetadataFilter keep;
  keep.all_labels = false;
  keep.all_annotations = false;
  keep.annotations = {policy.memory_annotation};
  ASSIGN_OR_RETURN(view.facts, common::ParsePod(pod, path, keep));
  if (view.facts.namespace_name.empty()) view.facts.namespace_name = std::string(namespace_name);
  const JsonValue* spec = FindNonNull(pod, "spec");  // ParsePod required it
  std::string spec_path = common::JoinPath(path, "spec");
  const std::pair<absl::string_view, ContainerList> lists[] = {
      {"containers", ContainerList::kContainer},
      {"initContainers", ContainerList::kInit},
      {"ephemeralContainers", ContainerList::kEphemeral}};
  for (const auto& [key, list] : lists) {
    ASSIGN_OR_RETURN(const JsonValue* array, common::OptionalArray(*spec, key, spec_path));
    if (!array) continue;
    for (rapidjson::SizeType i = 0; i < array->Size(); ++i) {
      ASSIGN_OR_RETURN(ContainerView c,
                       ParseContainer((*array)[i], list,
                                      common::IndexPath(common::JoinPath(spec_path, key), i)));
      view.containers.push_back(std::move(c));
    }
  }
  if (const JsonValue* volumes = FindNonNull(*spec, "volumes"); volumes && volumes->IsArray()) {
    for (const JsonValue& v : volumes->GetArray()) {
      const JsonValue* host_path = FindNonNull(v, "hostPath");
      if (!host_path) continue;
      view.host_paths.push_back(
          {std::string(StringOr(v, "name")), std::string(StringOr(*host_path, "path"))});
    }
  }
  const JsonValue* host_ipc = FindNonNull(*spec, "hostIPC");
  view.host_ipc = host_ipc && host_ipc->IsBool() && host_ipc->GetBool();
  ParsePoolSelections(*spec, policy, view);
  view.demand = topology::ComputeDemand(view.facts, policy);
  return view;
}

}  // namespace webhook
