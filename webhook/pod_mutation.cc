#include "webhook/pod_mutation.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/json.h"

namespace webhook {
namespace {

using common::FindNonNull;
using common::JsonValue;
using common::StringOr;

using Alloc = rapidjson::Document::AllocatorType;

using common::JsonString;

rapidjson::Value PoolExpression(const topology::Policy& policy,
                                const std::vector<std::string>& pools, Alloc& alloc) {
  rapidjson::Value values(rapidjson::kArrayType);
  for (const std::string& p : pools) values.PushBack(JsonString(p, alloc), alloc);
  rapidjson::Value expr(rapidjson::kObjectType);
  expr.AddMember("key", JsonString(policy.pool_label, alloc), alloc);
  expr.AddMember("operator", "In", alloc);
  expr.AddMember("values", values, alloc);
  return expr;
}

// True when `expressions` already holds our expression (same key, In, same set of values).
bool HasPoolExpression(const JsonValue& expressions, const topology::Policy& policy,
                       const std::vector<std::string>& pools) {
  const std::set<std::string> want(pools.begin(), pools.end());
  for (const JsonValue& e : expressions.GetArray()) {
    if (StringOr(e, "key") != policy.pool_label || StringOr(e, "operator") != "In") continue;
    const JsonValue* values = FindNonNull(e, "values");
    if (!values || !values->IsArray()) continue;
    std::set<std::string> have;
    for (const JsonValue& v : values->GetArray()) have.emplace(common::AsStringView(v));
    if (have == want) return true;
  }
  return false;
}

void EnsureAffinity(const JsonValue& spec, const topology::Policy& policy,
                    const std::vector<std::string>& pools, JsonPatch& patch,
                    std::vector<std::string>& changed) {
  Alloc& alloc = patch.allocator();
  const size_t before = patch.size();
  auto term = [&]() {
    rapidjson::Value exprs(rapidjson::kArrayType);
    exprs.PushBack(PoolExpression(policy, pools, alloc), alloc);
    rapidjson::Value t(rapidjson::kObjectType);
    t.AddMember("matchExpressions", exprs, alloc);
    return t;
  };
  auto selector = [&]() {
    rapidjson::Value terms(rapidjson::kArrayType);
    terms.PushBack(term(), alloc);
    rapidjson::Value s(rapidjson::kObjectType);
    s.AddMember("nodeSelectorTerms", terms, alloc);
    return s;
  };
  const std::string affinity_path = "/spec/affinity";
  const std::string node_path = affinity_path + "/nodeAffinity";
  const std::string required_path = node_path + "/requiredDuringSchedulingIgnoredDuringExecution";
  const std::string terms_path = required_path + "/nodeSelectorTerms";

  const JsonValue* affinity = FindNonNull(spec, "affinity");
  const JsonValue* node =
      affinity && affinity->IsObject() ? FindNonNull(*affinity, "nodeAffinity") : nullptr;
  const JsonValue* required =
      node && node->IsObject()
          ? FindNonNull(*node, "requiredDuringSchedulingIgnoredDuringExecution")
          : nullptr;
  const JsonValue* terms =
      required && required->IsObject() ? FindNonNull(*required, "nodeSelectorTerms") : nullptr;
  if (!affinity || !affinity->IsObject()) {
    rapidjson::Value n(rapidjson::kObjectType);
    n.AddMember("requiredDuringSchedulingIgnoredDuringExecution", selector(), alloc);
    rapidjson::Value a(rapidjson::kObjectType);
    a.AddMember("nodeAffinity", n, alloc);
    patch.Add(affinity_path, a);
  } else if (!node || !node->IsObject()) {
    rapidjson::Value n(rapidjson::kObjectType);
    n.AddMember("requiredDuringSchedulingIgnoredDuringExecution", selector(), alloc);
    patch.Add(node_path, n);
  } else if (!required || !required->IsObject()) {
    patch.Add(required_path, selector());
  } else if (!terms || !terms->IsArray()) {
    rapidjson::Value list(rapidjson::kArrayType);
    list.PushBack(term(), alloc);
    patch.Add(terms_path, list);
  } else if (terms->Empty()) {
    patch.Add(terms_path + "/-", term());
  } else {
    // Terms are ORed: the pool requirement must be ANDed into each one.
    for (rapidjson::SizeType i = 0; i < terms->Size(); ++i) {
      const JsonValue& t = (*terms)[i];
      // Not a term (a string, a number): the API server cannot decode it, so it never selects
      // a node, and a patch path through it could not apply (found by fuzz/pod_mutation_fuzz).
      if (!t.IsObject()) continue;
      const std::string term_path = PointerJoin(terms_path, i);
      const JsonValue* exprs = FindNonNull(t, "matchExpressions");
      if (!exprs || !exprs->IsArray()) {
        rapidjson::Value list(rapidjson::kArrayType);
        list.PushBack(PoolExpression(policy, pools, alloc), alloc);
        patch.Add(term_path + "/matchExpressions", list);
      } else if (!HasPoolExpression(*exprs, policy, pools)) {
        patch.Add(term_path + "/matchExpressions/-", PoolExpression(policy, pools, alloc));
      }
    }
  }
  if (patch.size() != before) changed.push_back("affinity");
}

// Kubernetes' ToleratesTaint.
bool Tolerates(const JsonValue& toleration, const topology::Taint& taint) {
  if (!toleration.IsObject()) return false;
  absl::string_view effect = StringOr(toleration, "effect");
  if (!effect.empty() && effect != taint.effect) return false;
  absl::string_view key = StringOr(toleration, "key");
  absl::string_view op = StringOr(toleration, "operator", "Equal");
  if (op.empty()) op = "Equal";
  if (key.empty()) return op == "Exists";
  if (key != taint.key) return false;
  if (op == "Exists") return true;
  return op == "Equal" && StringOr(toleration, "value") == taint.value;
}

void EnsureTolerations(const JsonValue& spec, const topology::Policy& policy,
                       const std::vector<std::string>& pools, JsonPatch& patch,
                       std::vector<std::string>& changed) {
  Alloc& alloc = patch.allocator();
  const JsonValue* existing = FindNonNull(spec, "tolerations");
  if (existing && !existing->IsArray()) existing = nullptr;
  std::vector<const topology::Taint*> needed;
  for (const std::string& name : pools) {
    const topology::Pool* pool = policy.FindPool(name);
    if (!pool || !pool->taint) continue;
    const topology::Taint& taint = *pool->taint;
    bool tolerated = false;
    if (existing) {
      for (const JsonValue& t : existing->GetArray()) tolerated = tolerated || Tolerates(t, taint);
    }
    for (const topology::Taint* n : needed) {
      tolerated = tolerated ||
                  (n->key == taint.key && n->value == taint.value && n->effect == taint.effect);
    }
    if (!tolerated) needed.push_back(&taint);
  }
  if (needed.empty()) return;
  auto toleration = [&](const topology::Taint& taint) {
    rapidjson::Value t(rapidjson::kObjectType);
    t.AddMember("key", JsonString(taint.key, alloc), alloc);
    if (taint.value.empty()) {
      t.AddMember("operator", "Exists", alloc);
    } else {
      t.AddMember("operator", "Equal", alloc);
      t.AddMember("value", JsonString(taint.value, alloc), alloc);
    }
    if (!taint.effect.empty()) t.AddMember("effect", JsonString(taint.effect, alloc), alloc);
    return t;
  };
  if (!existing) {
    rapidjson::Value list(rapidjson::kArrayType);
    for (const topology::Taint* taint : needed) list.PushBack(toleration(*taint), alloc);
    patch.Add("/spec/tolerations", list);
  } else {
    for (const topology::Taint* taint : needed)
      patch.Add("/spec/tolerations/-", toleration(*taint));
  }
  changed.push_back("tolerations");
}

}  // namespace

std::vector<std::string> AllowedPools(const topology::Policy& policy, const topology::Tier& tier) {
  std::vector<std::string> out;
  for (const topology::Pool& p : policy.pools) {
    if (tier.modes.Has(p.mode)) out.push_back(p.name);
  }
  return out;
}

void MutatePod(const JsonValue& pod, const PodView& view, const topology::Policy& policy,
               const topology::TenantRef& tenant, bool update, JsonPatch& patch,
               std::vector<std::string>& changed) {
  // A pod without GPUs is not ours to label: the webhook's matchConditions keep such pods
  // from reaching it at all, and the reply must not depend on whether they did.
  if (!tenant.tier || !view.HasGpuRequests()) return;
  const JsonValue* metadata = FindNonNull(pod, "metadata");
  const JsonValue* spec = FindNonNull(pod, "spec");
  if (!metadata || !metadata->IsObject() || !spec || !spec->IsObject()) return;

  size_t before = patch.size();
  EnsureMapEntries(*metadata, "/metadata", "labels",
                   {{std::string(topology::kTenantLabel), tenant.name},
                    {std::string(topology::kTierLabel), tenant.tier->name}},
                   patch);
  if (patch.size() != before) changed.push_back("labels");

  // An unreadable annotation is left alone for the validating webhook to refuse.
  if (view.demand.ok() && view.demand->memory_mib > 0) {
    before = patch.size();
    EnsureMapEntries(*metadata, "/metadata", "annotations",
                     {{policy.memory_annotation, absl::StrCat(view.demand->memory_mib, "Mi")}},
                     patch);
    if (patch.size() != before) changed.push_back("gpu-memory");
  }

  // The second-scheduler layout: a GPU pod naming another scheduler would be placed without
  // the extender. A preset node needs no scheduler (preset-node judges it).
  const topology::AdmissionAllowList& admission = policy.admission;
  if (!update && admission.set_scheduler_name && view.facts.node_name.empty() &&
      SchedulerOf(view.facts) != admission.scheduler_name) {
    if (FindNonNull(*spec, "schedulerName")) {
      patch.Replace("/spec/schedulerName", admission.scheduler_name);
    } else {
      patch.Add("/spec/schedulerName", admission.scheduler_name);
    }
    changed.push_back("scheduler-name");
  }

  if (update || !view.demand.ok() || (view.demand->empty() && view.gpu_claims.empty())) return;
  std::vector<std::string> pools = AllowedPools(policy, *tenant.tier);
  // An `In` with no values is invalid; with no allowed pool the extender's gate alone decides.
  if (pools.empty()) return;
  EnsureAffinity(*spec, policy, pools, patch, changed);
  EnsureTolerations(*spec, policy, pools, patch, changed);
}

}  // namespace webhook
