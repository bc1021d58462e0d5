// Reading a Pod object into the PodView the rules read: containers (resources, security
// context, device env), host path volumes, hostIPC, pool selections and the GPU demand.
#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "topology/dra/extended_resources.h"
#include "webhook/claim_selectors.h"
#include "webhook/pod_rule_checks.h"
#include "webhook/pod_rules.h"
#include "wire/k8s_codec.h"

namespace webhook {
namespace {

using common::AsStringView;
using common::FindNonNull;
using common::JsonValue;
using common::StringOr;

std::vector<PoolSelection> PoolSelections(const topology::PodFacts& pod,
                                          const topology::Policy& policy) {
  std::vector<PoolSelection> out;
  if (auto it = pod.node_selector.find(policy.pool_label);
      it != pod.node_selector.end() && !it->second.empty()) {
    out.push_back({it->second, "nodeSelector"});
  }
  std::set<std::string> seen;
  for (const topology::NodeAffinityIn& in : pod.required_affinity_in) {
    if (in.key != policy.pool_label) continue;
    for (const std::string& pool : in.values) {
      if (!pool.empty() && seen.insert(pool).second) {
        out.push_back({pool, "required node affinity"});
      }
    }
  }
  return out;
}

void AddContainers(const std::vector<topology::ContainerFacts>& from, ContainerList list,
                   std::vector<ContainerView>& out) {
  for (const topology::ContainerFacts& c : from) {
    ContainerView view;
    static_cast<topology::ContainerFacts&>(view) = c;
    view.list = list;
    out.push_back(std::move(view));
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

PodView PodViewOf(topology::PodFacts facts, const topology::Policy& policy) {
  PodView view;
  AddContainers(facts.containers, ContainerList::kContainer, view.containers);
  AddContainers(facts.init_containers, ContainerList::kInit, view.containers);
  AddContainers(facts.ephemeral_containers, ContainerList::kEphemeral, view.containers);
  view.pool_selections = PoolSelections(facts, policy);
  view.demand = topology::ComputeDemand(facts, policy);
  view.facts = std::move(facts);
  return view;
}

absl::StatusOr<PodView> ParsePodView(const JsonValue& pod, const topology::Policy& policy,
                                     absl::string_view namespace_name, absl::string_view path) {
  // A pod may carry dozens of labels and annotations; the rules read one annotation.
  wire::PodMetadataFilter keep;
  keep.all_labels = false;
  keep.all_annotations = false;
  keep.annotations = {policy.memory_annotation};
  ASSIGN_OR_RETURN(topology::PodFacts facts, wire::ParsePod(pod, path, keep));
  if (facts.namespace_name.empty()) facts.namespace_name = std::string(namespace_name);
  return PodViewOf(std::move(facts), policy);
}

}  // namespace webhook
