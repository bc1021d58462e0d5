// The hostile request table that hostile_input_test.cc runs against the real binary: each Case is
// the complete bytes one connection sends. MakeCases assembles the families below in a fixed
// order, so a row's index (and its test name, `<case>_<index>`) stays put; a family that adds or
// removes rows renumbers every row after it.
#ifndef GPU_TENANCY_TEST_SERVER_HOSTILE_CASES_H_
#define GPU_TENANCY_TEST_SERVER_HOSTILE_CASES_H_

#include <string>
#include <vector>

#include "test/support/serve_process.h"

namespace hostile_test {

// The demo's MIG pod, names only (test/support/serve_process.h).
inline const char* const kFilterBody = testing_support::kDemoMigFilterRequest;

enum class Transport { kHttps, kRawTcp, kDripHttps };

struct Case {
  std::string name;
  std::string route;
  std::string raw;  // the complete bytes sent on the connection
  Transport transport = Transport::kHttps;
  bool allow_200 = false;    // the protocol may answer in the body (Error / allowed:false)
  bool default_cap = false;  // send to the server with the default (64 MiB) body cap
};

// A valid request for one route, the base the families corrupt.
struct Valid {
  std::string tag;
  std::string route;
  std::string body;
};
std::vector<Valid> ValidBodies();

// A POST of `body` to `route`, closing the connection after the reply.
std::string Request(const std::string& route, const std::string& body,
                    const std::string& content_type = "application/json",
                    const std::string& version = "HTTP/1.1");

// Replaces the value at `path` (object keys) in a copy of `body` with `replacement` (JSON), or
// removes it; "" when `body` or `replacement` does not parse or the path is not there.
std::string Replace(const std::string& body, const std::vector<std::string>& path,
                    const std::string& replacement, bool remove = false);

// The families, each appending its rows to `cases` (some name rows by cases.size()).
// hostile_cases_json.cc: truncated and invalid JSON, invalid UTF-8; deep nesting.
void AddMalformedJsonCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
void AddDeepNestingCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
// hostile_cases_http.cc: bodies over the cap, lying Content-Length, chunking; content types;
// odd request lines and headers.
void AddBodySizeCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
void AddContentTypeCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
void AddRequestLineCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
// hostile_cases_schema.cc: wrong wrapper types and missing keys, duplicate keys, absurd
// quantities and annotations in well-formed requests.
void AddWrongTypeCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
void AddDuplicateKeyCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
void AddQuantityCases(const std::vector<Valid>& valid, std::vector<Case>& cases);
// hostile_cases_transport.cc: garbage instead of TLS, a slow drip.
void AddTransportCases(std::vector<Case>& cases);

// The whole table, built once.
const std::vector<Case>& AllCases();

}  // namespace hostile_test

#endif  // GPU_TENANCY_TEST_SERVER_HOSTILE_CASES_H_
