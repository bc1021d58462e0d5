// Hostile rows about HTTP framing: bodies far above the cap, lying Content-Length, chunking,
// non-JSON content types, odd request lines and oversized headers.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/server/hostile_cases.h"

namespace hostile_test {

void AddBodySizeCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Bodies far above the cap, and lying Content-Length.
  for (const Valid& v : valid) {
    std::string big = std::string(1 << 20, ' ') + v.body;
    cases.push_back({absl::StrCat("one_mb_", v.tag), v.route, Request(v.route, big)});
    std::string head = absl::StrCat(
        "POST ", v.route, " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n");
    cases.push_back({absl::StrCat("content_length_huge_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 1000000000000\r\n\r\n", v.body)});
    cases.push_back(
        {absl::StrCat("content_length_overflow_", v.tag), v.route,
         absl::StrCat(head, "Content-Length: 99999999999999999999999\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_negative_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: -1\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_short_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 10\r\n\r\n", big)});
    cases.push_back(
        {absl::StrCat("content_length_long_", v.tag), v.route,
         absl::StrCat(head, "Content-Length: 60000\r\nConnection: close\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_twice_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 5\r\nContent-Length: ", v.body.size(),
                                  "\r\n\r\n", v.body),
                     Transport::kHttps, true});
    std::string chunked = absl::StrCat(head, "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 64; ++i)
      absl::StrAppend(&chunked, "4000\r\n", std::string(0x4000, ' '), "\r\n");
    absl::StrAppend(&chunked, "0\r\n\r\n");
    cases.push_back({absl::StrCat("chunked_one_mb_", v.tag), v.route, chunked});
    cases.push_back(
        {absl::StrCat("chunked_bad_size_", v.tag), v.route,
         absl::StrCat(head, "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")});
  }
}

void AddContentTypeCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Non-JSON content types.
  const std::vector<std::pair<std::string, std::string>> types = {
      {"none", ""},
      {"text_plain", "text/plain"},
      {"form", "application/x-www-form-urlencoded"},
      {"multipart", "multipart/form-data; boundary=x"},
      {"jsonx", "application/jsonx"},
      {"json_patch", "application/json-patch+json"},
      {"yaml", "application/yaml"},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, type] : types) {
      cases.push_back({absl::StrCat("content_type_", v.tag, "_", tag), v.route,
                       Request(v.route, v.body, type)});
    }
  }
}

void AddRequestLineCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Odd request lines (HTTP/1.0 is answered; the rest are refused).
  for (const Valid& v : valid) {
    cases.push_back({absl::StrCat("http10_", v.tag), v.route,
                     Request(v.route, v.body, "application/json", "HTTP/1.0"), Transport::kHttps,
                     true});
    cases.push_back({absl::StrCat("http99_", v.tag), v.route,
                     Request(v.route, v.body, "application/json", "HTTP/9.9")});
    cases.push_back(
        {absl::StrCat("get_", v.tag), v.route,
         absl::StrCat("GET ", v.route, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")});
    cases.push_back({absl::StrCat("long_uri_", v.tag), v.route,
                     absl::StrCat("POST ", v.route, "?", std::string(20000, 'a'),
                                  " HTTP/1.1\r\nHost: x\r\n\r\n")});
    cases.push_back({absl::StrCat("long_header_", v.tag), v.route,
                     absl::StrCat("POST ", v.route, " HTTP/1.1\r\nX-A: ", std::string(20000, 'a'),
                                  "\r\n\r\n")});
  }
  cases.push_back({"http09_line", "/", "GET /\r\n\r\n"});
  cases.push_back({"no_version", "/", "POST /extender/filter\r\n\r\n"});
  cases.push_back({"garbage_request_line", "/", "\x01\x02\x03 garbage\r\n\r\n"});
  cases.push_back({"many_headers", "/extender/filter", [] {
                     std::string r = "POST /extender/filter HTTP/1.1\r\n";
                     for (int i = 0; i < 5000; ++i) absl::StrAppend(&r, "X-", i, ": y\r\n");
                     return r + "\r\n";
                   }()});
}

}  // namespace hostile_test
