// Hostile rows about JSON itself: truncated at many cut points, invalid syntax, invalid UTF-8 in
// strings, and nesting deep enough to break a recursive parser or encoder.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/server/hostile_cases.h"

namespace hostile_test {

void AddMalformedJsonCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Truncated JSON at many cut points.
  for (const Valid& v : valid) {
    constexpr int kCuts = 24;
    for (int i = 0; i < kCuts; ++i) {
      size_t cut = v.body.size() * static_cast<size_t>(i) / kCuts;
      cases.push_back({absl::StrCat("truncated_", v.tag, "_at_", cut), v.route,
                       Request(v.route, v.body.substr(0, cut))});
    }
    cases.push_back({absl::StrCat("truncated_", v.tag, "_last_byte"), v.route,
                     Request(v.route, v.body.substr(0, v.body.size() - 1))});
  }
  // Invalid JSON.
  const std::vector<std::pair<std::string, std::string>> invalid = {
      {"open_brace", "{"},
      {"close_brace", "}"},
      {"open_bracket", "["},
      {"nul", "nul"},
      {"missing_value", "{\"a\":}"},
      {"single_quotes", "{'a':1}"},
      {"trailing_comma", "{\"a\":1,}"},
      {"nul_byte", std::string("{\"a\":\0}", 7)},
      {"missing_colon", "{\"a\" 1}"},
      {"nan", "NaN"},
      {"trailing_garbage", "{}x"},
      {"unterminated_string", "{\"a\":\"abc"},
      {"bad_escape", "{\"a\":\"\\q\"}"},
      {"bad_unicode_escape", "{\"a\":\"\\uZZZZ\"}"},
      {"lone_surrogate_escape", "{\"Pod\":\"\\ud800\"}"},
      {"bom_then_json", "\xEF\xBB\xBF{}"},
      {"two_documents", "{}{}"},
      {"only_spaces", "   "},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, body] : invalid) {
      // "\ud800" decodes to invalid UTF-16; either way the wrapper is wrong: 4xx.
      cases.push_back(
          {absl::StrCat("invalid_json_", v.tag, "_", tag), v.route, Request(v.route, body)});
    }
  }
  // Invalid UTF-8 inside strings of otherwise valid requests.
  const std::vector<std::pair<std::string, std::string>> bad_utf8 = {
      {"ff_fe", "\xff\xfe"},
      {"overlong_slash", "\xc0\xaf"},
      {"surrogate", "\xed\xa0\x80"},
      {"lone_continuation", "\x80"},
      {"truncated_sequence", "\xe2\x82"},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, bytes] : bad_utf8) {
      std::string body = v.body;
      size_t at = body.find("\":\"");
      if (at == std::string::npos) continue;
      body.insert(at + 3, bytes);
      cases.push_back({absl::StrCat("bad_utf8_", v.tag, "_", tag), v.route, Request(v.route, body),
                       Transport::kHttps, /*allow_200=*/true});
    }
  }
}

void AddDeepNestingCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Deep nesting: 100,000 deep (over the small cap: 413) and, on the default-cap server, parsed.
  for (const Valid& v : valid) {
    for (bool default_cap : {false, true}) {
      std::string suffix = default_cap ? "_default_cap" : "";
      std::string arrays = std::string(100000, '[') + std::string(100000, ']');
      std::string objects;
      for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
      objects += "1" + std::string(100000, '}');
      cases.push_back({absl::StrCat("deep_arrays_", v.tag, suffix), v.route,
                       Request(v.route, arrays), Transport::kHttps, false, default_cap});
      cases.push_back({absl::StrCat("deep_objects_", v.tag, suffix), v.route,
                       Request(v.route, objects), Transport::kHttps, false, default_cap});
      // Unclosed: the parser must stop at the end, not recurse.
      cases.push_back({absl::StrCat("deep_unclosed_", v.tag, suffix), v.route,
                       Request(v.route, std::string(60000, '[')), Transport::kHttps, false,
                       default_cap});
    }
    // Deep values inside an otherwise valid request (a codec or encoder that recurses).
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string nested = v.body;
    nested.insert(1, absl::StrCat("\"zzDeep\":", deep, ","));
    cases.push_back({absl::StrCat("deep_extra_member_", v.tag), v.route, Request(v.route, nested),
                     Transport::kHttps, true, true});
  }
  // A deep value inside a full Node that fits (a pod without GPU demand fits everywhere), so a
  // names-and-objects reply would echo it back through a recursive encoder.
  for (int depth : {1000, 100000, 1000000}) {
    for (bool objects : {false, true}) {
      std::string deep;
      if (objects) {
        for (int i = 0; i < depth; ++i) deep += "{\"a\":";
        deep += "1" + std::string(static_cast<size_t>(depth), '}');
      } else {
        deep = std::string(static_cast<size_t>(depth), '[') +
               std::string(static_cast<size_t>(depth), ']');
      }
      std::string body = absl::StrCat(
          R"({"Pod":{"metadata":{"name":"p","namespace":"acme","uid":"deep-1"},)",
          R"("spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}},)",
          R"("Nodes":{"items":[{"metadata":{"name":"cpu-a","labels":{}},"zzDeep":)", deep,
          R"(}]},"NodeNames":null})");
      cases.push_back({absl::StrCat("deep_node_echo_", objects ? "objects_" : "arrays_", depth),
                       "/extender/filter", Request("/extender/filter", body), Transport::kHttps,
                       depth <= 1000, true});
    }
  }
}

}  // namespace hostile_test
