#include "webhook/match_conditions_check.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/json.h"

namespace webhook {
namespace {

std::string Normalized(absl::string_view expression) {
  std::vector<absl::string_view> lines;
  for (absl::string_view line : absl::StrSplit(expression, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    if (!line.empty()) lines.push_back(line);
  }
  return absl::StrJoin(lines, "\n");
}

const MatchCondition* Named(const std::vector<MatchCondition>& conditions, absl::string_view name) {
  for (const MatchCondition& c : conditions) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

ConditionsCheck CheckMatchConditions(const std::vector<MatchCondition>& served,
                                     const std::vector<MatchCondition>& want) {
  ConditionsCheck check;
  for (const MatchCondition& w : want) {
    const MatchCondition* s = Named(served, w.name);
    if (!s) {
      check.problem = absl::StrCat("condition \"", w.name, "\" is missing");
      return check;
    }
    if (Normalized(s->expression) != Normalized(w.expression)) {
      check.problem = absl::StrCat("condition \"", w.name, "\" differs from the policy's");
      return check;
    }
  }
  for (const MatchCondition& s : served) {
    if (!Named(want, s.name)) {
      check.problem = absl::StrCat("condition \"", s.name, "\" is not the policy's");
      return check;
    }
  }
  check.current = true;
  return check;
}

absl::StatusOr<std::vector<MatchCondition>> ServedMatchConditions(absl::string_view config_json,
                                                                  absl::string_view webhook_name) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(config_json);
  if (!doc.ok()) return doc.status();
  if (!doc->IsObject()) return absl::InvalidArgumentError("expected a JSON object");
  absl::StatusOr<const common::JsonValue*> hooks = common::OptionalArray(*doc, "webhooks", "");
  if (!hooks.ok()) return hooks.status();
  if (*hooks) {
    for (rapidjson::SizeType i = 0; i < (*hooks)->Size(); ++i) {
      const common::JsonValue& hook = (**hooks)[i];
      if (common::StringOr(hook, "name") != webhook_name) continue;
      const std::string path = common::IndexPath("webhooks", i);
      absl::StatusOr<const common::JsonValue*> conditions =
          common::OptionalArray(hook, "matchConditions", path);
      if (!conditions.ok()) return conditions.status();
      std::vector<MatchCondition> out;
      if (!*conditions) return out;
      for (rapidjson::SizeType j = 0; j < (*conditions)->Size(); ++j) {
        const std::string at = common::IndexPath(common::JoinPath(path, "matchConditions"), j);
        const common::JsonValue& c = (**conditions)[j];
        absl::StatusOr<absl::string_view> name = common::RequireString(c, "name", at);
        if (!name.ok()) return name.status();
        absl::StatusOr<absl::string_view> expression = common::RequireString(c, "expression", at);
        if (!expression.ok()) return expression.status();
        out.push_back({std::string(*name), std::string(*expression)});
      }
      return out;
    }
  }
  return absl::NotFoundError(absl::StrCat("no webhook named ", webhook_name));
}

}  // namespace webhook
