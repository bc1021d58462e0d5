#include "server/listener.h"

#include <sys/resource.h>

#include <algorithm>
#include <latch>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "server/event_loop.h"

namespace server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

namespace {

// Descriptors kept free for everything besides the TLS port's connections (files, the API
// client, the operator port's connections).
constexpr size_t kReservedDescriptors = 256;

// Raises the descriptor limit to its hard maximum and returns how many connections fit in it.
size_t ConnectionsThatFit(size_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted + kReservedDescriptors) {
    return wanted;
  }
  size_t fit = limit.rlim_cur > 2 * kReservedDescriptors ? limit.rlim_cur - kReservedDescriptors
                                                         : limit.rlim_cur / 2;
  // Giving up only the reserve (a limit equal to the default maximum) is what the reserve is
  // for, not a problem to warn about; a limit well below the maximum is.
  const bool material = fit + kReservedDescriptors < wanted;
  common::Log(material ? common::LogLevel::kWarn : common::LogLevel::kInfo,
              material ? "max connections lowered to fit the descriptor limit"
                       : "max connections fitted to the descriptor limit",
              {{"wanted", absl::StrCat(wanted)},
               {"nofile", absl::StrCat(limit.rlim_cur)},
               {"max_connections", absl::StrCat(fit)}});
  return fit;
}

size_t Share(size_t total, size_t loops) {
  return std::max<size_t>(1, (total + loops - 1) / loops);
}

absl::StatusOr<tcp::endpoint> Resolve(const std::string& host, int port) {
  ErrorCode ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) {
    asio::io_context resolving;
    tcp::resolver resolver(resolving);
    auto found = resolver.resolve(host, "", ec);
    if (ec || found.empty()) return absl::UnavailableError(absl::StrCat("cannot resolve ", host));
    address = found.begin()->endpoint().address();
  }
  return tcp::endpoint(address, static_cast<uint16_t>(port));
}

}  // namespace

class Listener::Impl : public ListenerShared {
 public:
  ~Impl() {
    loops.clear();  // before the context they use
    SSL_CTX_free(ssl);
  }
  std::vector<std::unique_ptr<EventLoop>> loops;  // the TLS port's, then the operator port's
  EventLoop* tls_loop = nullptr;                  // the one that accepts on the TLS port, or null
  EventLoop* operator_loop = nullptr;  // the one that accepts on the operator port, or null
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
};

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Listener::~Listener() { Stop(); }

absl::StatusOr<std::unique_ptr<Listener>> Listener::Bind(
    Options options, SSL_CTX* ctx, std::vector<TlsRoute> routes,
    std::vector<OperatorRoute> operator_routes) {
  auto impl = std::make_unique<Impl>();
  impl->ssl = ctx;
  impl->routes = std::move(routes);
  const bool tls = options.port >= 0;
  if (tls) options.max_connections = ConnectionsThatFit(options.max_connections);
  options.io_threads = std::max(1, options.io_threads);
  if (options.operator_port) {
    impl->operators = std::make_unique<OperatorShared>();
    impl->operators->options = *options.operator_port;
    impl->operators->routes = std::move(operator_routes);
  }
  impl->options = std::move(options);
  const Options& o = impl->options;

  // Each TLS loop enforces an equal share of the limits on the connections dealt to it. The
  // operator port has a loop of its own, with all of its limits.
  size_t n = tls ? static_cast<size_t>(o.io_threads) : 0;
  ConnectionTable::Limits tls_share{Share(o.max_connections, std::max<size_t>(n, 1)),
                                    Share(o.max_connections_per_peer, std::max<size_t>(n, 1)),
                                    o.idle_settled};
  size_t operator_total = o.operator_port ? o.operator_port->max_connections : 1;
  ConnectionTable::Limits operator_all{operator_total, operator_total};
  for (size_t i = 0; i < n; ++i) {
    impl->loops.push_back(std::make_unique<EventLoop>(*impl, tls_share, operator_all));
  }
  if (tls) {
    impl->tls_loop = impl->loops.front().get();
    absl::StatusOr<tcp::endpoint> at = Resolve(o.host, o.port);
    if (!at.ok()) return at.status();
    absl::Status listening = impl->tls_loop->Listen(Port::kTls, *at);
    if (!listening.ok()) return listening;
  }
  if (o.operator_port) {
    impl->loops.push_back(std::make_unique<EventLoop>(*impl, tls_share, operator_all));
    impl->operator_loop = impl->loops.back().get();
    absl::StatusOr<tcp::endpoint> at = Resolve(o.operator_port->host, o.operator_port->port);
    if (!at.ok()) return at.status();
    absl::Status listening = impl->operator_loop->Listen(Port::kOperator, *at);
    if (!listening.ok()) return listening;
  }
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::BindOperatorPort(
    OperatorPortOptions options, std::vector<OperatorRoute> routes) {
  Options o;
  o.port = -1;
  o.io_threads = 1;
  o.operator_port = std::move(options);
  return Bind(std::move(o), nullptr, {}, std::move(routes));
}

namespace {

// Names each of a new pool's `threads` threads: one job per thread, every job waiting until all
// have started, so no thread can take two of them. The latch is shared: the last job may still
// be waking the others when this returns.
void NameEveryThread(boost::asio::thread_pool& pool, size_t threads, const char* name) {
  auto started = std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(threads));
  for (size_t i = 0; i < threads; ++i) {
    boost::asio::post(pool, [started, name] {
      common::NameThisThread(name);
      started->arrive_and_wait();
    });
  }
  started->wait();
}

}  // namespace

void Listener::Start() {
  if (impl_->started.exchange(true)) return;
  if (impl_->options.port >= 0) {
    const size_t workers = static_cast<size_t>(std::max(1, impl_->options.worker_threads));
    NameEveryThread(impl_->workers.emplace(workers), workers, "worker");
  }
  if (impl_->operators) NameEveryThread(impl_->operators->handler.emplace(1), 1, "op-handler");
  // The TLS loops deal the TLS port's connections among themselves; the operator loop keeps
  // its own.
  std::vector<EventLoop*> tls_loops;
  for (auto& loop : impl_->loops) {
    if (loop.get() != impl_->operator_loop) tls_loops.push_back(loop.get());
  }
  for (auto& loop : impl_->loops) {
    if (loop.get() == impl_->tls_loop) {
      loop->Start(tls_loops);
    } else if (loop.get() == impl_->operator_loop) {
      loop->Start({impl_->operator_loop});
    } else {
      loop->Start({});
    }
  }
}

void Listener::Drain() { impl_->stopping.store(true); }

void Listener::Stop() {
  if (impl_->stopped.exchange(true) || !impl_->started.load()) return;
  impl_->stopping.store(true);
  for (auto& loop : impl_->loops) loop->RequestStop();  // all at once: none keeps accepting
  for (auto& loop : impl_->loops) loop->Join();
  if (impl_->workers) impl_->workers->join();
  if (impl_->operators) impl_->operators->handler->join();
}

int Listener::port() const { return impl_->tls_loop ? impl_->tls_loop->port(Port::kTls) : -1; }
int Listener::operator_port() const {
  return impl_->operator_loop ? impl_->operator_loop->port(Port::kOperator) : -1;
}
const Listener::Stats& Listener::stats() const { return impl_->stats; }
const Listener::Stats& Listener::operator_stats() const {
  static const Stats* const kNone = new Stats();
  return impl_->operators ? impl_->operators->stats : *kNone;
}

absl::string_view Listener::ReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kPeerClosed:
      return "peer_closed";
    case CloseReason::kHandshakeFailed:
      return "handshake_failed";
    case CloseReason::kHandshakeDeadline:
      return "handshake_deadline";
    case CloseReason::kRequestDeadline:
      return "request_deadline";
    case CloseReason::kIdleTimeout:
      return "idle_timeout";
    case CloseReason::kReplyDeadline:
      return "reply_deadline";
    case CloseReason::kBadRequest:
      return "bad_request";
    case CloseReason::kDone:
      return "done";
    case CloseReason::kEvictedPerPeer:
      return "evicted_per_ip";
    case CloseReason::kEvictedTotal:
      return "evicted_total";
    case CloseReason::kEvictedIdle:
      return "evicted_idle";
    case CloseReason::kRefused:
      return "refused";
    case CloseReason::kShutdown:
      return "shutdown";
    case CloseReason::kCount:
      break;
  }
  return "unknown";
}

absl::string_view Listener::StateName(ConnectionState state) {
  switch (state) {
    case ConnectionState::kHandshake:
      return "handshake";
    case ConnectionState::kIdle:
      return "idle";
    case ConnectionState::kReading:
      return "reading";
    case ConnectionState::kInFlight:
      return "in_flight";
    case ConnectionState::kWriting:
      return "writing";
    case ConnectionState::kCount:
      break;
  }
  return "unknown";
}

namespace {

// One port's series: `prefix` is gpu_tenancy_tls or gpu_tenancy_operator, `what` names the
// port in the help texts, `queue` the pool its complete requests wait for.
void CollectPort(common::MetricsText& out, absl::string_view prefix, absl::string_view what,
                 absl::string_view queue, const Listener::Stats& s, size_t total, size_t per_ip) {
  const std::string open = absl::StrCat(prefix, "_connections");
  out.Family(open, common::MetricsText::kGauge,
             absl::StrCat("Open connections on the ", what, ", by what they are doing."));
  for (size_t i = 0; i < s.open.size(); ++i) {
    out.Sample(open, {{"state", Listener::StateName(static_cast<ConnectionState>(i))}},
               s.open[i].load());
  }
  const std::string closed = absl::StrCat(prefix, "_connections_closed_total");
  out.Family(closed, common::MetricsText::kCounter,
             absl::StrCat("Connections the ", what, " closed, by reason."));
  for (size_t i = 0; i < s.closed.size(); ++i) {
    out.Sample(closed, {{"reason", Listener::ReasonName(static_cast<CloseReason>(i))}},
               s.closed[i].load());
  }
  const std::string limit = absl::StrCat(prefix, "_connection_limit");
  out.Family(limit, common::MetricsText::kGauge,
             absl::StrCat("Connections the ", what, " holds at most, in all and per address."));
  out.Sample(limit, {{"scope", "total"}}, total);
  out.Sample(limit, {{"scope", "per_ip"}}, per_ip);
  const std::string depth = absl::StrCat(prefix, "_", queue, "_queue_depth");
  out.Family(depth, common::MetricsText::kGauge,
             absl::StrCat("Complete requests on the ", what, " waiting for its ", queue, "."));
  out.Sample(depth, {}, s.queued.load());
  const std::string rejected = absl::StrCat(prefix, "_requests_rejected_total");
  out.Family(rejected, common::MetricsText::kCounter,
             absl::StrCat("Requests on the ", what, " answered 503 at once because its ", queue,
                          " queue was full."));
  out.Sample(rejected, {}, s.rejected_busy.load());
}

}  // namespace

void Listener::Collect(common::MetricsText& out) const {
  const Options& o = impl_->options;
  if (o.port >= 0) {
    CollectPort(out, "gpu_tenancy_tls", "TLS port", "worker", impl_->stats, o.max_connections,
                o.max_connections_per_peer);
  }
  if (o.operator_port) {
    CollectPort(out, "gpu_tenancy_operator", "operator port", "handler", impl_->operators->stats,
                o.operator_port->max_connections, o.operator_port->max_connections);
  }
}

}  // namespace server
