#include "bench/soak_checks.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/json.h"

namespace soak {

std::string CheckFilter(const rapidjson::Document& doc, const std::vector<std::string>& names,
                        FilterView* out) {
  if (!doc.IsObject()) return "filter reply is not an object";
  if (std::string err(common::StringOr(doc, "Error")); !err.empty())
    return absl::StrCat("Error: ", err);
  FilterView v;
  if (const common::JsonValue* kept = common::FindNonNull(doc, "NodeNames")) {
    if (!kept->IsArray()) return "NodeNames is not an array";
    for (const auto& n : kept->GetArray()) {
      if (!n.IsString()) return "NodeNames has a non-string";
      v.kept.emplace_back(n.GetString(), n.GetStringLength());
    }
  }
  const common::JsonValue* failed = common::FindNonNull(doc, "FailedNodes");
  if (!failed || !failed->IsObject()) return "no FailedNodes object";
  for (const auto& m : failed->GetObject()) {
    if (!m.value.IsString() || m.value.GetStringLength() == 0)
      return "a failed node without a reason";
    v.failed.emplace_back(m.name.GetString(), m.name.GetStringLength());
  }
  if (const common::JsonValue* unres = common::FindNonNull(doc, "FailedAndUnresolvableNodes")) {
    if (!unres->IsObject()) return "FailedAndUnresolvableNodes is not an object";
    for (const auto& m : unres->GetObject())
      v.failed.emplace_back(m.name.GetString(), m.name.GetStringLength());
  }
  std::vector<std::string> all = v.kept;
  all.insert(all.end(), v.failed.begin(), v.failed.end());
  std::sort(all.begin(), all.end());
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  if (all != want) {
    return absl::StrCat("kept + failed nodes (", all.size(), ") are not the candidates (",
                        want.size(), ")");
  }
  *out = std::move(v);
  return "";
}

std::string CheckPrioritize(const rapidjson::Document& doc, const std::vector<std::string>& names,
                            std::string* best) {
  if (!doc.IsArray()) return "prioritize reply is not an array";
  if (doc.Size() != names.size())
    return absl::StrCat(doc.Size(), " scores for ", names.size(), " nodes");
  int64_t top = -1;
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    const auto& e = doc[i];
    if (!e.IsObject()) return "a score is not an object";
    if (common::StringOr(e, "Host") != names[i])
      return absl::StrCat("score ", i, " is not for ", names[i]);
    const common::JsonValue* s = common::FindMember(e, "Score");
    if (!s || !s->IsInt64() || s->GetInt64() < 0 || s->GetInt64() > 10)
      return "a Score is missing or out of 0..10";
    if (s->GetInt64() > top) {
      top = s->GetInt64();
      if (best) *best = names[i];
    }
  }
  return "";
}

std::string CheckReview(const rapidjson::Document& doc, const std::string& uid, bool allowed,
                        bool patched) {
  const common::JsonValue* resp = doc.IsObject() ? common::FindMember(doc, "response") : nullptr;
  if (!resp || !resp->IsObject()) return "review has no response";
  if (common::StringOr(*resp, "uid") != uid) return "response.uid is not the request's uid";
  const common::JsonValue* a = common::FindMember(*resp, "allowed");
  if (!a || !a->IsBool()) return "no response.allowed";
  if (a->GetBool() != allowed)
    return absl::StrCat("allowed is ", a->GetBool(), ", expected ", allowed);
  if (!allowed) {
    const common::JsonValue* status = common::FindMember(*resp, "status");
    if (!status || !status->IsObject() || common::StringOr(*status, "message").empty())
      return "a denial without a message";
  }
  bool has_patch = !common::StringOr(*resp, "patch").empty();
  if (has_patch != patched)
    return absl::StrCat("patch present: ", has_patch, ", expected ", patched);
  if (has_patch && common::StringOr(*resp, "patchType") != "JSONPatch")
    return "patch without patchType JSONPatch";
  return "";
}

}  // namespace soak
