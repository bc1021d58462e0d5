// Listener in process, what the listener as a whole promises: HTTP framing answers with JSON
// reasons, keep-alive and pipelining, HTTP/1.0, chunked bodies and 100-continue, and a drain on
// Stop(). What one event loop does with its connections (dealing, deadlines, limits, dispatch)
// is tls_loop_test.cc.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/listener.h"
#include "test/server/tls_listener_harness.h"

namespace server::listener_test {
namespace {

TEST_F(TlsListenerTest, AnswersFramingErrorsWithJsonReasons) {
  Listener::Options o;
  o.max_body_bytes = 1024;
  o.max_header_bytes = 2048;
  Start(o);
  struct Row {
    const char* name;
    std::string request;
    int status;
    const char* mentions;
  };
  std::vector<Row> rows = {
      {"unknown route", Post("/nope", "{}"), 404, "no such route"},
      {"GET", "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method"},
      {"text/plain",
       absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: text/plain\r\n",
                    "Content-Length: 2\r\n\r\n{}"),
       415, "Content-Type"},
      {"body over the cap", Post("/echo", std::string(2000, ' ')), 413, "too large (over 1024"},
      {"head over the cap", Post("/echo", "{}", "X-A: " + std::string(3000, 'a') + "\r\n"), 431,
       "head too large"},
      {"HTTP/9.9", Post("/echo", "{}", "", "HTTP/9.9"), 400, "version"},
      {"no version", "POST /echo\r\n\r\n", 400, "malformed"},
      {"bad chunk",
       absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                    "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
       400, "malformed"},
      {"handler throws", Post("/throw", "{}"), 500, "internal error"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Client c(port());
    ASSERT_TRUE(c.Handshake());
    ASSERT_TRUE(c.Send(row.request));
    std::string response = c.ReadResponse();
    EXPECT_EQ(Status(response), row.status) << response;
    EXPECT_NE(response.find(row.mentions), std::string::npos) << response;
    EXPECT_NE(response.find("application/json"), std::string::npos) << response;
    if (row.status == 405) {
      EXPECT_NE(response.find("Allow: POST"), std::string::npos);
    }
  }
}

TEST_F(TlsListenerTest, KeepAlivePipeliningHttp10ChunkedAndContinue) {
  Start({});
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  // Two requests in one write: both answered, in order, on the same connection.
  ASSERT_TRUE(c.Send(Post("/echo", "[1]") + Post("/echo", "[2]")));
  std::string first = c.ReadResponse(), second = c.ReadResponse();
  EXPECT_EQ(Status(first), 200);
  EXPECT_NE(first.find("\r\n\r\n[1]"), std::string::npos) << first;
  EXPECT_NE(second.find("\r\n\r\n[2]"), std::string::npos) << second;
  ASSERT_TRUE(c.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                                  "Transfer-Encoding: chunked\r\n\r\n3\r\n[3]\r\n0\r\n\r\n")));
  EXPECT_NE(c.ReadResponse().find("\r\n\r\n[3]"), std::string::npos);
  ASSERT_TRUE(c.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json\r\n",
                                  "Content-Length: 3\r\nExpect: 100-continue\r\n\r\n")));
  EXPECT_EQ(Status(c.ReadResponse()), 100);
  ASSERT_TRUE(c.Send("[4]"));
  EXPECT_NE(c.ReadResponse().find("\r\n\r\n[4]"), std::string::npos);

  Client old(port());
  ASSERT_TRUE(old.Handshake());
  ASSERT_TRUE(old.Send(Post("/echo", "[5]", "", "HTTP/1.0")));
  std::string reply = old.ReadResponse();
  EXPECT_EQ(reply.rfind("HTTP/1.0 200", 0), 0u) << reply;
  EXPECT_TRUE(old.ClosedByServer(milliseconds(3000)));
}

TEST_F(TlsListenerTest, StopClosesIdleConnectionsAndFinishesRequestsInFlight) {
  Start({});
  Client idle(port());
  ASSERT_TRUE(idle.Handshake());
  Client busy(port());
  ASSERT_TRUE(busy.Handshake());
  ASSERT_TRUE(busy.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  std::thread stopper([&] { listener_->Stop(); });
  EXPECT_TRUE(idle.ClosedByServer(milliseconds(3000)));
  gate_.Open();
  // The request in flight is answered, told not to come back, and its connection closed.
  std::string response = busy.ReadResponse();
  EXPECT_EQ(Status(response), 200);
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
  EXPECT_TRUE(busy.ClosedByServer(milliseconds(3000)));
  stopper.join();
  EXPECT_EQ(Closed(*listener_, CloseReason::kShutdown), 1u);
}

}  // namespace
}  // namespace server::listener_test
