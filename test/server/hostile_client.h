// The client side of the hostile-input tests: raw sockets and TLS connections that send exactly
// the bytes a row says, and a well-behaved caller that keeps posting valid filters alongside.
#ifndef GPU_TENANCY_TEST_SERVER_HOSTILE_CLIENT_H_
#define GPU_TENANCY_TEST_SERVER_HOSTILE_CLIENT_H_

#include <openssl/ssl.h>
#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>

#include "test/server/hostile_cases.h"

namespace hostile_test {

// Each socket's read and write timeout: a server that neither answers nor closes is caught.
constexpr int kCaseTimeoutSeconds = 12;

bool Alive(pid_t pid);  // the child has not exited

// A TCP connection to 127.0.0.1:port with the case timeouts, or -1.
int Connect(int port);

// A TLS client context that trusts anything: these tests are about what the server does.
SSL_CTX* ClientContext();

struct Outcome {
  int status = 0;  // 0: closed (or reset) without an HTTP answer
  bool timed_out = false;
  std::string body;
};

// Sends `c.raw` and reads a whole response, or until the server closes, or the read timeout.
Outcome SendCase(const Case& c, int port);

// A well-behaved caller on its own keep-alive connection, posting a valid filter every 20 ms.
// A reply counts as ok when it is a 200 within 5 s.
class WellBehavedClient {
 public:
  WellBehavedClient(int port, const std::string& ca);
  ~WellBehavedClient() { Stop(); }
  void Stop();
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }
  // Waits up to `seconds` until ok() exceeds `than`; whether it did.
  bool WaitForOkAbove(int than, double seconds) const;

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

}  // namespace hostile_test

#endif  // GPU_TENANCY_TEST_SERVER_HOSTILE_CLIENT_H_
