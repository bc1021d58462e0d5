// Shared by the in-process Listener tests (tls_listener_test.cc, tls_loop_test.cc): a real
// listener on 127.0.0.1 port 0 over real TLS, bare OpenSSL clients from chosen loopback
// addresses (127.0.0.x, so per-address limits can be exercised on one machine), a gate that
// holds a handler, and bounded waits.
#ifndef GPU_TENANCY_TEST_SERVER_TLS_LISTENER_HARNESS_H_
#define GPU_TENANCY_TEST_SERVER_TLS_LISTENER_HARNESS_H_

#include <openssl/ssl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/listener.h"
#include "server/tls.h"
#include "test/support/serve_process.h"

namespace server::listener_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A handler that blocks until released, to hold a worker or a request in flight.
class Gate {
 public:
  void Wait();
  void WaitForWaiters(int n);  // up to 5 s
  void Open();

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

// Plain TCP, then optionally TLS, from a chosen loopback source address.
class Client {
 public:
  explicit Client(int port, const char* from = "127.0.0.1");
  ~Client();
  bool Handshake();
  // Sends every byte (the socket is non-blocking after the handshake: waits when it is full).
  bool Send(const std::string& bytes);
  // The next whole response (head and Content-Length body), or "" when the connection ended
  // or nothing came within `wait`.
  std::string ReadResponse(milliseconds wait = milliseconds(5000));
  // True when the server closed the connection within `wait` (bytes before it are dropped).
  bool ClosedByServer(milliseconds wait);
  // Without waiting: false once the server has closed the connection or sent anything not
  // asked for, which is how Go's transport tells that a pooled connection is no longer usable.
  bool QuietAndOpen();

 private:
  // Non-blocking reads (after the handshake), so a TLS 1.3 ticket never blocks a read.
  bool ReadSome(Clock::time_point until);

  int fd_ = -1;
  bool connected_ = false;
  bool ended_ = false;
  SSL* ssl_ = nullptr;
  std::string in_;
};

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "", const std::string& version = "HTTP/1.1");
int Status(const std::string& response);
std::string Body(const std::string& response);
uint64_t Closed(const Listener& l, CloseReason r);
int64_t Open(const Listener& l, ConnectionState s);

// Waits (bounded) until `done` holds.
template <typename F>
bool Eventually(F done, milliseconds wait = milliseconds(5000)) {
  for (auto until = Clock::now() + wait; Clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

class TlsListenerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // Starts a listener with `options` (host and port are set here) and routes /echo (replies
  // with the body), /pure (the same, never waits on I/O), /block (waits on gate_), /big (a
  // reply of big_ bytes), /throw, and `extra`; `operator_routes` for options.operator_port.
  void Start(Listener::Options options, std::vector<TlsRoute> extra = {},
             std::vector<OperatorRoute> operator_routes = {});
  void TearDown() override;
  int port() const { return listener_->port(); }

  testing_support::TempDir dir_;
  std::unique_ptr<CertStore> certs_;
  std::unique_ptr<Listener> listener_;
  Gate gate_;
  size_t big_ = 0;
};

}  // namespace server::listener_test

#endif  // GPU_TENANCY_TEST_SERVER_TLS_LISTENER_HARNESS_H_
