#include "server/server.h"

#include <openssl/err.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/file_watch.h"
#include "server/listener.h"

namespace server {
namespace {

constexpr char kText[] = "text/plain";

Listener::Options ListenerOptions(const Options& o) {
  Listener::Options l;
  l.host = o.listen_host;
  l.port = o.listen_port;
  l.worker_threads = o.worker_threads;
  l.max_queued = o.max_queued_requests;
  l.max_connections = o.max_connections;
  l.max_connections_per_peer = o.max_connections_per_ip;
  l.max_body_bytes = o.max_body_bytes;
  l.keep_alive_max_requests = o.keep_alive_max_requests;
  l.request_deadline = absl::ToChronoMilliseconds(o.request_deadline);
  l.idle_timeout = absl::ToChronoMilliseconds(o.keep_alive_timeout);
  l.reply_deadline = absl::ToChronoMilliseconds(o.request_deadline);
  if (o.metrics_port >= 0) {
    l.operator_port.emplace();
    l.operator_port->host = o.metrics_host;
    l.operator_port->port = o.metrics_port;
  }
  return l;
}

}  // namespace

Server::~Server() { Stop(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    Options options, std::vector<PostRoute> routes, std::vector<ReadyCheck> readiness,
    common::MetricsRegistry::Collector extra_metrics, std::vector<GetRoute> operator_routes,
    std::vector<OperatorRoute> page_routes) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = std::move(options);
  // The collectors read the server's own parts, which live as long as it does.
  Server* self_for_metrics = s.get();
  s->metrics_registry_.Add(
      [self_for_metrics](common::MetricsText& out) { self_for_metrics->metrics_.Collect(out); });
  s->metrics_registry_.Add(
      [self_for_metrics](common::MetricsText& out) { self_for_metrics->listener_->Collect(out); });
  s->metrics_registry_.Add(
      [self_for_metrics](common::MetricsText& out) { self_for_metrics->CollectOwnMetrics(out); });
  if (extra_metrics) s->metrics_registry_.Add(std::move(extra_metrics));
  const Options& o = s->options_;

  absl::StatusOr<std::shared_ptr<const CertPair>> pair =
      CertPair::Load(o.tls_cert_file, o.tls_key_file);
  if (!pair.ok()) return pair.status();
  s->certs_ = std::make_unique<CertStore>(*pair);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx || !ConfigureServerContext(*ctx, s->certs_.get(), o.client_ca_file)) {
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return absl::InvalidArgumentError("TLS setup failed (see the log for the OpenSSL error)");
  }
  std::vector<TlsRoute> tls_routes;
  Server* self = s.get();
  for (PostRoute& route : routes) {
    size_t metric = s->metrics_.AddRoute(route.path);
    // Counted and timed whichever thread answers.
    auto timed = [self, metric](Reply reply, std::chrono::steady_clock::time_point start) {
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      self->metrics_.Record(metric, reply.status, seconds);
      // Server-side time, so a client can tell our cost from the network's (benchmarks).
      return TlsReply{reply.status,
                      std::move(reply.body),
                      {{"Server-Timing", absl::StrCat("app;dur=", seconds * 1000.0)}}};
    };
    TlsRoute tls{route.path,
                 [timed, handler = std::move(route.handler)](absl::string_view body) {
                   auto start = std::chrono::steady_clock::now();
                   return timed(handler(body), start);
                 },
                 std::move(route.waits_on_io)};
    if (route.on_loop_first) {
      tls.on_loop_first = [timed, attempt = std::move(route.on_loop_first)](
                              absl::string_view body) -> std::optional<TlsReply> {
        auto start = std::chrono::steady_clock::now();
        std::optional<Reply> reply = attempt(body);
        if (!reply) return std::nullopt;
        return timed(*std::move(reply), start);
      };
    }
    tls_routes.push_back(std::move(tls));
  }
  std::vector<OperatorRoute> plain_routes;
  // Probes are answered on the listener's loop (they read atomics only); the rest queue for
  // the operator port's handler thread.
  plain_routes.push_back({"/healthz",
                          [] {
                            return OperatorReply{200, kText, "ok\n"};
                          },
                          /*quick=*/true});
  for (ReadyCheck& check : readiness) {
    plain_routes.push_back(
        {check.path,
         [self, ready = std::move(check.ready)] {
           bool ok = !self->stopping_.load() && (!ready || ready());
           return OperatorReply{ok ? 200 : 503, kText, ok ? "ok\n" : "not ready\n"};
         },
         /*quick=*/true});
  }
  for (GetRoute& route : operator_routes) {
    plain_routes.push_back(
        {route.path, [handler = std::move(route.handler)] {
           Reply reply = handler();
           return OperatorReply{reply.status, kJsonContentType, std::move(reply.body)};
         }});
  }
  for (OperatorRoute& route : page_routes) plain_routes.push_back(std::move(route));
  plain_routes.push_back({"/metrics", [self] {
                            return OperatorReply{200, "text/plain; version=0.0.4; charset=utf-8",
                                                 self->metrics_registry_.Render()};
                          }});
  absl::StatusOr<std::unique_ptr<Listener>> listener =
      Listener::Bind(ListenerOptions(o), ctx, std::move(tls_routes), std::move(plain_routes));
  if (!listener.ok()) return listener.status();
  s->tls_port_ = (*listener)->port();
  if (o.metrics_port >= 0) s->metrics_port_ = (*listener)->operator_port();
  s->listener_ = *std::move(listener);
  return s;
}

void Server::CollectOwnMetrics(common::MetricsText& out) const {
  std::shared_ptr<const CertPair> cert = certs_->Current();
  auto closed = [](const Listener::Stats& port, CloseReason r) {
    return port.closed[static_cast<size_t>(r)].load();
  };
  const Listener::Stats& tls = listener_->stats();
  out.Family("gpu_tenancy_tls_certificate_expiry_seconds", common::MetricsText::kGauge,
             "Unix time at which the serving certificate expires.");
  out.Sample("gpu_tenancy_tls_certificate_expiry_seconds", {}, cert ? cert->not_after_unix() : 0);
  out.Family("gpu_tenancy_request_deadline_expired_total", common::MetricsText::kCounter,
             "Connections closed for not delivering a request within their deadline (listener: "
             "tls is --request-deadline for the handshake and each request, operator is the "
             "operator port's, from accept to the end of the request head).");
  out.Sample(
      "gpu_tenancy_request_deadline_expired_total", {{"listener", "tls"}},
      closed(tls, CloseReason::kHandshakeDeadline) + closed(tls, CloseReason::kRequestDeadline));
  out.Sample("gpu_tenancy_request_deadline_expired_total", {{"listener", "operator"}},
             closed(listener_->operator_stats(), CloseReason::kRequestDeadline));
}

void Server::Start() {
  // Watching begins before the listeners answer, so a pair rotated as soon as the server is
  // ready is a change from the watcher's baseline.
  cert_watch_ = std::make_unique<FileWatcher>(
      std::vector<std::string>{options_.tls_cert_file, options_.tls_key_file},
      absl::ToChronoMilliseconds(options_.cert_poll_interval), [this] { ReloadCertificates(); });
  listener_->Start();
}

void Server::Stop() {
  if (stopping_.exchange(true)) return;
  if (options_.shutdown_delay > absl::ZeroDuration()) {
    // Callers that keep sending while the endpoint is being removed get Connection: close
    // with each reply, so by the end of the delay few idle connections are left to close.
    if (listener_) listener_->Drain();
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(options_.shutdown_delay));
  }
  cert_watch_.reset();
  // Closes the listening socket and idle connections; requests in flight finish first.
  if (listener_) listener_->Stop();
}

void Server::ReloadCertificates() {
  absl::StatusOr<std::shared_ptr<const CertPair>> pair =
      CertPair::Load(options_.tls_cert_file, options_.tls_key_file);
  if (!pair.ok()) {
    common::Log(common::LogLevel::kWarn, "certificate reload rejected; keeping the current pair",
                {{"reason", pair.status().message()}});
    return;
  }
  certs_->Swap(*std::move(pair));
  common::Log(common::LogLevel::kInfo, "certificate reloaded", {{"cert", options_.tls_cert_file}});
}

}  // namespace server
