// The listener: event loops that hold connections, a bounded pool of workers that runs only
// complete requests, and two ports served by the same machinery:
//   - the TLS port for the extender and webhook routes (JSON POSTs, long keep-alive);
//   - the plain operator port for the kubelet's probes, Prometheus and the pages (GET and HEAD,
//     one request per connection), when Options::operator_port is set.
// A process may have either port alone (the node agent and `gpu-tenancy ui` serve only the
// operator port).
//
// io_threads Boost.Asio loops (server/event_loop.h) for the TLS port, each on its own thread;
// the first accepts and deals new connections to them in turn. The operator port has one more
// loop and thread of its own, so its probes never queue behind the TLS loops' work: a flood's
// handshakes, deadlines and reconnections can keep every TLS loop busy for seconds when the
// process gets little CPU (a pod's CPU limit), and a probe dealt behind them would fail. Accept,
// the TLS handshake (OpenSSL over the socket, see server/tls_socket.h), reading the request head
// and body (Beast's HTTP/1.1 parser, with header and body limits) and writing the reply are all
// asynchronous on the connection's loop, so a connection that is idle, stuck inside its handshake
// or dripping one byte at a time costs memory and a descriptor, never a thread. Until its first
// byte a new connection has no TLS state at all. A complete request goes to a worker; the reply is
// posted back to the loop and written from there.
//
// Deadlines, each enforced by the loop (a connection past one is closed and counted by reason):
//   request_deadline  from accept to the end of the handshake, and for each request from its
//                     first byte to its last (head and body)
//   idle_timeout      between the end of the handshake or of a reply and the next request;
//                     longer than callers keep idle connections (Go's 90 s), so a caller
//                     drops an idle connection before we close it under its next request
//   reply_deadline    from a reply being ready to its last byte leaving (a stalled reader)
// Limits: max_connections in all and max_connections_per_peer per client address (each loop
// holds an equal share of both); at either, the oldest connection that has no request in
// flight is closed to make room (see ConnectionTable), and when every one is busy the newcomer
// is closed instead. A reply after which the listener closes the connection (the request
// limit, Drain(), Stop()) says Connection: close, so no caller reuses it. When
// worker_threads + max_queued requests are already in the pool, a request gets 503 at once.
//
// Requests: POST with a JSON body to one of the routes. 404 (no route), 405 (not POST, with
// Allow), 415 (not JSON), 413 (body over max_body_bytes), 431 (head over max_header_bytes), 400
// (malformed), 503 (workers saturated), 500 (a handler threw), each with a JSON reason.
// HTTP/1.1 keep-alive (and HTTP/1.0), Expect: 100-continue, chunked request bodies.
//
// The operator port keeps the same machinery with its own limits and counters
// (OperatorPortOptions): its request_deadline runs from accept to the end of the request head,
// so a client that connects and sends nothing, or one byte at a time, holds a descriptor and
// not a thread, and a probe is answered in the same turn of its loop whatever else is
// connected. Quick routes (probes, which read atomics) run on the loop; the rest run one at a
// time on the port's own handler thread, so a scrape waiting on the cluster-state lock holds up
// neither a probe nor a worker of the TLS port. 404, 405 (not GET or HEAD), 400 (malformed, or
// a request body), 431, 503 (max_queued requests already wait for the handler thread), 500.
//
//   auto listener = Listener::Bind(options, std::move(ssl_ctx), routes, operator_routes);
//   (*listener)->Start();  ...  (*listener)->Stop();
#ifndef GPU_TENANCY_SERVER_LISTENER_H_
#define GPU_TENANCY_SERVER_LISTENER_H_

#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/prometheus_text.h"

namespace server {

struct TlsReply {
  int status = 200;
  std::string body;                                          // JSON
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

inline constexpr char kJsonContentType[] = "application/json";

// A route of the operator port: GET or HEAD, no request body.
struct OperatorReply {
  int status = 200;
  std::string content_type;
  std::string body;
};

struct OperatorRoute {
  std::string path;  // matched exactly, without the query string
  std::function<OperatorReply()> handler;
  // Runs on the loop: only for handlers that never block (health and readiness, which read
  // atomics). The others run one at a time on the operator port's handler thread.
  bool quick = false;
  // Instead of `handler`, for routes that read the query string (the part of the target after
  // '?', as sent: still percent-encoded; "" when there is none).
  std::function<OperatorReply(absl::string_view query)> query_handler = nullptr;
};

// The plain-HTTP operator port.
struct OperatorPortOptions {
  std::string host = "0.0.0.0";
  int port = 8080;  // 0 picks a free port
  // From accept to the blank line ending the request head: a probe sends it at once.
  std::chrono::milliseconds request_deadline{3000};
  // From the reply being ready to its last byte leaving: a client that stops reading.
  std::chrono::milliseconds reply_deadline{10000};
  // Requests queued for or running on the handler thread; beyond, 503 at once.
  size_t max_queued = 16;
  // Open connections (no per-address limit: probes and scrapers share few addresses); at the
  // cap the oldest one that has not finished its request makes room.
  size_t max_connections = 512;
  size_t max_header_bytes = 16 * 1024;  // request line and headers; a larger head gets 431
};

// Whether a route's handler may wait on I/O and so must run on a worker. A class, not a bool, so
// that a function or lambda cannot slip through as a pointer converted to true.
class WaitsOnIo {
 public:
  template <typename Bool, typename = std::enable_if_t<std::is_same_v<Bool, bool>>>
  WaitsOnIo(Bool waits) : waits_(waits) {}  // NOLINT(google-explicit-constructor)
  operator bool() const { return waits_; }  // NOLINT(google-explicit-constructor)

 private:
  bool waits_;
};

struct TlsRoute {
  std::string path;  // matched exactly, without the query string
  // Called with the complete body: on a worker thread, or on the connection's loop when the
  // handler never waits on I/O and the body is at most Options::inline_body_bytes.
  std::function<TlsReply(absl::string_view body)> handler;
  WaitsOnIo waits_on_io = true;  // e.g. a call to kube-apiserver: always on a worker
  // For a handler that waits on I/O for some requests only (an admission review that must write
  // a usage record now and then): tried first on the connection's loop for bodies up to
  // inline_body_bytes, it answers when it can without waiting and returns nullopt when it would
  // have to wait, having changed nothing; `handler` then runs on a worker. It must not block.
  std::function<std::optional<TlsReply>(absl::string_view body)> on_loop_first = nullptr;
};

// Why the listener closed a connection (for gpu_tenancy_{tls,operator}_connections_closed_total).
enum class CloseReason {
  kPeerClosed,         // the client hung up, or reset the connection
  kHandshakeFailed,    // not TLS, an unacceptable TLS version or cipher, or a client certificate
  kHandshakeDeadline,  // the handshake did not finish within request_deadline
  kRequestDeadline,    // a request's head and body did not arrive within request_deadline
  kIdleTimeout,        // no next request within idle_timeout
  kReplyDeadline,      // the client did not take its reply within reply_deadline
  kBadRequest,         // answered with a 4xx and closed (the stream cannot be trusted after it)
  kDone,               // Connection: close, HTTP/1.0, or keep_alive_max_requests reached
  kEvictedPerPeer,     // made room for a newer connection from the same address
  kEvictedTotal,       // made room at max_connections
  kEvictedIdle,        // made room at either limit while idle after a reply: its caller may
                       // have been sending the next request on it
  kRefused,            // arrived while every connection had a request in flight
  kShutdown,           // the listener stopped
  kCount
};

// What connections are doing now (for gpu_tenancy_{tls,operator}_connections{state}).
enum class ConnectionState { kHandshake, kIdle, kReading, kInFlight, kWriting, kCount };

class Listener {
 public:
  struct Options {
    std::string host = "0.0.0.0";
    int port = 8443;                                   // 0 picks a free port; -1: no TLS port
    std::optional<OperatorPortOptions> operator_port;  // absent: no operator port
    // Event loops: TLS, HTTP framing and inline handlers for their connections. Two share
    // TLS handshakes of a connection flood between two cores.
    int io_threads = 2;
    int worker_threads = 64;
    size_t max_queued = 1024;  // requests waiting for a worker, beyond the running ones
    // Pure handlers (waits_on_io false) of bodies up to this size run on the loop: a filter
    // over 500 names or a 20 KB admission review takes tens of microseconds, so a loop is
    // held no longer than by reading the next request.
    size_t inline_body_bytes = 256u << 10;
    size_t max_connections = 20000;
    size_t max_connections_per_peer = 1024;
    size_t max_body_bytes = 64u << 20;
    size_t max_header_bytes = 16u << 10;
    size_t keep_alive_max_requests = 100000;
    std::chrono::milliseconds request_deadline{10000};
    // Longer than kube-apiserver's and kube-scheduler's transports keep an idle connection
    // (90 s, Go's default): the caller, never we, ends a quiet keep-alive connection.
    std::chrono::milliseconds idle_timeout{120000};
    // At the total limit a connection idle after a reply for less than this is passed over
    // for another address's older or unused one (ConnectionTable::Limits::settled).
    std::chrono::milliseconds idle_settled{10000};
    std::chrono::milliseconds reply_deadline{10000};
    // Stop() lets requests already being read or served finish for this long at most.
    std::chrono::milliseconds drain_timeout{5000};
  };

  // Counters and gauges, readable from any thread while the listener runs.
  struct Stats {
    std::array<std::atomic<uint64_t>, static_cast<size_t>(CloseReason::kCount)> closed{};
    std::array<std::atomic<int64_t>, static_cast<size_t>(ConnectionState::kCount)> open{};
    std::atomic<int64_t> queued{0};          // requests waiting for a worker
    std::atomic<uint64_t> rejected_busy{0};  // answered 503 because the pool was full
  };

  // Binds and listens on both ports; takes `ctx` (configured by the caller: certificates,
  // client CAs; null without a TLS port). Unavailable when an address cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Listener>> Bind(
      Options options, SSL_CTX* ctx, std::vector<TlsRoute> routes,
      std::vector<OperatorRoute> operator_routes = {});
  // A listener with the operator port alone, on one loop.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Listener>> BindOperatorPort(
      OperatorPortOptions options, std::vector<OperatorRoute> routes);
  ~Listener();  // Stop()
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  void Start();  // the loop thread and the workers
  // From now on every reply says Connection: close and its connection is closed after it, so
  // callers leave while readiness fails, before Stop() closes the connections left idle.
  void Drain();
  // Stops accepting, closes idle connections at once and the rest after their request (within
  // drain_timeout), and returns when every thread has ended. Idempotent.
  void Stop();

  int port() const;            // the TLS port's; -1 without one
  int operator_port() const;   // -1 without one
  const Stats& stats() const;  // the TLS port's
  const Stats& operator_stats() const;
  // The listener's series in the Prometheus text format: gpu_tenancy_tls_* for the TLS port,
  // the same families as gpu_tenancy_operator_* for the operator port.
  void Collect(common::MetricsText& out) const;

  static absl::string_view ReasonName(CloseReason reason);
  static absl::string_view StateName(ConnectionState state);

 private:
  class Impl;
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_LISTENER_H_
