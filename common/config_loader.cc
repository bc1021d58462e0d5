#include "common/config_loader.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "common/yaml_fields.h"
#include "common/yaml_json.h"
#include "topology/quantity.h"

absl::string_view EmbeddedMigCatalog();  // generated from topology/mig_catalog.yaml

namespace common {
namespace {

using topology::Catalog;
using topology::GpuModel;
using topology::MigProfile;
using topology::Policy;

absl::StatusOr<Fields> Root(const rapidjson::Document& doc, absl::string_view what) {
  if (!doc.IsObject())
    return absl::InvalidArgumentError(absl::StrCat(what, ": expected a mapping"));
  return Fields(doc, "");
}

// A bound on every quota count: far above any real fleet, low enough that sums of counts
// cannot overflow int64.
constexpr int64_t kMaxQuota = 1000000;

// The built-in profile named `name` (nvidia-smi name or Kubernetes resource suffix) on any GPU
// model; nullptr if no model has it.
const MigProfile* FindAnyProfile(const Catalog& catalog, absl::string_view name) {
  for (const GpuModel& model : catalog.models()) {
    if (const MigProfile* p = model.FindProfile(name)) return p;
  }
  return nullptr;
}

// tenants[].quota. MIG profiles are checked against the built-in catalog and stored under their
// nvidia-smi name, the key topology/quota.h counts by.
absl::Status LoadQuota(Fields& f, topology::TenantQuota& quota) {
  ASSIGN_OR_RETURN(quota.gpus, f.IntInRange("gpus", 0, kMaxQuota));
  ASSIGN_OR_RETURN(std::optional<Fields> mig, f.Object("migInstances"));
  if (mig) {
    const JsonValue* counts = f.Get("migInstances");
    for (auto it = counts->MemberBegin(); it != counts->MemberEnd(); ++it) {
      absl::string_view name = AsStringView(it->name);
      const MigProfile* profile = FindAnyProfile(BuiltinCatalog(), name);
      if (!profile) {
        return Fields::Bad(mig->Path(name), absl::StrCat("unknown MIG profile \"", name, "\""));
      }
      ASSIGN_OR_RETURN(std::optional<int64_t> count, mig->IntInRange(name, 0, kMaxQuota));
      if (!count) {  // null
        return Fields::Bad(mig->Path(name),
                           absl::StrCat("expected an integer from 0 to ", kMaxQuota));
      }
      if (!quota.mig_instances.emplace(profile->name, *count).second) {
        return Fields::Bad(mig->Path(name),
                           absl::StrCat("MIG profile \"", profile->name, "\" given twice"));
      }
    }
    RETURN_IF_ERROR(mig->NoUnknownKeys());
  }
  ASSIGN_OR_RETURN(quota.mig_compute_slices, f.IntInRange("migComputeSlices", 0, kMaxQuota));
  ASSIGN_OR_RETURN(quota.shared_replicas, f.IntInRange("sharedReplicas", 0, kMaxQuota));
  ASSIGN_OR_RETURN(quota.gpu_memory_mib, f.MemoryMiB("gpuMemory"));
  ASSIGN_OR_RETURN(quota.gpu_pods, f.IntInRange("gpuPods", 0, kMaxQuota));
  return f.NoUnknownKeys();
}

// Fair sharing's weights: a share of idle capacity against siblings'.
constexpr int64_t kMaxWeight = 1000;

// A tenant's fair-sharing keys (guaranteed, limit, weight, group), in their own block: a tenant
// stating any of them takes part in fair sharing, its `limit` becoming the hard cap every quota
// check enforces. `quota` beside them is refused: it is the hard cap of a tenant that never
// borrows.
absl::Status LoadTenantFairShare(Fields& f, topology::Tenant& tenant) {
  const bool any = f.Get("guaranteed") || f.Get("limit") || f.Get("weight") || f.Get("group");
  if (!any) return absl::OkStatus();
  if (f.Get("quota")) {
    return Fields::Bad(f.Path("quota"),
                       absl::StrCat("tenant \"", tenant.name,
                                    "\" states quota beside guaranteed, limit, weight or group: "
                                    "quota is the hard cap of a tenant that never borrows; a "
                                    "tenant that borrows states guaranteed and limit instead"));
  }
  topology::FairShareTerms terms;
  ASSIGN_OR_RETURN(std::optional<Fields> guaranteed, f.Object("guaranteed"));
  if (guaranteed) RETURN_IF_ERROR(LoadQuota(*guaranteed, terms.guaranteed));
  ASSIGN_OR_RETURN(std::optional<Fields> limit, f.Object("limit"));
  if (limit) RETURN_IF_ERROR(LoadQuota(*limit, terms.limit));
  ASSIGN_OR_RETURN(std::optional<int64_t> weight, f.IntInRange("weight", 1, kMaxWeight));
  if (weight) terms.weight = *weight;
  ASSIGN_OR_RETURN(terms.group, f.String("group", false));
  tenant.quota = terms.limit;
  tenant.fair_share = std::move(terms);
  return absl::OkStatus();
}

// groups[]: {name, parent, guaranteed, limit, weight}, and fairSharing: {capacity}.
absl::Status LoadFairSharing(Fields& root, Policy& policy) {
  RETURN_IF_ERROR(root.List("groups", /*required=*/false, [&](Fields& f) -> absl::Status {
    topology::TenantGroup group;
    ASSIGN_OR_RETURN(group.name, f.String("name", true));
    ASSIGN_OR_RETURN(group.parent, f.String("parent", false));
    ASSIGN_OR_RETURN(std::optional<Fields> guaranteed, f.Object("guaranteed"));
    if (guaranteed) RETURN_IF_ERROR(LoadQuota(*guaranteed, group.guaranteed));
    ASSIGN_OR_RETURN(std::optional<Fields> limit, f.Object("limit"));
    if (limit) RETURN_IF_ERROR(LoadQuota(*limit, group.limit));
    ASSIGN_OR_RETURN(std::optional<int64_t> weight, f.IntInRange("weight", 1, kMaxWeight));
    if (weight) group.weight = *weight;
    RETURN_IF_ERROR(f.NoUnknownKeys());
    policy.groups.push_back(std::move(group));
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(std::optional<Fields> sharing, root.Object("fairSharing"));
  if (sharing) {
    ASSIGN_OR_RETURN(std::optional<Fields> capacity, sharing->Object("capacity"));
    if (capacity) {
      topology::TenantQuota stated;
      RETURN_IF_ERROR(LoadQuota(*capacity, stated));
      policy.fair_share_capacity = std::move(stated);
    }
    RETURN_IF_ERROR(sharing->NoUnknownKeys());
  }
  return absl::OkStatus();
}

// preemption.acrossTenants[]: {preemptors: {tenants, tiers}, victims: {tenants, tiers}}.
absl::Status LoadTenantMatch(Fields& f, absl::string_view key, topology::TenantMatch& match) {
  ASSIGN_OR_RETURN(std::optional<Fields> side, f.Object(key));
  if (!side) return absl::OkStatus();
  ASSIGN_OR_RETURN(match.tenants, side->Strings("tenants"));
  ASSIGN_OR_RETURN(match.tiers, side->Strings("tiers"));
  if (match.empty()) {
    return absl::InvalidArgumentError(f.Path(key) + ": name at least one tenant or tier");
  }
  return side->NoUnknownKeys();
}

absl::Status LoadPreemption(Fields& f, topology::PreemptionPolicy& preemption) {
  RETURN_IF_ERROR(f.List("acrossTenants", /*required=*/false, [&](Fields& rule) -> absl::Status {
    topology::CrossTenantPreemption r;
    RETURN_IF_ERROR(LoadTenantMatch(rule, "preemptors", r.preemptors));
    RETURN_IF_ERROR(LoadTenantMatch(rule, "victims", r.victims));
    preemption.across_tenants.push_back(std::move(r));
    return absl::OkStatus();
  }));
  return f.NoUnknownKeys();
}

// A DNS-1123 label (a namespace name): lowercase alphanumerics and '-', at most 63, starting
// and ending alphanumeric.
bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

// A DNS-1123 subdomain (a ServiceAccount name): dot-separated labels, at most 253 in all.
bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (!IsDnsLabel(label)) return false;
  }
  return true;
}

// nodeAgent: {serviceAccount: <namespace>/<name>}, the identity the webhook lets write the
// device annotations (webhook/device_annotation_rules.h).
absl::Status LoadNodeAgent(Fields& f, topology::NodeAgent& agent) {
  ASSIGN_OR_RETURN(std::string account, f.String("serviceAccount", false));
  if (f.Get("serviceAccount")) {
    std::vector<absl::string_view> parts = absl::StrSplit(account, '/');
    if (parts.size() != 2 || !IsDnsLabel(parts[0]) || !IsDnsSubdomain(parts[1])) {
      return Fields::Bad(f.Path("serviceAccount"),
                         absl::StrCat("expected <namespace>/<name> of a ServiceAccount (lowercase "
                                      "DNS names, e.g. gpu-tenancy-system/gpu-tenancy-node-agent)"
                                      ", got \"",
                                      account, "\""));
    }
    agent.service_account_namespace = std::string(parts[0]);
    agent.service_account_name = std::string(parts[1]);
  }
  return f.NoUnknownKeys();
}

// admission: the allow-list (topology::AdmissionAllowList); an absent key keeps its default.
absl::Status LoadAdmission(Fields& f, topology::AdmissionAllowList& admission) {
  if (f.Get("schedulerUsers")) {
    ASSIGN_OR_RETURN(admission.scheduler_users, f.Strings("schedulerUsers"));
  }
  ASSIGN_OR_RETURN(std::optional<Fields> classes, f.Object("deviceClasses"));
  if (classes) {
    if (classes->Get("gpu")) {
      ASSIGN_OR_RETURN(admission.gpu_device_classes, classes->Strings("gpu"));
    }
    if (classes->Get("other")) {
      ASSIGN_OR_RETURN(admission.other_device_classes, classes->Strings("other"));
    }
    RETURN_IF_ERROR(classes->NoUnknownKeys());
  }
  ASSIGN_OR_RETURN(admission.other_resources, f.Strings("otherResources"));
  ASSIGN_OR_RETURN(std::string scheduler_name, f.String("schedulerName", false));
  if (!scheduler_name.empty()) admission.scheduler_name = scheduler_name;
  ASSIGN_OR_RETURN(admission.set_scheduler_name, f.Bool("setSchedulerName", false));
  return f.NoUnknownKeys();
}

// guard: {actions: {<rule>: report | evict}, dryRun, evictionsPerMinute}.
absl::Status LoadGuard(Fields& f, topology::GuardPolicy& guard) {
  ASSIGN_OR_RETURN(std::optional<Fields> actions, f.Object("actions"));
  if (actions) {
    const JsonValue* map = f.Get("actions");
    for (auto it = map->MemberBegin(); it != map->MemberEnd(); ++it) {
      const absl::string_view rule = AsStringView(it->name);
      const absl::string_view action = it->value.IsString() ? AsStringView(it->value) : "";
      if (action != "report" && action != "evict") {
        return Fields::Bad(actions->Path(rule), "must be report or evict");
      }
      guard.actions[std::string(rule)] =
          action == "evict" ? topology::GuardAction::kEvict : topology::GuardAction::kReport;
    }
  }
  ASSIGN_OR_RETURN(guard.dry_run, f.Bool("dryRun", false));
  ASSIGN_OR_RETURN(std::optional<int64_t> rate, f.Int("evictionsPerMinute", false));
  if (rate) {
    if (*rate < 1) return Fields::Bad(f.Path("evictionsPerMinute"), "must be at least 1");
    guard.evictions_per_minute = *rate;
  }
  return f.NoUnknownKeys();
}

}  // namespace

absl::StatusOr<Catalog> LoadCatalog(absl::string_view yaml_text) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, YamlToJson(yaml_text));
  ASSIGN_OR_RETURN(Fields root, Root(doc, "catalog"));
  ASSIGN_OR_RETURN(std::optional<int64_t> version, root.Int("version", true));
  if (*version != 1) return absl::InvalidArgumentError("catalog version must be 1");
  std::vector<GpuModel> models;
  RETURN_IF_ERROR(root.List("models", /*required=*/false, [&](Fields& m) -> absl::Status {
    GpuModel model;
    ASSIGN_OR_RETURN(model.model, m.String("model", true));
    ASSIGN_OR_RETURN(model.product_labels, m.Strings("productLabels"));
    ASSIGN_OR_RETURN(model.total_memory_mib, m.Int("totalMemoryMiB", false));
    ASSIGN_OR_RETURN(std::optional<int64_t> compute, m.Int("computeSlices", true));
    ASSIGN_OR_RETURN(std::optional<int64_t> memory, m.Int("memorySlices", true));
    ASSIGN_OR_RETURN(std::optional<int64_t> max_instances, m.Int("maxInstances", true));
    model.compute_slices = static_cast<int>(*compute);
    model.memory_slices = static_cast<int>(*memory);
    model.max_instances = static_cast<int>(*max_instances);
    RETURN_IF_ERROR(m.List("profiles", /*required=*/false, [&](Fields& p) -> absl::Status {
      MigProfile profile;
      ASSIGN_OR_RETURN(profile.name, p.String("name", true));
      ASSIGN_OR_RETURN(std::optional<int64_t> id, p.Int("id", false));
      if (id) profile.id = static_cast<int>(*id);
      ASSIGN_OR_RETURN(profile.memory_mib, p.Int("memoryMiB", false));
      ASSIGN_OR_RETURN(std::optional<int64_t> sms, p.Int("sms", false));
      if (sms) profile.sm_count = static_cast<int>(*sms);
      ASSIGN_OR_RETURN(std::optional<int64_t> pc, p.Int("computeSlices", true));
      ASSIGN_OR_RETURN(std::optional<int64_t> pm, p.Int("memorySlices", true));
      ASSIGN_OR_RETURN(std::optional<int64_t> max, p.Int("maxCount", true));
      profile.compute_slices = static_cast<int>(*pc);
      profile.memory_slices = static_cast<int>(*pm);
      profile.max_count = static_cast<int>(*max);
      ASSIGN_OR_RETURN(profile.placements, p.Ints("placements"));
      model.profiles.push_back(std::move(profile));
      return absl::OkStatus();
    }));
    RETURN_IF_ERROR(m.List("allBalanced", /*required=*/false, [&](Fields& b) -> absl::Status {
      ASSIGN_OR_RETURN(std::string profile, b.String("profile", true));
      ASSIGN_OR_RETURN(std::optional<int64_t> count, b.IntInRange("count", 1, 7));
      if (!count) return Fields::Bad(b.Path("count"), "missing");
      model.all_balanced.emplace_back(std::move(profile), static_cast<int>(*count));
      return absl::OkStatus();
    }));
    models.push_back(std::move(model));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(root.NoUnknownKeys());
  Catalog catalog(std::move(models));
  RETURN_IF_ERROR(catalog.Validate());
  return catalog;
}

const Catalog& BuiltinCatalog() {
  static const Catalog* const catalog = [] {
    absl::StatusOr<Catalog> loaded = LoadCatalog(EmbeddedMigCatalog());
    if (!loaded.ok()) {
      std::fprintf(stderr, "built-in MIG catalog is broken: %s\n",
                   std::string(loaded.status().message()).c_str());
      std::abort();
    }
    return new Catalog(*std::move(loaded));
  }();
  return *catalog;
}

absl::StatusOr<Policy> LoadPolicy(absl::string_view yaml_text) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, YamlToJson(yaml_text));
  ASSIGN_OR_RETURN(Fields root, Root(doc, "policy"));
  Policy policy;
  RETURN_IF_ERROR(root.List("tiers", /*required=*/false, [&](Fields& f) -> absl::Status {
    topology::Tier tier;
    ASSIGN_OR_RETURN(tier.name, f.String("name", true));
    ASSIGN_OR_RETURN(std::vector<std::string> modes, f.Strings("modes"));
    for (const std::string& m : modes) {
      std::optional<topology::SharingMode> mode = topology::ParseMode(m);
      if (!mode) {
        return absl::InvalidArgumentError(
            absl::StrCat(f.Path("modes"), ": unknown mode \"", m,
                         "\" (use exclusive, mig, mig-shared, mps, timeslice)"));
      }
      tier.modes.Add(*mode);
    }
    ASSIGN_OR_RETURN(tier.device_access, f.Bool("deviceAccess", false));
    ASSIGN_OR_RETURN(std::string unknown_demand, f.String("unknownDemand", false));
    if (unknown_demand == "deny" || unknown_demand == "warn") {
      tier.deny_unknown_demand = unknown_demand == "deny";
    } else if (!unknown_demand.empty()) {
      return Fields::Bad(f.Path("unknownDemand"),
                         absl::StrCat("must be deny or warn, got \"", unknown_demand, "\""));
    }
    policy.tiers.push_back(std::move(tier));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(root.List("tenants", /*required=*/false, [&](Fields& f) -> absl::Status {
    topology::Tenant tenant;
    ASSIGN_OR_RETURN(tenant.name, f.String("name", true));
    ASSIGN_OR_RETURN(tenant.tier, f.String("tier", true));
    ASSIGN_OR_RETURN(tenant.namespaces, f.Strings("namespaces"));
    ASSIGN_OR_RETURN(std::optional<Fields> selector, f.Object("namespaceSelector"));
    if (selector) {
      ASSIGN_OR_RETURN(std::optional<Fields> match, selector->Object("matchLabels"));
      if (match) {
        const JsonValue* labels = selector->Get("matchLabels");
        for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
          if (!it->value.IsString()) {
            return absl::InvalidArgumentError(match->Path(AsStringView(it->name)) +
                                              ": expected a string");
          }
          tenant.namespace_selector.emplace(AsStringView(it->name), AsStringView(it->value));
        }
      }
      RETURN_IF_ERROR(selector->NoUnknownKeys());
    }
    ASSIGN_OR_RETURN(std::optional<Fields> limits, f.Object("limits"));
    if (limits) {
      topology::TenantLimits& l = tenant.limits;
      ASSIGN_OR_RETURN(l.gpu_memory_mib_per_pod, limits->MemoryMiB("gpuMemoryPerPod"));
      ASSIGN_OR_RETURN(l.mig_profiles, limits->Strings("migProfiles"));
      ASSIGN_OR_RETURN(l.shared_replicas_per_pod, limits->Int("sharedReplicasPerPod", false));
      ASSIGN_OR_RETURN(std::optional<Fields> mps, limits->Object("mps"));
      if (mps) {
        ASSIGN_OR_RETURN(std::optional<int64_t> pct, mps->Int("maxActiveThreadPercentage", false));
        if (pct) {
          if (*pct < 1 || *pct > 100) {
            return absl::InvalidArgumentError(mps->Path("maxActiveThreadPercentage") +
                                              ": must be 1..100");
          }
          l.mps.max_active_thread_percentage = static_cast<int>(*pct);
        }
        ASSIGN_OR_RETURN(l.mps.max_pinned_memory_mib, mps->MemoryMiB("maxPinnedMemory"));
        RETURN_IF_ERROR(mps->NoUnknownKeys());
      }
      RETURN_IF_ERROR(limits->NoUnknownKeys());
    }
    ASSIGN_OR_RETURN(std::optional<Fields> quota, f.Object("quota"));
    if (quota) RETURN_IF_ERROR(LoadQuota(*quota, tenant.quota));
    RETURN_IF_ERROR(LoadTenantFairShare(f, tenant));
    ASSIGN_OR_RETURN(tenant.priority_classes, f.Strings("priorityClasses"));
    policy.tenants.push_back(std::move(tenant));
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(std::string unknown, root.String("unknownTenant", false));
  if (!unknown.empty() && unknown != "deny") policy.unknown_tenant_tier = unknown;
  ASSIGN_OR_RETURN(std::string pool_label, root.String("poolLabel", false));
  if (!pool_label.empty()) policy.pool_label = pool_label;
  RETURN_IF_ERROR(root.List("pools", /*required=*/false, [&](Fields& f) -> absl::Status {
    topology::Pool pool;
    ASSIGN_OR_RETURN(pool.name, f.String("name", true));
    ASSIGN_OR_RETURN(std::string mode, f.String("mode", true));
    std::optional<topology::SharingMode> parsed = topology::ParseMode(mode);
    if (!parsed)
      return absl::InvalidArgumentError(f.Path("mode") + ": unknown mode \"" + mode + "\"");
    pool.mode = *parsed;
    ASSIGN_OR_RETURN(std::optional<Fields> taint, f.Object("taint"));
    if (taint) {
      topology::Taint t;
      ASSIGN_OR_RETURN(t.key, taint->String("key", true));
      ASSIGN_OR_RETURN(t.value, taint->String("value", false));
      ASSIGN_OR_RETURN(t.effect, taint->String("effect", true));
      RETURN_IF_ERROR(taint->NoUnknownKeys());
      pool.taint = std::move(t);
    }
    policy.pools.push_back(std::move(pool));
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(policy.shared_resources, root.Strings("sharedResources"));
  if (root.Get("memoryResources")) {
    ASSIGN_OR_RETURN(policy.memory_resources, root.Strings("memoryResources"));
  }
  ASSIGN_OR_RETURN(std::string annotation, root.String("memoryAnnotation", false));
  if (!annotation.empty()) policy.memory_annotation = annotation;
  ASSIGN_OR_RETURN(policy.fail_requests_greater_than_one,
                   root.Bool("failRequestsGreaterThanOne", true));
  ASSIGN_OR_RETURN(std::string scoring, root.String("scoring", false));
  if (scoring == "spread") {
    policy.scoring = topology::ScoringStrategy::kSpread;
  } else if (!scoring.empty() && scoring != "binpack") {
    return absl::InvalidArgumentError("scoring: must be binpack or spread, got \"" + scoring +
                                      "\"");
  }
  ASSIGN_OR_RETURN(std::string enforcement, root.String("quotaEnforcement", false));
  if (enforcement == "admission") {
    policy.quota_enforcement = topology::QuotaEnforcement::kAdmission;
  } else if (!enforcement.empty() && enforcement != "scheduling") {
    return absl::InvalidArgumentError("quotaEnforcement: must be scheduling or admission, got \"" +
                                      enforcement + "\"");
  }
  ASSIGN_OR_RETURN(std::optional<Fields> canary, root.Object("canary"));
  if (canary) {
    topology::Canary c;
    ASSIGN_OR_RETURN(c.mig_profile, canary->String("migProfile", true));
    ASSIGN_OR_RETURN(std::optional<int64_t> reserve, canary->Int("reserve", true));
    c.reserve = *reserve;
    ASSIGN_OR_RETURN(std::string label, canary->String("podLabel", false));
    if (!label.empty()) c.pod_label = label;
    RETURN_IF_ERROR(canary->NoUnknownKeys());
    policy.canary = std::move(c);
  }
  ASSIGN_OR_RETURN(std::optional<Fields> preemption, root.Object("preemption"));
  if (preemption) RETURN_IF_ERROR(LoadPreemption(*preemption, policy.preemption));
  ASSIGN_OR_RETURN(std::optional<Fields> node_agent, root.Object("nodeAgent"));
  if (node_agent) RETURN_IF_ERROR(LoadNodeAgent(*node_agent, policy.node_agent));
  ASSIGN_OR_RETURN(std::optional<Fields> admission, root.Object("admission"));
  if (admission) RETURN_IF_ERROR(LoadAdmission(*admission, policy.admission));
  ASSIGN_OR_RETURN(std::optional<Fields> guard, root.Object("guard"));
  if (guard) RETURN_IF_ERROR(LoadGuard(*guard, policy.guard));
  RETURN_IF_ERROR(LoadFairSharing(root, policy));
  RETURN_IF_ERROR(root.NoUnknownKeys());
  RETURN_IF_ERROR(policy.Validate());
  return policy;
}

}  // namespace common
