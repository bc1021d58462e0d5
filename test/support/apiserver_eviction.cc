// Test support, part of the kube-apiserver emulation: the pods/eviction subresource (see
// apiserver_eviction.h).
#include "test/support/apiserver_eviction.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "test/support/apiserver_objects.h"

namespace testing_support::apiserver {
namespace {

bool SelectsPod(const Value& pdb, const Value& pod) {
  const Value* spec = common::FindMember(pdb, "spec");
  const Value* selector = spec == nullptr ? nullptr : common::FindMember(*spec, "selector");
  const Value* match = selector == nullptr ? nullptr : common::FindMember(*selector, "matchLabels");
  if (match == nullptr || !match->IsObject() || match->MemberCount() == 0) return false;
  const Value* meta = common::FindMember(pod, "metadata");
  const Value* labels = meta == nullptr ? nullptr : common::FindMember(*meta, "labels");
  if (labels == nullptr) return false;
  for (auto it = match->MemberBegin(); it != match->MemberEnd(); ++it) {
    if (common::StringOr(*labels, common::AsStringView(it->name)) !=
        common::AsStringView(it->value)) {
      return false;
    }
  }
  return true;
}

bool RunningAndReady(const Value& pod) {
  if (FieldValue(pod, "status.phase") != "Running") return false;
  const Value* status = common::FindMember(pod, "status");
  const Value* conds = status == nullptr ? nullptr : common::FindMember(*status, "conditions");
  if (conds == nullptr || !conds->IsArray()) return false;
  for (const Value& c : conds->GetArray()) {
    if (StringAt(c, "type") == "Ready") return StringAt(c, "status") == "True";
  }
  return false;
}

}  // namespace

Reply Evict(ObjectStore& store, absl::string_view ns, absl::string_view name,
            absl::string_view body) {
  const ResourceInfo& pods = Info(Resource::kPods);
  absl::StatusOr<rapidjson::Document> eviction = common::ParseJson(body);
  if (!eviction.ok()) return BadRequest(eviction.status().message());
  if (MetaString(*eviction, "name") != name) {
    return BadRequest("name in URL does not match name in Eviction object");
  }
  const std::string* cur = store.Current(Resource::kPods, KeyFor(pods, ns, name));
  if (cur == nullptr) return NotFound(pods, name);
  rapidjson::Document pod;
  pod.Parse(cur->c_str(), cur->size());

  if (FieldValue(pod, "status.phase") == "Running") {
    std::vector<std::string> budgets;
    store.ForEachCurrent(Resource::kPodDisruptionBudgets, absl::StrCat(ns, "/"),
                         [&](const std::string& json) {
                           rapidjson::Document pdb;
                           pdb.Parse(json.c_str(), json.size());
                           if (SelectsPod(pdb, pod)) budgets.push_back(json);
                         });
    if (budgets.size() > 1) {
      return StatusReply(500, "InternalError",
                         "This pod has more than one PodDisruptionBudget, which the eviction "
                         "subresource does not support.",
                         nullptr);
    }
    if (budgets.size() == 1) {
      rapidjson::Document pdb;
      pdb.Parse(budgets[0].c_str(), budgets[0].size());
      Alloc& a = pdb.GetAllocator();
      std::string pdb_name = MetaString(pdb, "name");
      Value& status = EnsureObject(pdb, "status", a);
      const Value* allowed_v = common::FindMember(status, "disruptionsAllowed");
      int64_t healthy = 0;
      store.ForEachCurrent(Resource::kPods, absl::StrCat(ns, "/"), [&](const std::string& json) {
        rapidjson::Document other;
        other.Parse(json.c_str(), json.size());
        if (SelectsPod(pdb, other) && RunningAndReady(other)) ++healthy;
      });
      int64_t min_available = 0;
      if (const Value* spec = common::FindMember(pdb, "spec")) {
        const Value* m = common::FindMember(*spec, "minAvailable");
        if (m != nullptr && m->IsInt64()) min_available = m->GetInt64();
      }
      int64_t allowed = allowed_v != nullptr && allowed_v->IsInt64() ? allowed_v->GetInt64()
                                                                     : healthy - min_available;
      if (allowed <= 0) {
        Details d;
        d.cause_reason = "DisruptionBudget";
        d.cause_message = absl::StrCat("The disruption budget ", pdb_name, " needs ",
                                       min_available > 0 ? min_available : healthy,
                                       " healthy pods and has ", healthy, " currently");
        return StatusReply(429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.", &d);
      }
      SetMember(status, "disruptionsAllowed", Value(static_cast<int64_t>(allowed - 1)), a);
      std::string key = KeyFor(Info(Resource::kPodDisruptionBudgets), ns, pdb_name);
      store.Commit(Resource::kPodDisruptionBudgets, key, "MODIFIED", pdb, "policy/v1", &budgets[0]);
    }
  }
  Reply deleted = store.Delete(Resource::kPods, ns, name, true);
  if (deleted.code >= 300) return deleted;
  return StatusReply(201, "", "", nullptr);
}

}  // namespace testing_support::apiserver
