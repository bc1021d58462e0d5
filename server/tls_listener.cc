#include "server/tls_listener.h"

#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/tls_loop.h"

namespace server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

namespace {

// Descriptors kept free for everything besides client connections (files, the API client,
// the operator listener).
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
  common::Log(common::LogLevel::kWarn, "max connections lowered to fit the descriptor limit",
              {{"wanted", absl::StrCat(wanted)},
               {"nofile", absl::StrCat(limit.rlim_cur)},
               {"max_connections", absl::StrCat(fit)}});
  return fit;
}

size_t Share(size_t total, size_t loops) {
  return std::max<size_t>(1, (total + loops - 1) / loops);
}

}  // namespace

class TlsListener::Impl : public TlsShared {
 public:
  ~Impl() {
    loops.clear();  // before the context they use
    SSL_CTX_free(ssl);
  }
  std::vector<std::unique_ptr<TlsLoop>> loops;
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
};

TlsListener::TlsListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsListener::~TlsListener() { Stop(); }

absl::StatusOr<std::unique_ptr<TlsListener>> TlsListener::Bind(Options options, SSL_CTX* ctx,
                                                               std::vector<TlsRoute> routes) {
  auto impl = std::make_unique<Impl>();
  impl->ssl = ctx;
  impl->routes = std::move(routes);
  options.max_connections = ConnectionsThatFit(options.max_connections);
  options.io_threads = std::max(1, options.io_threads);
  impl->options = std::move(options);
  const Options& o = impl->options;

  ErrorCode ec;
  asio::ip::address address = asio::ip::make_address(o.host, ec);
  if (ec) {
    asio::io_context resolving;
    tcp::resolver resolver(resolving);
    auto found = resolver.resolve(o.host, "", ec);
    if (ec || found.empty()) return absl::UnavailableError(absl::StrCat("cannot resolve ", o.host));
    address = found.begin()->endpoint().address();
  }
  // Each loop enforces an equal share of the limits on the connections dealt to it.
  size_t n = static_cast<size_t>(o.io_threads);
  ConnectionTable::Limits share{Share(o.max_connections, n), Share(o.max_connections_per_peer, n),
                                o.idle_settled};
  for (size_t i = 0; i < n; ++i) impl->loops.push_back(std::make_unique<TlsLoop>(*impl, share));
  absl::Status listening =
      impl->loops.front()->Listen(tcp::endpoint(address, static_cast<uint16_t>(o.port)));
  if (!listening.ok()) return listening;
  return std::unique_ptr<TlsListener>(new TlsListener(std::move(impl)));
}

void TlsListener::Start() {
  if (impl_->started.exchange(true)) return;
  impl_->workers.emplace(static_cast<size_t>(std::max(1, impl_->options.worker_threads)));
  std::vector<TlsLoop*> all;
  for (auto& loop : impl_->loops) all.push_back(loop.get());
  for (TlsLoop* loop : all) loop->Start(loop == all.front() ? all : std::vector<TlsLoop*>{});
}

void TlsListener::Drain() { impl_->stopping.store(true); }

void TlsListener::Stop() {
  if (impl_->stopped.exchange(true) || !impl_->started.load()) return;
  impl_->stopping.store(true);
  for (auto& loop : impl_->loops) loop->RequestStop();  // all at once: none keeps accepting
  for (auto& loop : impl_->loops) loop->Join();
  impl_->workers->join();
}

int TlsListener::port() const { return impl_->loops.front()->port(); }
const TlsListener::Stats& TlsListener::stats() const { return impl_->stats; }

absl::string_view TlsListener::ReasonName(CloseReason reason) {
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

absl::string_view TlsListener::StateName(ConnectionState state) {
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

void TlsListener::Collect(common::MetricsText& out) const {
  const Stats& s = impl_->stats;
  out.Family("gpu_tenancy_tls_connections", common::MetricsText::kGauge,
             "Open connections on the TLS listener, by what they are doing.");
  for (size_t i = 0; i < s.open.size(); ++i) {
    out.Sample("gpu_tenancy_tls_connections",
               {{"state", StateName(static_cast<ConnectionState>(i))}}, s.open[i].load());
  }
  out.Family("gpu_tenancy_tls_connections_closed_total", common::MetricsText::kCounter,
             "Connections the TLS listener closed, by reason.");
  for (size_t i = 0; i < s.closed.size(); ++i) {
    out.Sample("gpu_tenancy_tls_connections_closed_total",
               {{"reason", ReasonName(static_cast<CloseReason>(i))}}, s.closed[i].load());
  }
  const Options& o = impl_->options;
  out.Family("gpu_tenancy_tls_connection_limit", common::MetricsText::kGauge,
             "Connections the TLS listener holds at most, in all and per client address.");
  out.Sample("gpu_tenancy_tls_connection_limit", {{"scope", "total"}}, o.max_connections);
  out.Sample("gpu_tenancy_tls_connection_limit", {{"scope", "per_ip"}}, o.max_connections_per_peer);
  out.Family("gpu_tenancy_tls_worker_queue_depth", common::MetricsText::kGauge,
             "Complete requests waiting for a worker.");
  out.Sample("gpu_tenancy_tls_worker_queue_depth", {}, s.queued.load());
  out.Family("gpu_tenancy_tls_requests_rejected_total", common::MetricsText::kCounter,
             "Requests answered 503 at once because every worker was busy and the queue was "
             "full.");
  out.Sample("gpu_tenancy_tls_requests_rejected_total", {}, s.rejected_busy.load());
}

}  // namespace server
