// Hostile rows below HTTP: garbage instead of a TLS handshake, and a caller that drips its
// headers.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/server/hostile_cases.h"

namespace hostile_test {

void AddTransportCases(std::vector<Case>& cases) {
  // Garbage instead of a TLS handshake.
  cases.push_back({"plaintext_http_on_tls_port", "/", Request("/extender/filter", kFilterBody),
                   Transport::kRawTcp});
  cases.push_back({"zeros_on_tls_port", "/", std::string(16384, '\0'), Transport::kRawTcp});
  cases.push_back(
      {"partial_tls_record", "/", std::string("\x16\x03\x01\x40\x00", 5), Transport::kRawTcp});
  cases.push_back({"tls_record_lies_length", "/",
                   std::string("\x16\x03\x01\xff\xff", 5) + std::string(100, 'A'),
                   Transport::kRawTcp});
  cases.push_back({"sslv2_hello", "/",
                   std::string("\x80\x2e\x01\x00\x02", 5) + std::string(45, '\x01'),
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
  // by the request deadline: RequestDeadlineTest in hostile_input_test.cc).
  cases.push_back({"slow_drip_headers", "/extender/filter",
                   "POST /extender/filter HTTP/1.1\r\nX-Slow: aaaa", Transport::kDripHttps});
}

}  // namespace hostile_test
