// Test support, part of the kube-apiserver emulation: labelSelector and fieldSelector parsing and
// matching (see apiserver_selectors.h).
#include "test/support/apiserver_selectors.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "test/support/apiserver_objects.h"

namespace testing_support::apiserver {
namespace {

std::vector<std::string> SplitTopLevel(absl::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ParseSetValues(absl::string_view rest, std::vector<std::string>* values) {
  rest = absl::StripAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, "(") || !absl::ConsumeSuffix(&rest, ")")) return false;
  for (absl::string_view v : absl::StrSplit(rest, ',')) {
    values->push_back(std::string(absl::StripAsciiWhitespace(v)));
  }
  return true;
}

// The fields kube-apiserver indexes for selection (GetAttrs / field label conversion funcs).
bool FieldSupported(Resource r, absl::string_view field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  static const std::map<Resource, std::vector<absl::string_view>> kFields = {
      {Resource::kPods,
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}},
      {Resource::kNodes, {"spec.unschedulable"}},
      {Resource::kNamespaces, {"status.phase"}},
      {Resource::kResourceSlices, {"spec.nodeName", "spec.driver"}},
      {Resource::kEvents,
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
  };
  auto it = kFields.find(r);
  return it != kFields.end() &&
         std::find(it->second.begin(), it->second.end(), field) != it->second.end();
}

}  // namespace

absl::StatusOr<std::vector<Requirement>> ParseLabelSelector(absl::string_view text) {
  std::vector<Requirement> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (const std::string& raw : SplitTopLevel(text)) {
    absl::string_view term = absl::StripAsciiWhitespace(raw);
    Requirement r;
    size_t at;
    if (absl::ConsumePrefix(&term, "!")) {
      r.op = Requirement::kNotExists;
      r.key = std::string(absl::StripAsciiWhitespace(term));
    } else if ((at = term.find(" notin ")) != absl::string_view::npos) {
      r.op = Requirement::kNotIn;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      if (!ParseSetValues(term.substr(at + 7), &r.values)) r.key.clear();
    } else if ((at = term.find(" in ")) != absl::string_view::npos) {
      r.op = Requirement::kIn;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      if (!ParseSetValues(term.substr(at + 4), &r.values)) r.key.clear();
    } else if ((at = term.find("!=")) != absl::string_view::npos) {
      r.op = Requirement::kNotEq;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + 2)))};
    } else if ((at = term.find('=')) != absl::string_view::npos) {
      size_t skip = term.substr(at).size() > 1 && term[at + 1] == '=' ? 2 : 1;
      r.op = Requirement::kEq;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + skip)))};
    } else {
      r.op = Requirement::kExists;
      r.key = std::string(term);
    }
    if (r.key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unable to parse requirement: found '", raw, "'"));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<Requirement>> ParseFieldSelector(Resource resource,
                                                            absl::string_view text) {
  std::vector<Requirement> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (absl::string_view term : absl::StrSplit(text, ',')) {
    Requirement r;
    size_t at;
    size_t skip = 1;
    if ((at = term.find("!=")) != absl::string_view::npos) {
      r.op = Requirement::kNotEq;
      skip = 2;
    } else if ((at = term.find("==")) != absl::string_view::npos) {
      skip = 2;
    } else if ((at = term.find('=')) == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
    r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + skip)))};
    if (!FieldSupported(resource, r.key)) {
      return absl::InvalidArgumentError(absl::StrCat("field label not supported: ", r.key));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<Selector> ParseSelector(Resource resource, absl::string_view label_selector,
                                       absl::string_view field_selector) {
  absl::StatusOr<std::vector<Requirement>> labels = ParseLabelSelector(label_selector);
  if (!labels.ok()) return labels.status();
  absl::StatusOr<std::vector<Requirement>> fields = ParseFieldSelector(resource, field_selector);
  if (!fields.ok()) return fields.status();
  Selector sel;
  sel.labels = *std::move(labels);
  sel.fields = *std::move(fields);
  return sel;
}

bool Matches(const Selector& sel, const Value& obj) {
  const Value* meta = common::FindMember(obj, "metadata");
  const Value* labels = meta == nullptr ? nullptr : common::FindMember(*meta, "labels");
  for (const Requirement& r : sel.labels) {
    const Value* v = labels == nullptr ? nullptr : common::FindMember(*labels, r.key);
    bool has = v != nullptr && v->IsString();
    std::string value = has ? std::string(v->GetString(), v->GetStringLength()) : "";
    bool in = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    switch (r.op) {
      case Requirement::kEq:
      case Requirement::kIn:
        if (!has || !in) return false;
        break;
      case Requirement::kNotEq:
      case Requirement::kNotIn:
        if (has && in) return false;
        break;
      case Requirement::kExists:
        if (!has) return false;
        break;
      case Requirement::kNotExists:
        if (has) return false;
        break;
    }
  }
  for (const Requirement& r : sel.fields) {
    bool equal = FieldValue(obj, r.key) == r.values[0];
    if (equal != (r.op == Requirement::kEq)) return false;
  }
  return true;
}

bool MatchesJson(const Selector& sel, const std::string& json) {
  if (sel.empty()) return true;
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  return !doc.HasParseError() && Matches(sel, doc);
}

}  // namespace testing_support::apiserver
