// Hostile inputs over HTTPS, one row of the generated table (hostile_cases.h) per test: truncated
// and invalid JSON, invalid UTF-8, deep nesting, oversized and lying bodies, wrong wrapper types,
// duplicate keys, absurd quantities, wrong content types, odd request lines, garbage instead of
// TLS, slow drip. Each must get a 4xx (or a 200 where the protocol answers in the body) or a
// closed connection within a bounded time; afterwards the server is still up, and a well-behaved
// client running alongside got only 200s.
//
// Two instantiations: Transport (framing, sizes, request lines, slow and broken clients, TLS
// garbage; one verb each) and Body (what the parsers make of the bytes). ctest runs each as one
// process (test/CMakeLists.txt): the rows share their servers and the well-behaved client.

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/server/hostile_cases.h"
#include "test/server/hostile_client.h"
#include "test/support/serve_process.h"

namespace hostile_test {
namespace {

using testing_support::ServeProcess;
using Clock = std::chrono::steady_clock;

constexpr int kSmallCap = 65536;

// A server under test and the well-behaved caller beside it, for the whole suite.
struct Served {
  std::unique_ptr<ServeProcess> server;
  std::unique_ptr<WellBehavedClient> good;
};

// Rows whose request the server waits on (lying Content-Length, a drip, half a TLS record) end
// at the request deadline: 2 s instead of the default 10 s keeps the table quick.
Served Start(std::vector<std::string> args) {
  args.insert(args.end(), {"--demo", "--request-deadline", "2s"});
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(args);
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return {};
  }
  Served out;
  out.server = std::move(*s);
  out.good = std::make_unique<WellBehavedClient>(out.server->tls_port(),
                                                 out.server->cert_dir() + "/ca.crt");
  return out;
}

class HostileInputTest : public ::testing::TestWithParam<size_t> {
 protected:
  static void TearDownTestSuite() {
    for (Served* s : {&small_, &big_}) {
      if (s->good) {
        s->good->Stop();
        EXPECT_GT(s->good->ok(), 0);
      }
      *s = Served{};
    }
  }
  // The server with a 64 KiB body cap, or with the default one; started on first use.
  static Served& ServerFor(const Case& c) {
    Served& s = c.default_cap ? big_ : small_;
    if (!s.server) {
      s = c.default_cap ? Start({}) : Start({"--max-body-bytes", absl::StrCat(kSmallCap)});
    }
    return s;
  }
  static inline Served small_;
  static inline Served big_;
};

TEST_P(HostileInputTest, RefusedOrAnsweredAndServerStaysUp) {
  const Case& c = AllCases()[GetParam()];
  Served& served = ServerFor(c);
  ASSERT_NE(served.server, nullptr);
  ServeProcess& server = *served.server;
  WellBehavedClient& good = *served.good;
  const int failed_before = good.failed();

  auto start = Clock::now();
  Outcome o = SendCase(c, server.tls_port());
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // The good client's replies from here on overlap the row or follow it.
  const int ok_during = good.ok();
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
  // At least one more good reply after the row, so a stall the row caused would be seen; the
  // first row may also be waiting for the good client's handshake.
  EXPECT_TRUE(good.WaitForOkAbove(ok_during, 10.0)) << "the well-behaved client got no reply";
  EXPECT_EQ(good.failed(), failed_before) << "the well-behaved client saw failures";
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = AllCases()[info.param].name;
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return absl::StrCat(name, "_", info.param);
}

// Rows about the connection rather than the body: framing and sizes on the filter route, odd
// request lines and headers, garbage and half records instead of TLS, a slow drip.
bool IsTransportRow(const Case& c) {
  static const std::regex kTransport(
      "(chunked_[a-z_]+|content_length_[a-z]+|get|http10|http99|long_header|long_uri|one_mb)_"
      "filter|garbage_request_line|http09_line|many_headers|no_version|partial_tls_record|"
      "plaintext_http_on_tls_port|random_bytes_on_tls_port|slow_drip_headers|sslv2_hello|"
      "tls_record_lies_length|zeros_on_tls_port");
  return std::regex_match(c.name, kTransport);
}

std::vector<size_t> Rows(bool transport) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < AllCases().size(); ++i) {
    if (IsTransportRow(AllCases()[i]) == transport) rows.push_back(i);
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(Transport, HostileInputTest, ::testing::ValuesIn(Rows(true)), CaseName);
INSTANTIATE_TEST_SUITE_P(Body, HostileInputTest, ::testing::ValuesIn(Rows(false)), CaseName);

}  // namespace
}  // namespace hostile_test
