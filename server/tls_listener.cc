#include "server/tls_listener.h"

#include <sys/resource.h>

#include <optional>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/extender_codec.h"
#include "common/log.h"
#include "server/connection_table.h"
#include "server/tls_socket.h"

namespace server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

namespace {

// After a reply that closes the connection, how long the client gets to take it and say
// goodbye before the socket is closed (closing with unread input would send a reset, which
// can destroy the reply in the client's receive buffer).
constexpr std::chrono::milliseconds kLinger{1000};
// Descriptors kept free for everything besides client connections (files, the API client,
// the operator listener).
constexpr size_t kReservedDescriptors = 256;

constexpr auto kAwait = asio::use_awaitable;
using AwaitToken = asio::use_awaitable_t<>;

absl::string_view View(beast::string_view s) { return absl::string_view(s.data(), s.size()); }

TlsReply ErrorReply(int status, absl::string_view message) {
  return TlsReply{status, common::EncodeHttpError(message), {}};
}

bool IsJsonContentType(absl::string_view type) {
  absl::string_view media = type.substr(0, type.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(media), "application/json");
}

std::string PeerKey(const tcp::endpoint& endpoint) {
  asio::ip::address a = endpoint.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return a.to_string();
}

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

// Beast's read errors: the reply they deserve, or nullopt for a connection that just ended.
std::optional<TlsReply> ReplyToReadError(const ErrorCode& ec, const TlsListener::Options& o) {
  if (ec == http::error::header_limit) {
    return ErrorReply(431,
                      absl::StrCat("request head too large (over ", o.max_header_bytes, " bytes)"));
  }
  if (ec == http::error::body_limit) {
    return ErrorReply(413,
                      absl::StrCat("request body too large (over ", o.max_body_bytes, " bytes)"));
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return ErrorReply(400, absl::StrCat("malformed request: ", ec.message()));
  }
  return std::nullopt;  // transport: reset, TLS error, closed by us
}

}  // namespace

struct Connection {
  Connection(tcp::socket s, uint64_t connection_id)
      : socket(std::move(s)), timer(socket.get_executor()), id(connection_id) {}
  tcp::socket& lowest() { return tls ? tls->socket() : socket; }

  tcp::socket socket;  // moved into `tls` when the client's first byte arrives
  std::optional<TlsSocket> tls;
  asio::steady_timer timer;  // the watchdog's
  Clock::time_point deadline = Clock::time_point::max();
  CloseReason on_deadline = CloseReason::kIdleTimeout;
  ConnectionState state = ConnectionState::kHandshake;
  bool closed = false;
  uint64_t id;
};

class TlsListener::Impl {
 public:
  Impl(Options options, SSL_CTX* ctx, std::vector<TlsRoute> routes)
      : options_(std::move(options)),
        ssl_(ctx),
        acceptor_(loop_),
        drain_timer_(loop_),
        routes_(std::move(routes)),
        table_({options_.max_connections, options_.max_connections_per_peer}) {}

  ~Impl() { SSL_CTX_free(ssl_); }
  absl::Status Bind();
  void Start();
  void Stop();
  int port() const { return port_; }
  const Stats& stats() const { return stats_; }
  const Options& options() const { return options_; }

 private:
  asio::awaitable<void> Accept();
  asio::awaitable<void> Watch(std::shared_ptr<Connection> c);
  asio::awaitable<void> Serve(std::shared_ptr<Connection> c);
  // One request and its reply; false when the connection is closed (or to be).
  asio::awaitable<bool> ServeOne(Connection& c, beast::flat_buffer& buffer, size_t served);
  // Writes the reply; without keep-alive, lingers and closes the connection as `closing`.
  asio::awaitable<bool> Write(Connection& c, TlsReply reply, unsigned version, bool keep_alive,
                              CloseReason closing);
  // Answers `reply` (if any) and closes, letting the client read it first.
  asio::awaitable<bool> Refuse(Connection& c, std::optional<TlsReply> reply, unsigned version);
  asio::awaitable<void> Linger(Connection& c, CloseReason reason);
  asio::awaitable<TlsReply> RunOnWorker(const TlsRoute& route, std::string body);
  void BeginStop();

  void Arm(Connection& c, std::chrono::milliseconds in, CloseReason reason);
  void Disarm(Connection& c) { c.deadline = Clock::time_point::max(); }
  void SetState(Connection& c, ConnectionState state);
  void Close(Connection& c, CloseReason reason);
  const TlsRoute* FindRoute(absl::string_view target) const;

  Options options_;
  asio::io_context loop_{1};
  SSL_CTX* ssl_;  // our reference, dropped in ~Impl (each SSL holds its own)
  tcp::acceptor acceptor_;
  asio::steady_timer drain_timer_;
  std::vector<TlsRoute> routes_;
  std::optional<asio::thread_pool> workers_;
  std::atomic<int64_t> in_pool_{0};  // queued or running on a worker
  // Loop thread only:
  ConnectionTable table_;
  absl::flat_hash_map<uint64_t, Connection*> live_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;

  Stats stats_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
};

absl::Status TlsListener::Impl::Bind() {
  options_.max_connections = ConnectionsThatFit(options_.max_connections);
  table_ = ConnectionTable({options_.max_connections, options_.max_connections_per_peer});
  ErrorCode ec;
  asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) {
    tcp::resolver resolver(loop_);
    auto found = resolver.resolve(options_.host, "", ec);
    if (ec || found.empty()) {
      return absl::UnavailableError(absl::StrCat("cannot resolve ", options_.host));
    }
    address = found.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port));
  auto failed = [&](const char* step) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.host, ":",
                                               options_.port, " (", step, ": ", ec.message(), ")"));
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return failed("open");
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return failed("SO_REUSEADDR");
  acceptor_.bind(endpoint, ec);
  if (ec) return failed("bind");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return failed("listen");
  port_ = acceptor_.local_endpoint(ec).port();
  return absl::OkStatus();
}

void TlsListener::Impl::Start() {
  if (started_.exchange(true)) return;
  workers_.emplace(static_cast<size_t>(std::max(1, options_.worker_threads)));
  asio::co_spawn(loop_, Accept(), asio::detached);
  thread_ = std::thread([this] { loop_.run(); });
}

void TlsListener::Impl::Stop() {
  if (stopped_.exchange(true)) return;
  if (!started_.load()) return;
  asio::post(loop_, [this] { BeginStop(); });
  thread_.join();
  workers_->join();
}

void TlsListener::Impl::BeginStop() {
  stopping_ = true;
  ErrorCode ec;
  acceptor_.close(ec);
  // Connections with no request under way go now; the rest finish it (replies say
  // Connection: close) or are cut off at the drain timeout.
  std::vector<Connection*> quiet;
  for (const auto& [id, c] : live_) {
    if (c->state == ConnectionState::kHandshake || c->state == ConnectionState::kIdle) {
      quiet.push_back(c);
    }
  }
  for (Connection* c : quiet) Close(*c, CloseReason::kShutdown);
  if (live_.empty()) return;
  drain_timer_.expires_after(options_.drain_timeout);
  drain_timer_.async_wait([this](const ErrorCode&) {
    std::vector<Connection*> left;
    for (const auto& [id, c] : live_) left.push_back(c);
    for (Connection* c : left) Close(*c, CloseReason::kShutdown);
  });
}

void TlsListener::Impl::Arm(Connection& c, std::chrono::milliseconds in, CloseReason reason) {
  c.deadline = Clock::now() + in;
  c.on_deadline = reason;
  // The watchdog sleeps until the old deadline; wake it only when the new one is sooner.
  if (c.deadline < c.timer.expiry()) c.timer.cancel();
}

void TlsListener::Impl::SetState(Connection& c, ConnectionState state) {
  stats_.open[static_cast<size_t>(c.state)].fetch_sub(1, std::memory_order_relaxed);
  stats_.open[static_cast<size_t>(state)].fetch_add(1, std::memory_order_relaxed);
  c.state = state;
}

void TlsListener::Impl::Close(Connection& c, CloseReason reason) {
  if (c.closed) return;
  c.closed = true;
  stats_.closed[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  stats_.open[static_cast<size_t>(c.state)].fetch_sub(1, std::memory_order_relaxed);
  table_.Remove(c.id);
  live_.erase(c.id);
  ErrorCode ec;
  c.lowest().close(ec);  // ends every pending operation on it
  c.timer.cancel();
  if (stopping_ && live_.empty()) drain_timer_.cancel();
}

const TlsRoute* TlsListener::Impl::FindRoute(absl::string_view target) const {
  absl::string_view path = target.substr(0, target.find('?'));
  for (const TlsRoute& r : routes_) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

asio::awaitable<void> TlsListener::Impl::Accept() {
  asio::steady_timer backoff(loop_);
  while (!stopping_) {
    ErrorCode ec;
    tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(kAwait, ec));
    if (stopping_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors (or another transient failure): retry shortly instead of spinning.
      common::Log(common::LogLevel::kWarn, "accept failed", {{"error", ec.message()}});
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(asio::redirect_error(kAwait, ec));
      continue;
    }
    tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) continue;  // already gone
    socket.set_option(tcp::no_delay(true), ec);  // else each keep-alive reply waits on delayed ACK
    uint64_t id = next_id_++;
    ConnectionTable::Admission admission = table_.Admit(id, PeerKey(peer));
    for (const ConnectionTable::Eviction& e : admission.evict) {
      auto it = live_.find(e.id);
      if (it == live_.end()) continue;
      Close(*it->second, e.reason == ConnectionTable::EvictReason::kPerPeerLimit
                             ? CloseReason::kEvictedPerPeer
                             : CloseReason::kEvictedTotal);
    }
    if (!admission.admitted) {
      stats_.closed[static_cast<size_t>(CloseReason::kRefused)].fetch_add(1);
      continue;  // the socket closes here
    }
    auto c = std::make_shared<Connection>(std::move(socket), id);
    live_[id] = c.get();
    stats_.open[static_cast<size_t>(ConnectionState::kHandshake)].fetch_add(1);
    asio::co_spawn(loop_, Watch(c), asio::detached);
    // Our code does not throw, but an allocation can: the connection must not outlive that.
    asio::co_spawn(loop_, Serve(c), [this, c](std::exception_ptr e) {
      if (!e) return;
      common::Log(common::LogLevel::kError, "connection failed unexpectedly");
      Close(*c, CloseReason::kPeerClosed);
    });
  }
}

asio::awaitable<void> TlsListener::Impl::Watch(std::shared_ptr<Connection> c) {
  while (!c->closed) {
    // Disarmed means "not now": a far wake-up rather than time_point::max, which timer
    // arithmetic would have to saturate.
    c->timer.expires_at(std::min(c->deadline, Clock::now() + std::chrono::hours(1)));
    ErrorCode ec;
    co_await c->timer.async_wait(asio::redirect_error(kAwait, ec));
    if (!c->closed && Clock::now() >= c->deadline) Close(*c, c->on_deadline);
  }
}

asio::awaitable<void> TlsListener::Impl::Serve(std::shared_ptr<Connection> c) {
  Arm(*c, options_.request_deadline, CloseReason::kHandshakeDeadline);
  ErrorCode ec;
  // No TLS state until the client sends something: a silent connection stays a bare socket.
  co_await c->socket.async_wait(tcp::socket::wait_read, asio::redirect_error(kAwait, ec));
  if (c->closed) co_return;
  if (ec) {
    Close(*c, CloseReason::kPeerClosed);
    co_return;
  }
  c->tls.emplace(std::move(c->socket), ssl_);
  co_await c->tls->async_handshake(asio::redirect_error(kAwait, ec));
  if (c->closed) co_return;
  if (ec) {
    Close(*c, CloseReason::kHandshakeFailed);
    co_return;
  }
  beast::flat_buffer buffer;
  size_t served = 0;
  while (co_await ServeOne(*c, buffer, served)) ++served;
  Close(*c, CloseReason::kDone);  // a no-op when ServeOne closed it already
}

asio::awaitable<bool> TlsListener::Impl::ServeOne(Connection& c, beast::flat_buffer& buffer,
                                                  size_t served) {
  ErrorCode ec;
  if (buffer.size() == 0 && !c.tls->HasPending()) {
    if (stopping_) {
      Close(c, CloseReason::kShutdown);
      co_return false;
    }
    // Between requests a connection holds no buffer at all: wait for the socket, not a read.
    buffer = beast::flat_buffer();
    SetState(c, ConnectionState::kIdle);
    table_.MarkEvictable(c.id);
    Arm(c, options_.idle_timeout, CloseReason::kIdleTimeout);
    co_await c.lowest().async_wait(tcp::socket::wait_read, asio::redirect_error(kAwait, ec));
    if (c.closed) co_return false;
    if (ec) {
      Close(c, CloseReason::kPeerClosed);
      co_return false;
    }
  }
  // The request has begun: from here its head and body get request_deadline in all.
  SetState(c, ConnectionState::kReading);
  table_.MarkEvictable(c.id);
  Arm(c, options_.request_deadline, CloseReason::kRequestDeadline);
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
  parser.body_limit(options_.max_body_bytes);
  co_await http::async_read_header(*c.tls, buffer, parser, asio::redirect_error(kAwait, ec));
  if (c.closed) co_return false;
  if (ec) co_return co_await Refuse(c, ReplyToReadError(ec, options_), 11);
  http::request<http::string_body>& req = parser.get();
  unsigned version = req.version();
  if (version != 10 && version != 11) {
    co_return co_await Refuse(c, ErrorReply(400, "unsupported HTTP version"), 11);
  }
  const TlsRoute* route = FindRoute(View(req.target()));
  if (!route) co_return co_await Refuse(c, ErrorReply(404, "no such route"), version);
  if (req.method() != http::verb::post) {
    TlsReply reply = ErrorReply(405, "method not allowed");
    reply.headers.emplace_back("Allow", "POST");
    co_return co_await Refuse(c, std::move(reply), version);
  }
  if (!IsJsonContentType(View(req[http::field::content_type]))) {
    co_return co_await Refuse(c, ErrorReply(415, "Content-Type must be application/json"),
                              version);
  }
  if (absl::EqualsIgnoreCase(View(req[http::field::expect]), "100-continue")) {
    http::response<http::empty_body> go_on{http::status::continue_, version};
    co_await http::async_write(*c.tls, go_on, asio::redirect_error(kAwait, ec));
    if (c.closed) co_return false;
    if (ec) {
      Close(c, CloseReason::kPeerClosed);
      co_return false;
    }
  }
  co_await http::async_read(*c.tls, buffer, parser, asio::redirect_error(kAwait, ec));
  if (c.closed) co_return false;
  if (ec) co_return co_await Refuse(c, ReplyToReadError(ec, options_), version);
  bool keep_alive = req.keep_alive();
  std::string body = std::move(req.body());

  table_.MarkBusy(c.id);
  SetState(c, ConnectionState::kInFlight);
  Disarm(c);  // our time, not the client's
  TlsReply reply;
  if (in_pool_.load() >= options_.worker_threads + static_cast<int64_t>(options_.max_queued)) {
    stats_.rejected_busy.fetch_add(1, std::memory_order_relaxed);
    reply = ErrorReply(503, "server busy: every worker is taken and the queue is full");
  } else {
    reply = co_await RunOnWorker(*route, std::move(body));
  }
  if (c.closed) co_return false;
  keep_alive = keep_alive && !stopping_ && served + 1 < options_.keep_alive_max_requests;
  co_return co_await Write(c, std::move(reply), version, keep_alive, CloseReason::kDone);
}

asio::awaitable<bool> TlsListener::Impl::Write(Connection& c, TlsReply reply, unsigned version,
                                               bool keep_alive, CloseReason closing) {
  table_.MarkBusy(c.id);
  SetState(c, ConnectionState::kWriting);
  Arm(c, options_.reply_deadline, CloseReason::kReplyDeadline);
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::content_type, "application/json");
  for (auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = std::move(reply.body);
  res.prepare_payload();
  ErrorCode ec;
  co_await http::async_write(*c.tls, res, asio::redirect_error(kAwait, ec));
  if (c.closed) co_return false;
  if (ec) {
    Close(c, CloseReason::kPeerClosed);
    co_return false;
  }
  if (!keep_alive) {
    co_await Linger(c, closing);
    co_return false;
  }
  co_return true;
}

asio::awaitable<bool> TlsListener::Impl::Refuse(Connection& c, std::optional<TlsReply> reply,
                                                unsigned version) {
  if (!reply) {
    Close(c, CloseReason::kPeerClosed);
    co_return false;
  }
  co_return co_await Write(c, *std::move(reply), version, /*keep_alive=*/false,
                           CloseReason::kBadRequest);
}

asio::awaitable<void> TlsListener::Impl::Linger(Connection& c, CloseReason reason) {
  Arm(c, kLinger, reason);
  // close_notify and FIN, then read and drop what the client still sends (the rest of a
  // refused body, its own close_notify) until it closes too or the linger time is up.
  c.tls->SendCloseNotify();
  ErrorCode ec;
  c.lowest().shutdown(tcp::socket::shutdown_send, ec);
  std::array<char, 2048> scratch;
  while (!c.closed && !ec) {
    co_await c.lowest().async_read_some(asio::buffer(scratch), asio::redirect_error(kAwait, ec));
  }
  Close(c, reason);
}

asio::awaitable<TlsReply> TlsListener::Impl::RunOnWorker(const TlsRoute& route,
                                                         std::string body) {
  TlsReply reply;
  in_pool_.fetch_add(1);
  stats_.queued.fetch_add(1, std::memory_order_relaxed);
  // The coroutine sleeps while a worker runs the handler; the worker wakes it on the loop.
  AwaitToken token;
  co_await asio::async_initiate<AwaitToken, void()>(
      [&](auto wake) {
        asio::post(*workers_, [&, wake = std::move(wake),
                               work = asio::make_work_guard(loop_)]() mutable {
          stats_.queued.fetch_sub(1, std::memory_order_relaxed);
          try {
            reply = route.handler(body);
          } catch (const std::exception& e) {
            common::Log(common::LogLevel::kError, "handler threw",
                        {{"path", route.path}, {"error", e.what()}});
            reply = ErrorReply(500, "internal error");
          } catch (...) {
            common::Log(common::LogLevel::kError, "handler threw", {{"path", route.path}});
            reply = ErrorReply(500, "internal error");
          }
          in_pool_.fetch_sub(1);
          asio::post(loop_, std::move(wake));
        });
      },
      token);
  co_return reply;
}

// --- TlsListener --------------------------------------------------------------------------

TlsListener::TlsListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsListener::~TlsListener() { Stop(); }

absl::StatusOr<std::unique_ptr<TlsListener>> TlsListener::Bind(Options options, SSL_CTX* ctx,
                                                               std::vector<TlsRoute> routes) {
  auto impl = std::make_unique<Impl>(std::move(options), ctx, std::move(routes));
  absl::Status bound = impl->Bind();
  if (!bound.ok()) return bound;
  return std::unique_ptr<TlsListener>(new TlsListener(std::move(impl)));
}

void TlsListener::Start() { impl_->Start(); }
void TlsListener::Stop() { impl_->Stop(); }
int TlsListener::port() const { return impl_->port(); }
const TlsListener::Stats& TlsListener::stats() const { return impl_->stats(); }

absl::string_view TlsListener::ReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kPeerClosed: return "peer_closed";
    case CloseReason::kHandshakeFailed: return "handshake_failed";
    case CloseReason::kHandshakeDeadline: return "handshake_deadline";
    case CloseReason::kRequestDeadline: return "request_deadline";
    case CloseReason::kIdleTimeout: return "idle_timeout";
    case CloseReason::kReplyDeadline: return "reply_deadline";
    case CloseReason::kBadRequest: return "bad_request";
    case CloseReason::kDone: return "done";
    case CloseReason::kEvictedPerPeer: return "evicted_per_ip";
    case CloseReason::kEvictedTotal: return "evicted_total";
    case CloseReason::kRefused: return "refused";
    case CloseReason::kShutdown: return "shutdown";
    case CloseReason::kCount: break;
  }
  return "unknown";
}

absl::string_view TlsListener::StateName(ConnectionState state) {
  switch (state) {
    case ConnectionState::kHandshake: return "handshake";
    case ConnectionState::kIdle: return "idle";
    case ConnectionState::kReading: return "reading";
    case ConnectionState::kInFlight: return "in_flight";
    case ConnectionState::kWriting: return "writing";
    case ConnectionState::kCount: break;
  }
  return "unknown";
}

void TlsListener::AppendPrometheus(std::string& out) const {
  const Stats& s = impl_->stats();
  absl::StrAppend(&out,
                  "# HELP gpu_tenancy_tls_connections Open connections on the TLS listener, by "
                  "what they are doing.\n"
                  "# TYPE gpu_tenancy_tls_connections gauge\n");
  for (size_t i = 0; i < s.open.size(); ++i) {
    absl::StrAppend(&out, "gpu_tenancy_tls_connections{state=\"",
                    StateName(static_cast<ConnectionState>(i)), "\"} ", s.open[i].load(), "\n");
  }
  absl::StrAppend(&out,
                  "# HELP gpu_tenancy_tls_connections_closed_total Connections the TLS listener "
                  "closed, by reason.\n"
                  "# TYPE gpu_tenancy_tls_connections_closed_total counter\n");
  for (size_t i = 0; i < s.closed.size(); ++i) {
    absl::StrAppend(&out, "gpu_tenancy_tls_connections_closed_total{reason=\"",
                    ReasonName(static_cast<CloseReason>(i)), "\"} ", s.closed[i].load(), "\n");
  }
  const Options& o = impl_->options();
  absl::StrAppend(
      &out,
      "# HELP gpu_tenancy_tls_connection_limit Connections the TLS listener holds at most, in "
      "all and per client address.\n"
      "# TYPE gpu_tenancy_tls_connection_limit gauge\n"
      "gpu_tenancy_tls_connection_limit{scope=\"total\"} ", o.max_connections, "\n",
      "gpu_tenancy_tls_connection_limit{scope=\"per_ip\"} ", o.max_connections_per_peer, "\n",
      "# HELP gpu_tenancy_tls_worker_queue_depth Complete requests waiting for a worker.\n"
      "# TYPE gpu_tenancy_tls_worker_queue_depth gauge\n"
      "gpu_tenancy_tls_worker_queue_depth ", s.queued.load(), "\n",
      "# HELP gpu_tenancy_tls_requests_rejected_total Requests answered 503 at once because "
      "every worker was busy and the queue was full.\n"
      "# TYPE gpu_tenancy_tls_requests_rejected_total counter\n"
      "gpu_tenancy_tls_requests_rejected_total ", s.rejected_busy.load(), "\n");
}

}  // namespace server
