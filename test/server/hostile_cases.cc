// The hostile table's shared pieces (valid bodies, request framing, JSON surgery) and its
// assembly: MakeCases runs the families in the order that fixes each row's index.
#include "test/server/hostile_cases.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"

namespace hostile_test {
namespace {

using testing_support::ReadTestData;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  v.Accept(w);
  return out.GetString();
}

std::vector<Case> MakeCases() {
  std::vector<Case> cases;
  const std::vector<Valid> valid = ValidBodies();
  AddMalformedJsonCases(valid, cases);
  AddDeepNestingCases(valid, cases);
  AddBodySizeCases(valid, cases);
  AddWrongTypeCases(valid, cases);
  AddDuplicateKeyCases(valid, cases);
  AddQuantityCases(valid, cases);
  AddContentTypeCases(valid, cases);
  AddRequestLineCases(valid, cases);
  AddTransportCases(cases);
  return cases;
}

}  // namespace

std::string Request(const std::string& route, const std::string& body,
                    const std::string& content_type, const std::string& version) {
  std::string out = absl::StrCat("POST ", route, " ", version, "\r\nHost: localhost\r\n");
  if (!content_type.empty()) absl::StrAppend(&out, "Content-Type: ", content_type, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
  return out;
}

std::vector<Valid> ValidBodies() {
  return {
      {"filter", "/extender/filter", kFilterBody},
      {"prioritize", "/extender/prioritize",
       Trim(ReadTestData("extender/prioritize-nodecache-true.request.json"))},
      {"bind", "/extender/bind",
       R"({"PodName":"llm-b","PodNamespace":"acme","PodUID":"hostile-1","Node":"mig-a"})"},
      {"validate", "/webhook/validate",
       Trim(ReadTestData("admission/pod-create.validating.request.json"))},
      {"mutate", "/webhook/mutate",
       Trim(ReadTestData("admission/pod-create.mutating.request.json"))},
  };
}

std::string Replace(const std::string& body, const std::vector<std::string>& path,
                    const std::string& replacement, bool remove) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError()) return "";
  rapidjson::Value* at = &doc;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (!at->IsObject()) return "";
    auto it = at->FindMember(path[i].c_str());
    if (it == at->MemberEnd()) return "";
    at = &it->value;
  }
  if (!at->IsObject()) return "";
  auto it = at->FindMember(path.back().c_str());
  if (remove) {
    if (it != at->MemberEnd()) at->RemoveMember(it);
    return Serialize(doc);
  }
  rapidjson::Document value(&doc.GetAllocator());
  value.Parse(replacement.c_str(), replacement.size());
  if (value.HasParseError()) return "";
  if (it == at->MemberEnd()) {
    at->AddMember(rapidjson::Value(path.back().c_str(), doc.GetAllocator()), value,
                  doc.GetAllocator());
  } else {
    it->value.CopyFrom(value, doc.GetAllocator());
  }
  return Serialize(doc);
}

const std::vector<Case>& AllCases() {
  static const std::vector<Case>* cases = new std::vector<Case>(MakeCases());
  return *cases;
}

}  // namespace hostile_test
