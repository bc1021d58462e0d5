// A total deadline for reading each request on the TLS listener. cpp-httplib 0.11.4 bounds
// every single read (Options::read_timeout_seconds) but not a whole request, so a client that
// sends one header byte every few seconds would hold a worker forever, and a few dozen such
// clients would starve kube-scheduler and kube-apiserver of workers. This watchdog gives each
// connection a deadline from its TLS handshake (and, on keep-alive connections, from the end
// of the previous reply) until the request reaches its handler; a connection past it is shut
// down, which ends the blocked read and lets httplib close it.
//
// Connections are tracked by their SSL object, which OpenSSL shows us at every step: the info
// callback registers it at the handshake, the request carries it to the handler (disarm) and
// the logger (re-arm), and an ex_data free callback forgets it inside SSL_free, which httplib
// calls before closing the socket. So the socket is never shut down after its descriptor was
// closed (and possibly reused for another connection).
#ifndef GPU_TENANCY_SERVER_REQUEST_DEADLINE_H_
#define GPU_TENANCY_SERVER_REQUEST_DEADLINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include <openssl/ssl.h>

#include "absl/container/flat_hash_map.h"

namespace server {

class RequestDeadlines {
 public:
  using Clock = std::chrono::steady_clock;

  // `budget`: from the handshake (or the previous reply plus `idle`) to the handler.
  RequestDeadlines(std::chrono::milliseconds budget, std::chrono::milliseconds idle);
  ~RequestDeadlines();
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // Hooks `ctx` so every connection it accepts is watched. Call from the SSL_CTX setup.
  void Attach(SSL_CTX& ctx);
  // The request reached its handler: no deadline while our code runs.
  void Disarm(const SSL* ssl);
  // The reply went out: the next request on this connection must arrive in idle + budget.
  void Rearm(const SSL* ssl);

  // Connections shut down for missing their deadline.
  uint64_t expired() const { return expired_.load(); }

 private:
  struct Entry {
    int fd;
    Clock::time_point deadline;  // time_point::max() while disarmed
  };
  static void OnInfo(const SSL* ssl, int where, int ret);
  static void OnFree(void* parent, void* ptr, CRYPTO_EX_DATA* ad, int index, long argl, void* argp);
  static int ExIndex();
  void Register(const SSL* ssl);
  void Forget(const SSL* ssl);
  void Run();

  const std::chrono::milliseconds budget_, idle_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  absl::flat_hash_map<const SSL*, Entry> connections_;
  std::atomic<uint64_t> expired_{0};
  std::thread thread_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_REQUEST_DEADLINE_H_
