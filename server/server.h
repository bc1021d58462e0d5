// The only place that configures the listener and OpenSSL. One listener (server/listener.h),
// whose event loops hold any number of idle or slow connections for the price of memory, on
// two ports:
//   - TLS (extender and webhook routes), with a bounded worker pool for complete requests. TLS
//   >= 1.2 with hot-swappable certificates, optional client-certificate
//     auth, TCP_NODELAY, long keep-alive, per-connection deadlines, connection limits in all
//     and per client address, a body cap (413), JSON-only POSTs (415 otherwise), 503 when the
//     workers are saturated, and a last-resort handler turning a stray exception into a 500;
//   - plain HTTP for operators and the kubelet (the operator port, which slow or idle clients
//     cannot starve): /healthz, readiness checks (/readyz...), /metrics, and read-only JSON
//     routes such as /debug/allocations.
// Handlers are injected as pure functions of the body, so no business logic lives here.
#ifndef GPU_TENANCY_SERVER_SERVER_H_
#define GPU_TENANCY_SERVER_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/prometheus_text.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/tls.h"

namespace server {

struct Options {
  std::string listen_host = "0.0.0.0";
  int listen_port = 8443;  // 0 picks a free port
  std::string metrics_host = "0.0.0.0";
  int metrics_port = 8080;  // 0 picks a free port; -1: no operator port
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string client_ca_file;         // non-empty: require client certificates from this CA
  size_t max_body_bytes = 64u << 20;  // 500 full Nodes are about 9 MB
  int worker_threads = 64;            // run complete requests (a bind waits on kube-apiserver)
  size_t max_queued_requests = 1024;  // waiting for a worker; beyond, 503 at once
  size_t max_connections = 20000;     // lowered to fit the descriptor limit
  size_t max_connections_per_ip = 1024;
  size_t keep_alive_max_requests = 100000;
  // Idle between requests; longer than kube-apiserver's and kube-scheduler's Go transports
  // keep an idle connection (90 s), so they, not we, end it (docs/operations.md, "Limits
  // and hostile clients").
  absl::Duration keep_alive_timeout = absl::Seconds(120);
  absl::Duration cert_poll_interval = absl::Seconds(1);  // certificate files, for hot reload
  // The most a TLS client may take for the handshake, or for one request's headers and body
  // from its first byte, however it paces its bytes; and for taking one reply.
  absl::Duration request_deadline = absl::Seconds(10);
  // Stop() first fails readiness, then keeps serving this long (each reply saying
  // Connection: close) before closing the listeners, so Kubernetes can drop the pod from its
  // Service endpoints (and callers stop sending).
  absl::Duration shutdown_delay = absl::ZeroDuration();
};

struct Reply {
  int status = 200;
  std::string body;                   // JSON
  std::vector<std::string> warnings;  // extra HTTP headers are not needed by our callers
};

struct PostRoute {
  std::string path;
  std::function<Reply(absl::string_view body)> handler;
  // False for a pure function of the body and in-memory state: small requests then run on
  // the connection's event loop instead of a worker (TlsRoute::waits_on_io).
  WaitsOnIo waits_on_io = true;
  // With waits_on_io: tried first on the loop, answers unless it would wait on I/O
  // (TlsRoute::on_loop_first).
  std::function<std::optional<Reply>(absl::string_view body)> on_loop_first = nullptr;
};

// A read-only operator route on the operator port (GET, JSON reply).
struct GetRoute {
  std::string path;
  std::function<Reply()> handler;
};

// A readiness endpoint on the operator port (e.g. /readyz, /readyz/extender): 200 while
// `ready` holds and the server is not stopping, else 503. `ready` runs on the listener's event
// loop, so it must only read atomics: never block or take a lock.
struct ReadyCheck {
  std::string path;
  std::function<bool()> ready;
};

class Server {
 public:
  ~Server();

  // Loads the certificate pair and binds both listeners (so ports are known before Start()).
  // InvalidArgument for bad certificate files, Unavailable when a port cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Server>> Create(
      Options options, std::vector<PostRoute> routes, std::vector<ReadyCheck> readiness,
      // The caller's own /metrics families, after the server's.
      common::MetricsRegistry::Collector extra_metrics = nullptr,
      std::vector<GetRoute> operator_routes = {},
      // More routes on the operator port as they are (the pages: server/ui_routes.h).
      std::vector<OperatorRoute> page_routes = {});

  void Start();  // serves on background threads
  // Graceful stop: /readyz fails at once; after Options::shutdown_delay (still serving)
  // the listeners close and requests in flight finish.
  void Stop();

  int tls_port() const { return tls_port_; }
  int metrics_port() const { return metrics_port_; }
  bool stopping() const { return stopping_.load(); }

 private:
  Server() = default;
  void ReloadCertificates();

  void CollectOwnMetrics(common::MetricsText& out) const;

  Options options_;
  // Outlives the listener, whose SSL_CTX picks certificates from it on every handshake.
  std::unique_ptr<CertStore> certs_;
  RequestMetrics metrics_;
  std::unique_ptr<Listener> listener_;
  common::MetricsRegistry metrics_registry_;  // what /metrics shows
  std::atomic<bool> stopping_{false};
  int tls_port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<class FileWatcher> cert_watch_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_SERVER_H_
