#include "server/server.h"

#include <chrono>

#include <httplib.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/extender_codec.h"
#include "common/log.h"
#include "server/file_watch.h"
#include "server/operator_listener.h"
#include "server/request_deadline.h"

namespace server {
namespace {

constexpr char kJson[] = "application/json";
constexpr char kText[] = "text/plain";

void SendError(httplib::Response& res, int status, absl::string_view message) {
  res.status = status;
  res.set_content(common::EncodeHttpError(message), kJson);
}

bool IsJsonContentType(const httplib::Request& req) {
  std::string type = req.get_header_value("Content-Type");
  if (type.empty()) return false;
  absl::string_view media = absl::string_view(type).substr(0, type.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(media), kJson);
}

void ApplyCommonSettings(httplib::Server& s, const Options& o) {
  s.set_tcp_nodelay(true);  // without it every keep-alive reply waits ~40 ms on delayed ACK
  s.set_keep_alive_max_count(o.keep_alive_max_requests);
  s.set_keep_alive_timeout(o.keep_alive_timeout_seconds);
  s.set_read_timeout(o.read_timeout_seconds, 0);
  s.set_write_timeout(o.write_timeout_seconds, 0);
  s.set_payload_max_length(o.max_body_bytes);
  int threads = o.worker_threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res,
                             std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    common::Log(common::LogLevel::kError, "handler threw", {{"path", req.path}, {"error", what}});
    SendError(res, 500, "internal error");
  });
  // Replies httplib produces itself (404, 413, 400 on bad framing) get a JSON reason too.
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404: SendError(res, 404, "no such route"); break;
      case 405: SendError(res, 405, "method not allowed"); break;
      case 413: SendError(res, 413, "request body too large"); break;
      default: SendError(res, res.status, absl::StrCat("HTTP ", res.status)); break;
    }
  });
}

absl::StatusOr<int> Bind(httplib::Server& s, const std::string& host, int port) {
  if (port == 0) {
    int bound = s.bind_to_any_port(host);
    if (bound <= 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":0"));
    return bound;
  }
  if (!s.bind_to_port(host, port)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port));
  }
  return port;
}

}  // namespace

Server::~Server() { Stop(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    Options options, std::vector<PostRoute> routes, std::vector<ReadyCheck> readiness,
    std::function<void(std::string&)> extra_metrics, std::vector<GetRoute> operator_routes) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = std::move(options);
  s->extra_metrics_ = std::move(extra_metrics);
  const Options& o = s->options_;

  absl::StatusOr<std::shared_ptr<const CertPair>> pair =
      CertPair::Load(o.tls_cert_file, o.tls_key_file);
  if (!pair.ok()) return pair.status();
  s->certs_ = std::make_unique<CertStore>(*pair);
  CertStore* store = s->certs_.get();
  std::string client_ca = o.client_ca_file;
  s->deadlines_ = std::make_unique<RequestDeadlines>(
      std::chrono::milliseconds(o.request_deadline_millis),
      std::chrono::seconds(o.keep_alive_timeout_seconds));
  RequestDeadlines* deadlines = s->deadlines_.get();
  auto tls = std::make_unique<httplib::SSLServer>([store, client_ca, deadlines](SSL_CTX& ctx) {
    if (!ConfigureServerContext(ctx, store, client_ca)) return false;
    deadlines->Attach(ctx);
    return true;
  });
  if (!tls->is_valid()) {
    return absl::InvalidArgumentError("TLS setup failed (see the log for the OpenSSL error)");
  }
  ApplyCommonSettings(*tls, o);
  // Every reply (ours, or httplib's own 4xx) starts the wait for the next request.
  tls->set_logger([deadlines](const httplib::Request& req, const httplib::Response&) {
    if (req.ssl) deadlines->Rearm(req.ssl);
  });
  for (PostRoute& route : routes) {
    size_t metric = s->metrics_.AddRoute(route.path);
    Server* self = s.get();
    tls->Post(route.path, [self, metric, handler = std::move(route.handler)](
                              const httplib::Request& req, httplib::Response& res) {
      if (req.ssl) self->deadlines_->Disarm(req.ssl);
      auto start = std::chrono::steady_clock::now();
      if (!IsJsonContentType(req)) {
        SendError(res, 415, "Content-Type must be application/json");
      } else {
        Reply reply = handler(req.body);
        res.status = reply.status;
        res.set_content(std::move(reply.body), kJson);
      }
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      self->metrics_.Record(metric, res.status, seconds);
      // Server-side time, so a client can tell our cost from the network's (benchmarks).
      res.set_header("Server-Timing", absl::StrCat("app;dur=", seconds * 1000.0));
    });
  }
  absl::StatusOr<int> tls_port = Bind(*tls, o.listen_host, o.listen_port);
  if (!tls_port.ok()) return tls_port.status();
  s->tls_port_ = *tls_port;
  s->tls_ = std::move(tls);

  if (o.metrics_port >= 0) {
    Server* self = s.get();
    std::vector<OperatorRoute> plain_routes;
    // Probes are answered on the listener's loop (they read atomics only); the rest queue for
    // its handler thread.
    plain_routes.push_back(
        {"/healthz", [] { return OperatorReply{200, kText, "ok\n"}; }, /*quick=*/true});
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
      plain_routes.push_back({route.path, [handler = std::move(route.handler)] {
                                Reply reply = handler();
                                return OperatorReply{reply.status, kJson, std::move(reply.body)};
                              }});
    }
    plain_routes.push_back(
        {"/metrics", [self] {
           std::string out;
           self->metrics_.AppendPrometheus(out);
           std::shared_ptr<const CertPair> cert = self->certs_->Current();
           absl::StrAppend(
               &out,
               "# HELP gpu_tenancy_tls_certificate_expiry_seconds Unix time at which the "
               "serving certificate expires.\n"
               "# TYPE gpu_tenancy_tls_certificate_expiry_seconds gauge\n"
               "gpu_tenancy_tls_certificate_expiry_seconds ",
               cert ? cert->not_after_unix() : 0, "\n",
               "# HELP gpu_tenancy_request_deadline_expired_total Connections closed for "
               "not delivering a request within their deadline (listener: tls is "
               "--request-deadline, operator is this plain listener's).\n"
               "# TYPE gpu_tenancy_request_deadline_expired_total counter\n"
               "gpu_tenancy_request_deadline_expired_total{listener=\"tls\"} ",
               self->deadlines_->expired(), "\n",
               "gpu_tenancy_request_deadline_expired_total{listener=\"operator\"} ",
               self->operator_listener_->expired(), "\n");
           if (self->extra_metrics_) self->extra_metrics_(out);
           return OperatorReply{200, "text/plain; version=0.0.4; charset=utf-8", std::move(out)};
         }});
    absl::StatusOr<std::unique_ptr<OperatorListener>> plain = OperatorListener::Bind(
        o.metrics_host, o.metrics_port, std::move(plain_routes), OperatorListener::Options{});
    if (!plain.ok()) return plain.status();
    s->metrics_port_ = (*plain)->port();
    s->operator_listener_ = *std::move(plain);
  }
  return s;
}

void Server::Start() {
  tls_thread_ = std::thread([this] { tls_->listen_after_bind(); });
  if (operator_listener_) operator_listener_->Start();
  cert_watch_ = std::make_unique<FileWatcher>(
      std::vector<std::string>{options_.tls_cert_file, options_.tls_key_file},
      std::chrono::milliseconds(options_.cert_poll_millis), [this] { ReloadCertificates(); });
}

void Server::Stop() {
  if (stopping_.exchange(true)) return;
  if (options_.shutdown_delay_millis > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.shutdown_delay_millis));
  }
  cert_watch_.reset();
  // httplib's stop() closes the listening socket; the worker pool then drains the requests in
  // flight before listen_after_bind() returns.
  if (tls_) tls_->stop();
  if (tls_thread_.joinable()) tls_thread_.join();
  if (operator_listener_) operator_listener_->Stop();
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
