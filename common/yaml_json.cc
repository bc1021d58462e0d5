#include "common/yaml_json.h"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace common {
namespace {

constexpr int kMaxYamlDepth = 200;

bool IsPlain(const YAML::Node& node) { return node.Tag() == "?"; }

void ScalarToJson(const YAML::Node& node, rapidjson::Value& out,
                  rapidjson::Document::AllocatorType& alloc) {
  const std::string& text = node.Scalar();
  if (IsPlain(node)) {
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
      out.SetNull();
      return;
    }
    if (text == "true" || text == "True" || text == "TRUE") {
      out.SetBool(true);
      return;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
      out.SetBool(false);
      return;
    }
    int64_t i = 0;
    bool digits_only = true;
    for (size_t k = (text[0] == '-' || text[0] == '+') ? 1 : 0; k < text.size(); ++k) {
      digits_only &= text[k] >= '0' && text[k] <= '9';
    }
    if (digits_only && absl::SimpleAtoi(text, &i)) {
      out.SetInt64(i);
      return;
    }
    double d = 0;
    bool numeric_chars = true;
    for (char c : text) {
      numeric_chars &=
          (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
    }
    // JSON has no infinity: "1e999" overflows to inf, which RapidJSON's writer cannot encode
    // (it emitted truncated, invalid JSON; found by fuzz/pod_mutation_fuzz). Such a scalar stays
    // a string, so whatever reads it reports a type error instead.
    if (numeric_chars && absl::SimpleAtod(text, &d) && std::isfinite(d)) {
      out.SetDouble(d);
      return;
    }
  }
  out.SetString(text.data(), static_cast<rapidjson::SizeType>(text.size()), alloc);
}

absl::Status NodeToJson(const YAML::Node& node, rapidjson::Value& out,
                        rapidjson::Document::AllocatorType& alloc, int depth) {
  if (depth > kMaxYamlDepth) return absl::InvalidArgumentError("YAML nests too deeply");
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out.SetNull();
      return absl::OkStatus();
    case YAML::NodeType::Scalar:
      ScalarToJson(node, out, alloc);
      return absl::OkStatus();
    case YAML::NodeType::Sequence:
      out.SetArray();
      for (const YAML::Node& item : node) {
        rapidjson::Value v;
        absl::Status s = NodeToJson(item, v, alloc, depth + 1);
        if (!s.ok()) return s;
        out.PushBack(v, alloc);
      }
      return absl::OkStatus();
    case YAML::NodeType::Map:
      out.SetObject();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat("YAML line ", kv.first.Mark().line + 1, ": map keys must be scalars"));
        }
        const std::string& key = kv.first.Scalar();
        rapidjson::Value k(key.data(), static_cast<rapidjson::SizeType>(key.size()), alloc);
        rapidjson::Value v;
        absl::Status s = NodeToJson(kv.second, v, alloc, depth + 1);
        if (!s.ok()) return s;
        out.AddMember(k, v, alloc);
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// yaml-cpp 0.7's LoadAll never returns on some malformed streams (a stray "," at the top level):
// the parser reports the same empty document over and over without consuming input, growing
// memory until the process dies (jbeder/yaml-cpp#1040, fixed upstream after 0.8 by #1319; found
// by fuzz/policy_fuzz). A first pass over the parser's events refuses a stream whose next
// document starts where the previous one did, before LoadAll can loop on it.
class ProgressCheck : public YAML::EventHandler {
 public:
  YAML::Mark start = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Throws YAML::Exception like the parser does.
void CheckParserProgress(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ProgressCheck check;
  int previous = -1;
  while (parser.HandleNextDocument(check)) {
    if (check.start.pos == previous) {
      throw YAML::ParserException(check.start, "unexpected token at the top level");
    }
    previous = check.start.pos;
  }
}

}  // namespace

absl::StatusOr<std::vector<rapidjson::Document>> YamlDocumentsToJson(absl::string_view text) {
  std::vector<rapidjson::Document> docs;
  try {
    const std::string owned(text);
    CheckParserProgress(owned);
    for (const YAML::Node& node : YAML::LoadAll(owned)) {
      if (node.IsNull()) continue;
      rapidjson::Document doc;
      absl::Status s = NodeToJson(node, doc, doc.GetAllocator(), 0);
      if (!s.ok()) return s;
      docs.push_back(std::move(doc));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML: ", e.what()));
  }
  return docs;
}

absl::StatusOr<rapidjson::Document> YamlToJson(absl::string_view text) {
  absl::StatusOr<std::vector<rapidjson::Document>> docs = YamlDocumentsToJson(text);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected one YAML document, found ", docs->size()));
  }
  return std::move(docs->front());
}

}  // namespace common
