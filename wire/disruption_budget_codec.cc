#include "wire/disruption_budget_codec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "wire/k8s_codec.h"

namespace wire {

using common::AsStringView;
using common::FindNonNull;
using common::IndexPath;
using common::JoinPath;
using common::JsonValue;
using common::OptionalArray;
using common::OptionalObject;
using common::RequireObject;
using common::RequireString;
namespace {

using topology::LabelRequirement;

absl::StatusOr<LabelRequirement::Op> ParseOperator(absl::string_view op, absl::string_view path) {
  if (op == "In") return LabelRequirement::Op::kIn;
  if (op == "NotIn") return LabelRequirement::Op::kNotIn;
  if (op == "Exists") return LabelRequirement::Op::kExists;
  if (op == "DoesNotExist") return LabelRequirement::Op::kDoesNotExist;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unknown operator \"", op, "\" (use In, NotIn, Exists, DoesNotExist)"));
}

absl::StatusOr<topology::LabelSelector> ParseSelector(const JsonValue& selector,
                                                      absl::string_view path) {
  topology::LabelSelector out;
  if (const JsonValue* labels = FindNonNull(selector, "matchLabels")) {
    ASSIGN_OR_RETURN(out.match_labels, ParseStringMap(*labels, JoinPath(path, "matchLabels")));
  }
  std::string exprs_path = JoinPath(path, "matchExpressions");
  ASSIGN_OR_RETURN(const JsonValue* exprs, OptionalArray(selector, "matchExpressions", path));
  if (!exprs) return out;
  for (rapidjson::SizeType i = 0; i < exprs->Size(); ++i) {
    const JsonValue& e = (*exprs)[i];
    std::string e_path = IndexPath(exprs_path, i);
    if (!e.IsObject()) return absl::InvalidArgumentError(e_path + ": expected an object");
    LabelRequirement r;
    ASSIGN_OR_RETURN(absl::string_view key, RequireString(e, "key", e_path));
    ASSIGN_OR_RETURN(absl::string_view op, RequireString(e, "operator", e_path));
    r.key = std::string(key);
    ASSIGN_OR_RETURN(r.op, ParseOperator(op, JoinPath(e_path, "operator")));
    ASSIGN_OR_RETURN(const JsonValue* values, OptionalArray(e, "values", e_path));
    if (values) {
      for (const JsonValue& v : values->GetArray()) {
        if (!v.IsString())
          return absl::InvalidArgumentError(JoinPath(e_path, "values") + ": expected strings");
        r.values.emplace_back(AsStringView(v));
      }
    }
    const bool set_op = r.op == LabelRequirement::Op::kIn || r.op == LabelRequirement::Op::kNotIn;
    if (set_op == r.values.empty()) {
      return absl::InvalidArgumentError(
          JoinPath(e_path, "values") +
          (set_op ? ": must not be empty for In and NotIn" : ": must be empty for Exists"));
    }
    out.match_expressions.push_back(std::move(r));
  }
  return out;
}

}  // namespace

absl::StatusOr<topology::DisruptionBudget> ParseDisruptionBudget(const JsonValue& object,
                                                                 absl::string_view path) {
  if (!object.IsObject())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected object"));
  topology::DisruptionBudget out;
  ASSIGN_OR_RETURN(const JsonValue* meta, RequireObject(object, "metadata", path));
  std::string meta_path = JoinPath(path, "metadata");
  ASSIGN_OR_RETURN(absl::string_view name, RequireString(*meta, "name", meta_path));
  ASSIGN_OR_RETURN(absl::string_view ns, RequireString(*meta, "namespace", meta_path));
  out.name = std::string(name);
  out.namespace_name = std::string(ns);
  ASSIGN_OR_RETURN(const JsonValue* spec, OptionalObject(object, "spec", path));
  if (spec) {
    ASSIGN_OR_RETURN(const JsonValue* selector,
                     OptionalObject(*spec, "selector", JoinPath(path, "spec")));
    if (selector) {
      ASSIGN_OR_RETURN(out.selector, ParseSelector(*selector, JoinPath(path, "spec.selector")));
    }
  }
  ASSIGN_OR_RETURN(const JsonValue* status, OptionalObject(object, "status", path));
  if (status) {
    std::string status_path = JoinPath(path, "status");
    if (const JsonValue* allowed = FindNonNull(*status, "disruptionsAllowed")) {
      if (!allowed->IsInt()) {
        return absl::InvalidArgumentError(JoinPath(status_path, "disruptionsAllowed") +
                                          ": expected an integer");
      }
      out.disruptions_allowed = allowed->GetInt();
    }
    ASSIGN_OR_RETURN(const JsonValue* disrupted,
                     OptionalObject(*status, "disruptedPods", status_path));
    if (disrupted) {
      for (auto it = disrupted->MemberBegin(); it != disrupted->MemberEnd(); ++it) {
        out.disrupted_pods.emplace(AsStringView(it->name));
      }
    }
  }
  return out;
}

}  // namespace wire
