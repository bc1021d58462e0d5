// Hostile inputs over HTTPS: every row of a generated table (truncated and invalid JSON, invalid
// UTF-8, deep nesting, oversized and lying bodies, wrong wrapper types, duplicate keys, absurd
// quantities, wrong content types, odd request lines, garbage instead of TLS, slow drip) must
// get a 4xx (or a 200 where the protocol answers in the body) or a closed connection within a
// bounded time; afterwards the server is still up, and a well-behaved client running alongside
// got only 200s.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ReadTestData;
using testing_support::ServeProcess;
using Clock = std::chrono::steady_clock;
// The demo's MIG pod, names only (test/support/serve_process.h).
const char* const kFilterBody = testing_support::kDemoMigFilterRequest;

[[maybe_unused]] const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

constexpr int kSmallCap = 65536;
constexpr int kCaseTimeoutSeconds = 12;

enum class Transport { kHttps, kRawTcp, kDripHttps };

struct Case {
  std::string name;
  std::string route;
  std::string raw;  // the complete bytes sent on the connection
  Transport transport = Transport::kHttps;
  bool allow_200 = false;  // the protocol may answer in the body (Error / allowed:false)
  bool default_cap = false;  // send to the server with the default (64 MiB) body cap
};

std::string Request(const std::string& route, const std::string& body,
                    const std::string& content_type = "application/json",
                    const std::string& version = "HTTP/1.1") {
  std::string out = absl::StrCat("POST ", route, " ", version, "\r\nHost: localhost\r\n");
  if (!content_type.empty()) absl::StrAppend(&out, "Content-Type: ", content_type, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
  return out;
}

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

struct Valid {
  std::string tag;
  std::string route;
  std::string body;
};

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

// Replaces the value at `path` (object keys) in a copy of `body` with `replacement` (JSON).
std::string Replace(const std::string& body, const std::vector<std::string>& path,
                    const std::string& replacement, bool remove = false) {
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

std::vector<Case> MakeCases() {
  std::vector<Case> cases;
  const std::vector<Valid> valid = ValidBodies();
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
      {"open_brace", "{"},      {"close_brace", "}"},        {"open_bracket", "["},
      {"nul", "nul"},           {"missing_value", "{\"a\":}"}, {"single_quotes", "{'a':1}"},
      {"trailing_comma", "{\"a\":1,}"}, {"nul_byte", std::string("{\"a\":\0}", 7)},
      {"missing_colon", "{\"a\" 1}"},   {"nan", "NaN"},           {"trailing_garbage", "{}x"},
      {"unterminated_string", "{\"a\":\"abc"}, {"bad_escape", "{\"a\":\"\\q\"}"},
      {"bad_unicode_escape", "{\"a\":\"\\uZZZZ\"}"}, {"lone_surrogate_escape", "{\"Pod\":\"\\ud800\"}"},
      {"bom_then_json", "\xEF\xBB\xBF{}"}, {"two_documents", "{}{}"}, {"only_spaces", "   "},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, body] : invalid) {
      // "\ud800" decodes to invalid UTF-16; either way the wrapper is wrong: 4xx.
      cases.push_back({absl::StrCat("invalid_json_", v.tag, "_", tag), v.route,
                       Request(v.route, body)});
    }
  }
  // Invalid UTF-8 inside strings of otherwise valid requests.
  const std::vector<std::pair<std::string, std::string>> bad_utf8 = {
      {"ff_fe", "\xff\xfe"}, {"overlong_slash", "\xc0\xaf"}, {"surrogate", "\xed\xa0\x80"},
      {"lone_continuation", "\x80"}, {"truncated_sequence", "\xe2\x82"},
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
        deep = std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
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
  // Bodies far above the cap, and lying Content-Length.
  for (const Valid& v : valid) {
    std::string big = std::string(1 << 20, ' ') + v.body;
    cases.push_back({absl::StrCat("one_mb_", v.tag), v.route, Request(v.route, big)});
    std::string head = absl::StrCat("POST ", v.route,
                                    " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n");
    cases.push_back({absl::StrCat("content_length_huge_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 1000000000000\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_overflow_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 99999999999999999999999\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_negative_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: -1\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_short_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 10\r\n\r\n", big)});
    cases.push_back({absl::StrCat("content_length_long_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 60000\r\nConnection: close\r\n\r\n", v.body)});
    cases.push_back({absl::StrCat("content_length_twice_", v.tag), v.route,
                     absl::StrCat(head, "Content-Length: 5\r\nContent-Length: ", v.body.size(),
                                  "\r\n\r\n", v.body),
                     Transport::kHttps, true});
    std::string chunked = absl::StrCat(head, "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 64; ++i) absl::StrAppend(&chunked, "4000\r\n", std::string(0x4000, ' '), "\r\n");
    absl::StrAppend(&chunked, "0\r\n\r\n");
    cases.push_back({absl::StrCat("chunked_one_mb_", v.tag), v.route, chunked});
    cases.push_back({absl::StrCat("chunked_bad_size_", v.tag), v.route,
                     absl::StrCat(head, "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")});
  }
  // Wrong types for every wrapper key.
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"string", "\"x\""}, {"number", "12345678901234567890"}, {"array", "[1,\"a\",{}]"},
      {"object", "{\"a\":1}"}, {"bool", "true"}, {"null", "null"}, {"negative", "-1"},
  };
  const std::vector<std::pair<std::string, std::vector<std::vector<std::string>>>> keys = {
      {"filter", {{"Pod"}, {"Nodes"}, {"NodeNames"}, {"Pod", "metadata"}, {"Pod", "spec"},
                  {"Pod", "metadata", "uid"}, {"Pod", "metadata", "annotations"}}},
      {"prioritize", {{"Pod"}, {"Nodes"}, {"NodeNames"}}},
      {"bind", {{"PodName"}, {"PodNamespace"}, {"PodUID"}, {"Node"}}},
      {"validate", {{"apiVersion"}, {"kind"}, {"request"}, {"request", "uid"},
                    {"request", "object"}, {"request", "namespace"}, {"request", "operation"},
                    {"request", "kind"}, {"request", "dryRun"}, {"request", "object", "spec"},
                    {"request", "object", "metadata"}}},
      {"mutate", {{"request"}, {"request", "uid"}, {"request", "object"},
                  {"request", "object", "spec"}}},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, paths] : keys) {
      if (tag != v.tag) continue;
      for (const std::vector<std::string>& path : paths) {
        std::string key;
        for (const std::string& p : path) absl::StrAppend(&key, key.empty() ? "" : "_", p);
        for (const auto& [wtag, json] : wrong) {
          std::string body = Replace(v.body, path, json);
          if (body.empty()) continue;
          cases.push_back({absl::StrCat("wrong_type_", v.tag, "_", key, "_", wtag), v.route,
                           Request(v.route, body), Transport::kHttps, true});
        }
        std::string missing = Replace(v.body, path, "", /*remove=*/true);
        if (!missing.empty()) {
          cases.push_back({absl::StrCat("missing_", v.tag, "_", key), v.route,
                           Request(v.route, missing), Transport::kHttps, true});
        }
      }
    }
  }
  // Duplicate keys.
  for (const Valid& v : valid) {
    for (const std::string& dup : {std::string("\"Pod\":\"x\","), std::string("\"request\":1,"),
                                   std::string("\"NodeNames\":{},"), std::string("\"uid\":7,")}) {
      std::string body = v.body;
      body.insert(1, dup);
      cases.push_back({absl::StrCat("duplicate_", v.tag, "_", cases.size()), v.route,
                       Request(v.route, body), Transport::kHttps, true});
    }
  }
  // Absurd quantities and annotations in well-formed pods.
  const std::vector<std::pair<std::string, std::string>> quantities = {
      {"exp_huge", "1e999999"}, {"ei_huge", "99999999999999999999Ei"}, {"minus_one", "-1"},
      {"negative_mig", "-5"}, {"tiny", "0.0000000001"}, {"nan", "NaN"}, {"empty", ""},
      {"exp_negative", "1e-999999"}, {"int64_max", "9223372036854775807"},
      {"int64_over", "9223372036854775808"}, {"milli", "500m"}, {"suffix_junk", "1Qi"},
  };
  for (const auto& [tag, q] : quantities) {
    for (const std::string& resource :
         {std::string("nvidia.com/gpu"), std::string("nvidia.com/mig-3g.40gb"),
          std::string("nvidia.com/gpu.shared")}) {
      std::string body = kFilterBody;
      std::string limits = absl::StrCat("{\"", resource, "\":\"", q, "\"}");
      body = Replace(body, {"Pod", "spec"},
                     absl::StrCat("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":", limits,
                                  ",\"requests\":", limits, "}}]}"));
      std::string rtag = resource == "nvidia.com/gpu" ? "gpu" : resource.find("mig") != std::string::npos ? "mig" : "shared";
      cases.push_back({absl::StrCat("quantity_filter_", rtag, "_", tag), "/extender/filter",
                       Request("/extender/filter", body), Transport::kHttps, true});
    }
    std::string annotated = Replace(
        kFilterBody, {"Pod", "metadata", "annotations"},
        absl::StrCat("{\"gpu-tenancy.io/gpu-memory\":\"", q,
                     "\",\"gpu-tenancy.io/scheduling-policy\":\"", q, "\"}"));
    cases.push_back({absl::StrCat("annotation_filter_", tag), "/extender/filter",
                     Request("/extender/filter", annotated), Transport::kHttps, true});
    for (const Valid& v : valid) {
      if (v.tag != "validate" && v.tag != "mutate") continue;
      std::string body = Replace(v.body, {"request", "object", "metadata", "annotations"},
                                 absl::StrCat("{\"gpu-tenancy.io/gpu-memory\":\"", q, "\"}"));
      cases.push_back({absl::StrCat("annotation_", v.tag, "_", tag), v.route,
                       Request(v.route, body), Transport::kHttps, true});
    }
  }
  // Raw JSON numbers where strings belong.
  cases.push_back({"number_huge_quantity", "/extender/filter",
                   Request("/extender/filter",
                           Replace(kFilterBody, {"Pod", "spec"},
                                   R"({"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1}}}]})")),
                   Transport::kHttps, true});
  {
    std::string body = kFilterBody;
    size_t at = body.find("\"1\"");
    body.replace(at, 3, "1e999999");
    cases.push_back({"number_1e999999_raw", "/extender/filter", Request("/extender/filter", body)});
  }
  // Non-JSON content types.
  const std::vector<std::pair<std::string, std::string>> types = {
      {"none", ""}, {"text_plain", "text/plain"}, {"form", "application/x-www-form-urlencoded"},
      {"multipart", "multipart/form-data; boundary=x"}, {"jsonx", "application/jsonx"},
      {"json_patch", "application/json-patch+json"}, {"yaml", "application/yaml"},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, type] : types) {
      cases.push_back({absl::StrCat("content_type_", v.tag, "_", tag), v.route,
                       Request(v.route, v.body, type)});
    }
  }
  // Odd request lines (HTTP/1.0 is answered; the rest are refused).
  for (const Valid& v : valid) {
    cases.push_back({absl::StrCat("http10_", v.tag), v.route,
                     Request(v.route, v.body, "application/json", "HTTP/1.0"), Transport::kHttps,
                     true});
    cases.push_back({absl::StrCat("http99_", v.tag), v.route,
                     Request(v.route, v.body, "application/json", "HTTP/9.9")});
    cases.push_back({absl::StrCat("get_", v.tag), v.route,
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
  // Garbage instead of a TLS handshake.
  cases.push_back({"plaintext_http_on_tls_port", "/", Request("/extender/filter", kFilterBody),
                   Transport::kRawTcp});
  cases.push_back({"zeros_on_tls_port", "/", std::string(16384, '\0'), Transport::kRawTcp});
  cases.push_back({"partial_tls_record", "/", std::string("\x16\x03\x01\x40\x00", 5),
                   Transport::kRawTcp});
  cases.push_back({"tls_record_lies_length", "/",
                   std::string("\x16\x03\x01\xff\xff", 5) + std::string(100, 'A'), Transport::kRawTcp});
  cases.push_back({"sslv2_hello", "/", std::string("\x80\x2e\x01\x00\x02", 5) + std::string(45, '\x01'),
                   Transport::kRawTcp});
  {
    std::string random(4096, '\0');
    uint32_t x = 12345;
    for (char& c : random) {
      x = x * 1103515245u + 12345u;
      c = static_cast<char>(x >> 24);
    }
    cases.push_back({"random_bytes_on_tls_port", "/", random, Transport::kRawTcp});
  }
  // Slow drip: one byte of header per 100 ms for about 3 s, then the caller gives up. The
  // server must stay up and keep serving others meanwhile (a drip that never ends is cut off
  // by the request deadline: RequestDeadlineTest below).
  cases.push_back({"slow_drip_headers", "/extender/filter",
                   "POST /extender/filter HTTP/1.1\r\nX-Slow: aaaa", Transport::kDripHttps});
  return cases;
}

bool Alive(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{kCaseTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

struct Outcome {
  int status = 0;  // 0: closed (or reset) without an HTTP answer
  bool timed_out = false;
  std::string body;
};

Outcome ParseResponse(const std::string& in, bool timed_out) {
  Outcome out;
  out.timed_out = timed_out;
  if (in.rfind("HTTP/1.", 0) == 0 && in.size() >= 12) {
    (void)absl::SimpleAtoi(in.substr(9, 3), &out.status);
  }
  size_t end = in.find("\r\n\r\n");
  if (end != std::string::npos) out.body = in.substr(end + 4);
  return out;
}

// A whole response with a Content-Length has arrived (keep-alive would hold the socket open).
bool Complete(const std::string& in) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string head = absl::AsciiStrToLower(in.substr(0, end));
  size_t at = head.find("\r\ncontent-length:");
  if (at == std::string::npos) return false;
  size_t eol = head.find("\r\n", at + 2);
  size_t length = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(head.substr(at + 17, eol - at - 17)), &length)) {
    return false;
  }
  return in.size() >= end + 4 + length;
}

// A TLS client context that trusts anything: these tests are about what the server does.
SSL_CTX* ClientContext() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* x = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(x, SSL_VERIFY_NONE, nullptr);
    return x;
  }();
  return ctx;
}

// Sends `c.raw` and reads a whole response, or until the server closes, or the read timeout.
Outcome SendCase(const Case& c, int port) {
  int fd = Connect(port);
  if (fd < 0) return Outcome{0, false, ""};
  std::string in;
  bool timed_out = false;
  if (c.transport == Transport::kRawTcp) {
    (void)!write(fd, c.raw.data(), c.raw.size());
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) timed_out = true;
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    Outcome o;  // whatever came back (a TLS alert) is not an HTTP answer
    o.timed_out = timed_out;
    return o;
  }
  SSL* ssl = SSL_new(ClientContext());
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) == 1) {
    if (c.transport == Transport::kDripHttps) {
      for (char ch : c.raw) {
        if (SSL_write(ssl, &ch, 1) <= 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } else {
      size_t sent = 0;
      while (sent < c.raw.size()) {
        int chunk = static_cast<int>(std::min<size_t>(16384, c.raw.size() - sent));
        int n = SSL_write(ssl, c.raw.data() + sent, chunk);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    }
    char buf[4096];
    for (;;) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) timed_out = true;
        break;
      }
      in.append(buf, static_cast<size_t>(n));
      if (Complete(in)) break;
    }
  }
  SSL_free(ssl);
  close(fd);
  return ParseResponse(in, timed_out);
}

// A well-behaved caller on its own keep-alive connection, posting a valid filter every 20 ms.
class WellBehavedClient {
 public:
  WellBehavedClient(int port, const std::string& ca) {
    thread_ = std::thread([this, port, ca] {
      httplib::SSLClient client("127.0.0.1", port);
      client.set_ca_cert_path(ca.c_str());
      client.enable_server_certificate_verification(true);
      client.set_keep_alive(true);
      client.set_read_timeout(5, 0);
      client.set_write_timeout(5, 0);
      while (!stop_.load()) {
        auto start = Clock::now();
        httplib::Result r = client.Post("/extender/filter", kFilterBody, "application/json");
        double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (r && r->status == 200 && seconds < 5.0) {
          ok_.fetch_add(1);
        } else {
          failed_.fetch_add(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~WellBehavedClient() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

const std::vector<Case>& AllCases() {
  static const std::vector<Case>* cases = new std::vector<Case>(MakeCases());
  return *cases;
}

class HostileInputTest : public ::testing::TestWithParam<size_t> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ServeProcess>> s =
        ServeProcess::Start({"--demo", "--max-body-bytes", absl::StrCat(kSmallCap)});
    ASSERT_TRUE(s.ok()) << s.status();
    small_ = s->release();
  }
  static void TearDownTestSuite() {
    delete small_;
    small_ = nullptr;
    delete big_;
    big_ = nullptr;
  }
  static ServeProcess* small_;
  static ServeProcess* big_;
};
ServeProcess* HostileInputTest::small_ = nullptr;
ServeProcess* HostileInputTest::big_ = nullptr;

TEST_P(HostileInputTest, RefusedOrAnsweredAndServerStaysUp) {
  const Case& c = AllCases()[GetParam()];
  ASSERT_NE(small_, nullptr);
  if (c.default_cap && big_ == nullptr) {
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start({"--demo"});
    ASSERT_TRUE(s.ok()) << s.status();
    big_ = s->release();
  }
  ServeProcess& server = c.default_cap ? *big_ : *small_;
  WellBehavedClient good(server.tls_port(), server.cert_dir() + "/ca.crt");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  auto start = Clock::now();
  Outcome o = SendCase(c, server.tls_port());
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  SCOPED_TRACE(absl::StrCat(c.name, ": status ", o.status, " after ", seconds, " s, body ",
                            o.body.substr(0, 300)));
  EXPECT_FALSE(o.timed_out) << "the server neither answered nor closed the connection";
  EXPECT_LT(seconds, 2.0 * kCaseTimeoutSeconds);
  if (o.status != 0) {
    bool client_error = o.status >= 400 && o.status < 500;
    // Bind answers in ExtenderBindingResult.Error (200); in --demo (no live cluster) it refuses
    // every request that way before reading it.
    bool bind_error = c.route == "/extender/bind" && o.status == 200 &&
                      o.body.find("\"Error\":\"gpu-tenancy") != std::string::npos;
    EXPECT_TRUE(client_error || bind_error || (c.allow_200 && o.status == 200))
        << "status " << o.status;
    if (o.status == 200 || client_error) {
      rapidjson::Document doc;
      doc.Parse(o.body.c_str(), o.body.size());
      EXPECT_FALSE(doc.HasParseError()) << "answer is not JSON";
    }
  }
  ASSERT_TRUE(Alive(server.pid())) << "the server died";
  EXPECT_EQ(server.Get("/healthz").status, 200);
  EXPECT_EQ(server.Post("/extender/filter", kFilterBody).status, 200);
  // A fast case can end before the good client's first reply when the machine is busy (its
  // handshake alone may take longer): its latency is what is judged, so wait for one reply.
  for (auto until = Clock::now() + std::chrono::seconds(10); good.ok() == 0 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  good.Stop();
  EXPECT_EQ(good.failed(), 0) << "the well-behaved client saw failures";
  EXPECT_GT(good.ok(), 0);
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = AllCases()[info.param].name;
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return absl::StrCat(name, "_", info.param);
}

INSTANTIATE_TEST_SUITE_P(Table, HostileInputTest,
                         ::testing::Range<size_t>(0, AllCases().size()), CaseName);

// Hundreds of idle connections (TCP, some mid-handshake) must not starve a caller on an
// established keep-alive connection, and the server serves new callers once they go away.
TEST(HostileConnectionsTest, HundredsOfIdleConnections) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--max-body-bytes", absl::StrCat(kSmallCap)});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  WellBehavedClient good(server.tls_port(), server.cert_dir() + "/ca.crt");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    int fd = Connect(server.tls_port());
    ASSERT_GE(fd, 0) << "connection " << i;
    if (i % 3 == 0) (void)!write(fd, "\x16\x03\x01\x00", 4);  // a handshake that never finishes
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(Alive(server.pid()));
  EXPECT_EQ(server.Get("/healthz").status, 200);
  for (int fd : idle) close(fd);
  good.Stop();
  EXPECT_EQ(good.failed(), 0);
  EXPECT_GT(good.ok(), 20);
  // A new caller is served once the idle connections are gone (bounded by the timeouts).
  auto deadline = Clock::now() + std::chrono::seconds(15);
  int status = 0;
  while (Clock::now() < deadline && status != 200) {
    status = server.Post("/extender/filter", kFilterBody).status;
  }
  EXPECT_EQ(status, 200);
}

// A TLS connection that opens a request and then sends one byte every 300 ms: each read
// completes well inside the read timeout, so only the total request deadline ends it.
struct Drip {
  bool closed = false;  // the server closed the connection (not our give-up)
  int bytes = 0;        // bytes sent before it did
  double seconds = 0;
};
Drip DripForever(int port, double give_up_seconds) {
  Drip d;
  int fd = Connect(port);
  if (fd < 0) return d;
  SSL* ssl = SSL_new(ClientContext());
  SSL_set_fd(ssl, fd);
  auto start = Clock::now();
  if (SSL_connect(ssl) == 1) {
    const std::string head = "POST /extender/filter HTTP/1.1\r\nHost: localhost\r\nX-Drip: ";
    if (SSL_write(ssl, head.data(), static_cast<int>(head.size())) > 0) {
      // Non-blocking from here: TLS 1.3 session tickets arrive as readable bytes without any
      // application data, and a blocking read would wait for the server instead of dripping.
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      auto closed = [&](int rc) {
        int e = SSL_get_error(ssl, rc);
        return e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
      };
      while (std::chrono::duration<double>(Clock::now() - start).count() < give_up_seconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        char buf[256];
        int rc = SSL_read(ssl, buf, sizeof(buf));
        if (rc <= 0 && closed(rc)) {
          d.closed = true;
          break;
        }
        rc = SSL_write(ssl, "a", 1);
        if (rc <= 0 && closed(rc)) {
          d.closed = true;
          break;
        }
        d.bytes += rc > 0;
      }
    }
  }
  d.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  SSL_free(ssl);
  close(fd);
  return d;
}

TEST(RequestDeadlineTest, DrippedRequestsAreCutOffAndOthersStayServed) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--request-deadline", "2s", "--threads", "8"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  WellBehavedClient good(server.tls_port(), server.cert_dir() + "/ca.crt");
  // More drippers than workers: without the deadline they would hold every worker.
  std::vector<std::thread> drippers;
  std::vector<Drip> drips(12);
  for (size_t i = 0; i < drips.size(); ++i) {
    drippers.emplace_back([&, i] { drips[i] = DripForever(server.tls_port(), 20.0); });
  }
  for (std::thread& t : drippers) t.join();
  for (const Drip& d : drips) {
    EXPECT_TRUE(d.closed) << "still open after " << d.seconds << " s, " << d.bytes << " bytes";
    EXPECT_GT(d.bytes, 2);       // it was dripping, not refused at once
    EXPECT_LT(d.seconds, 6.0);   // 2 s deadline, checked every 200 ms, plus scheduling slack
  }
  good.Stop();
  EXPECT_EQ(good.failed(), 0);
  EXPECT_GT(good.ok(), 5);
  ServeProcess::Response metrics = server.Get("/metrics");
  std::optional<double> expired = testing_support::SampleValue(
      metrics.body, "gpu_tenancy_request_deadline_expired_total{listener=\"tls\"}");
  ASSERT_TRUE(expired.has_value());
  EXPECT_GE(*expired, 12);
}

TEST(RequestDeadlineTest, KeepAliveCallersAreNotCutOffBetweenRequests) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s =
      ServeProcess::Start({"--demo", "--request-deadline", "1s"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  httplib::SSLClient client("127.0.0.1", server.tls_port());
  client.set_ca_cert_path((server.cert_dir() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  // Pauses longer than the deadline between requests, shorter than the keep-alive timeout (5 s):
  // the deadline counts from the previous reply plus that idle time.
  for (int i = 0; i < 3; ++i) {
    httplib::Result r = client.Post("/extender/filter", kFilterBody, "application/json");
    ASSERT_TRUE(r) << "request " << i << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }
  std::optional<double> expired = testing_support::SampleValue(
      server.Get("/metrics").body, "gpu_tenancy_request_deadline_expired_total{listener=\"tls\"}");
  EXPECT_EQ(expired, 0);
}

}  // namespace

