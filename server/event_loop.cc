#include "server/event_loop.h"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "server/tls_socket.h"
#include "wire/extender_codec.h"

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

TlsReply RunHandler(const TlsRoute& route, absl::string_view body) {
  return Guarded(
      route.path, [&] { return route.handler(body); }, ErrorReply(500, "internal error"));
}

}  // namespace

TlsReply ErrorReply(int status, absl::string_view message) {
  return TlsReply{status, wire::EncodeHttpError(message), {}};
}

std::optional<TlsReply> ReplyToReadError(const ErrorCode& ec, size_t max_header_bytes,
                                         size_t max_body_bytes) {
  if (ec == http::error::header_limit) {
    return ErrorReply(431,
                      absl::StrCat("request head too large (over ", max_header_bytes, " bytes)"));
  }
  if (ec == http::error::body_limit) {
    return ErrorReply(413,
                      absl::StrCat("request body too large (over ", max_body_bytes, " bytes)"));
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return ErrorReply(400, absl::StrCat("malformed request: ", ec.message()));
  }
  return std::nullopt;  // transport: reset, TLS error, closed by us
}

EventLoop::EventLoop(ListenerShared& shared, ConnectionTable::Limits tls_limits,
                     ConnectionTable::Limits operator_limits)
    : shared_(shared),
      options_(shared.options),
      acceptor_(loop_),
      operator_acceptor_(loop_),
      drain_timer_(loop_),
      table_(tls_limits),
      operator_table_(operator_limits) {}

EventLoop::~EventLoop() {
  RequestStop();
  Join();
}

absl::Status EventLoop::Listen(Port port, const tcp::endpoint& endpoint) {
  tcp::acceptor& acceptor = AcceptorOf(port);
  ErrorCode ec;
  auto failed = [&](const char* step) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", endpoint.address().to_string(),
                                               ":", endpoint.port(), " (", step, ": ", ec.message(),
                                               ")"));
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return failed("open");
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return failed("SO_REUSEADDR");
  acceptor.bind(endpoint, ec);
  if (ec) return failed("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return failed("listen");
  return absl::OkStatus();
}

int EventLoop::port(Port port) const {
  const tcp::acceptor& acceptor = port == Port::kTls ? acceptor_ : operator_acceptor_;
  if (!acceptor.is_open()) return -1;
  ErrorCode ec;
  return acceptor.local_endpoint(ec).port();
}

tcp::acceptor& EventLoop::AcceptorOf(Port port) {
  return port == Port::kTls ? acceptor_ : operator_acceptor_;
}

Listener::Stats& EventLoop::StatsOf(Port port) {
  return port == Port::kTls ? shared_.stats : shared_.operators->stats;
}

ConnectionTable& EventLoop::TableOf(Port port) {
  return port == Port::kTls ? table_ : operator_table_;
}

void EventLoop::Start(std::vector<EventLoop*> deal_to) {
  deal_to_ = std::move(deal_to);
  keep_running_.emplace(loop_.get_executor());  // a loop that does not accept waits for work
  for (Port port : {Port::kTls, Port::kOperator}) {
    if (!deal_to_.empty() && AcceptorOf(port).is_open()) {
      asio::co_spawn(loop_, Accept(port), asio::detached);
    }
  }
  thread_ = std::thread([this] {
    common::NameThisThread("loop");
    loop_.run();
  });
}

void EventLoop::RequestStop() {
  if (thread_.joinable()) asio::post(loop_, [this] { BeginStop(); });
}

void EventLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

void EventLoop::BeginStop() {
  stopping_ = true;
  keep_running_.reset();
  ErrorCode ec;
  acceptor_.close(ec);
  operator_acceptor_.close(ec);
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

void EventLoop::Arm(Connection& c, std::chrono::milliseconds in, CloseReason reason) {
  c.deadline = Clock::now() + in;
  c.on_deadline = reason;
  // The watchdog sleeps until the old deadline; wake it only when the new one is sooner.
  if (c.deadline < c.timer.expiry()) c.timer.cancel();
}

void EventLoop::Disarm(Connection& c) { c.deadline = Clock::time_point::max(); }

void EventLoop::SetState(Connection& c, ConnectionState state) {
  Listener::Stats& stats = StatsOf(c.port);
  stats.open[static_cast<size_t>(c.state)].fetch_sub(1, std::memory_order_relaxed);
  stats.open[static_cast<size_t>(state)].fetch_add(1, std::memory_order_relaxed);
  c.state = state;
}

void EventLoop::Close(Connection& c, CloseReason reason) {
  if (c.closed) return;
  c.closed = true;
  Listener::Stats& stats = StatsOf(c.port);
  stats.closed[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  stats.open[static_cast<size_t>(c.state)].fetch_sub(1, std::memory_order_relaxed);
  TableOf(c.port).Remove(c.id);
  live_.erase(c.id);
  ErrorCode ec;
  c.lowest().close(ec);  // ends every pending operation on it
  c.timer.cancel();
  if (stopping_ && live_.empty()) drain_timer_.cancel();
}

const TlsRoute* EventLoop::FindRoute(absl::string_view target) const {
  absl::string_view path = target.substr(0, target.find('?'));
  for (const TlsRoute& r : shared_.routes) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

EventLoop::Task<void> EventLoop::Accept(Port port) {
  tcp::acceptor& acceptor = AcceptorOf(port);
  asio::steady_timer backoff(loop_);
  for (size_t next = 0; !stopping_; ++next) {
    // Dealt round robin, so a few long-lived keep-alive callers (kube-scheduler's,
    // kube-apiserver's) spread evenly over the loops, and so does each address's share of
    // the per-address limit; a hash of the ports (SO_REUSEPORT) spreads only large numbers.
    EventLoop* target = deal_to_[next % deal_to_.size()];
    ErrorCode ec;
    tcp::socket socket = co_await acceptor.async_accept(target->loop_.get_executor(),
                                                        asio::redirect_error(kAwait, ec));
    if (stopping_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors (or another transient failure): retry shortly instead of spinning.
      common::Log(common::LogLevel::kWarn, "accept failed", {{"error", ec.message()}});
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(asio::redirect_error(kAwait, ec));
      continue;
    }
    asio::post(target->loop_, [target, port, s = std::move(socket)]() mutable {
      target->Adopt(port, std::move(s));
    });
  }
}

void EventLoop::Adopt(Port port, tcp::socket socket) {
  if (stopping_) return;  // the socket closes here
  ErrorCode ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;                              // already gone
  socket.set_option(tcp::no_delay(true), ec);  // else each keep-alive reply waits on delayed ACK
  uint64_t id = next_id_++;
  ConnectionTable& table = TableOf(port);
  Listener::Stats& stats = StatsOf(port);
  ConnectionTable::Admission admission = table.Admit(id, PeerKey(peer), Clock::now());
  for (const ConnectionTable::Eviction& e : admission.evict) {
    auto it = live_.find(e.id);
    if (it == live_.end()) continue;
    // An idle one is the close that can race its caller's next request: counted apart.
    CloseReason reason = e.idle ? CloseReason::kEvictedIdle
                         : e.reason == ConnectionTable::EvictReason::kPerPeerLimit
                             ? CloseReason::kEvictedPerPeer
                             : CloseReason::kEvictedTotal;
    Close(*it->second, reason);
  }
  if (!admission.admitted) {
    stats.closed[static_cast<size_t>(CloseReason::kRefused)].fetch_add(1);
    return;
  }
  auto c = std::make_shared<Connection>(port, std::move(socket), id);
  live_[id] = c.get();
  stats.open[static_cast<size_t>(c->state)].fetch_add(1);
  asio::co_spawn(loop_, Watch(c), asio::detached);
  // Our code does not throw, but an allocation can: the connection must not outlive that.
  asio::co_spawn(loop_, port == Port::kTls ? Serve(c) : ServeOperator(c),
                 [this, c](std::exception_ptr e) {
                   if (!e) return;
                   common::Log(common::LogLevel::kError, "connection failed unexpectedly");
                   Close(*c, CloseReason::kPeerClosed);
                 });
}

EventLoop::Task<void> EventLoop::Watch(std::shared_ptr<Connection> c) {
  while (!c->closed) {
    // Disarmed means "not now": a far wake-up rather than time_point::max, which timer
    // arithmetic would have to saturate.
    c->timer.expires_at(std::min(c->deadline, Clock::now() + std::chrono::hours(1)));
    ErrorCode ec;
    co_await c->timer.async_wait(asio::redirect_error(kAwait, ec));
    if (!c->closed && Clock::now() >= c->deadline) Close(*c, c->on_deadline);
  }
}

EventLoop::Task<bool> EventLoop::FirstByte(Connection& c, std::chrono::milliseconds within,
                                           CloseReason missed) {
  Arm(c, within, missed);
  ErrorCode ec;
  co_await c.socket.async_wait(tcp::socket::wait_read, asio::redirect_error(kAwait, ec));
  if (c.closed) co_return false;
  if (ec) {
    Close(c, CloseReason::kPeerClosed);
    co_return false;
  }
  co_return true;
}

EventLoop::Task<void> EventLoop::Serve(std::shared_ptr<Connection> c) {
  // No TLS state until the client sends something: a silent connection stays a bare socket.
  if (!co_await FirstByte(*c, options_.request_deadline, CloseReason::kHandshakeDeadline)) {
    co_return;
  }
  ErrorCode ec;
  c->tls.emplace(std::move(c->socket), shared_.ssl);
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

EventLoop::Task<bool> EventLoop::ServeOne(Connection& c, beast::flat_buffer& buffer,
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
    // After a reply its caller may pick it up again at any moment (ConnectionTable::MarkIdle);
    // before the first request it is as unused as a new connection.
    if (served > 0) {
      table_.MarkIdle(c.id, Clock::now());
    } else {
      table_.MarkEvictable(c.id);
    }
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
  if (ec)
    co_return co_await Refuse(
        c, ReplyToReadError(ec, options_.max_header_bytes, options_.max_body_bytes), 11);
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
    co_return co_await Refuse(c, ErrorReply(415, "Content-Type must be application/json"), version);
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
  if (ec)
    co_return co_await Refuse(
        c, ReplyToReadError(ec, options_.max_header_bytes, options_.max_body_bytes), version);
  bool keep_alive = req.keep_alive();
  std::string body = std::move(req.body());

  table_.MarkBusy(c.id);
  SetState(c, ConnectionState::kInFlight);
  Disarm(c);  // our time, not the client's
  // A pure handler of a small body (tens of microseconds) runs here: handing it to a worker
  // and back costs two thread wake-ups, more than the work itself.
  std::optional<TlsReply> answered;
  if (body.size() <= options_.inline_body_bytes) {
    if (!route->waits_on_io) {
      answered = RunHandler(*route, body);
    } else if (route->on_loop_first) {
      answered = Guarded(
          route->path, [&] { return route->on_loop_first(body); },
          std::optional<TlsReply>(ErrorReply(500, "internal error")));
    }
  }
  TlsReply reply;
  if (answered) {
    reply = *std::move(answered);
  } else if (shared_.in_pool.load() >=
             options_.worker_threads + static_cast<int64_t>(options_.max_queued)) {
    shared_.stats.rejected_busy.fetch_add(1, std::memory_order_relaxed);
    reply = ErrorReply(503, "server busy: every worker is taken and the queue is full");
  } else {
    reply = co_await RunOnWorker(*route, std::move(body));
  }
  if (c.closed) co_return false;
  keep_alive =
      keep_alive && !shared_.stopping.load() && served + 1 < options_.keep_alive_max_requests;
  co_return co_await Write(c, std::move(reply), version, keep_alive, CloseReason::kDone);
}

EventLoop::Task<bool> EventLoop::Write(Connection& c, TlsReply reply, unsigned version,
                                       bool keep_alive, CloseReason closing, bool head_only) {
  table_.MarkBusy(c.id);
  SetState(c, ConnectionState::kWriting);
  Arm(c, c.port == Port::kTls ? options_.reply_deadline : shared_.operators->options.reply_deadline,
      CloseReason::kReplyDeadline);
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::content_type, kJsonContentType);
  if (c.port == Port::kOperator) {
    // Live state, or a page tied to this binary's endpoints: never cached, never sniffed as
    // another type.
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
  }
  for (auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  if (head_only) {
    res.content_length(reply.body.size());  // what a GET would get, without it
  } else {
    res.body() = std::move(reply.body);
    res.prepare_payload();
  }
  ErrorCode ec;
  if (c.tls) {
    co_await http::async_write(*c.tls, res, asio::redirect_error(kAwait, ec));
  } else {
    co_await http::async_write(c.socket, res, asio::redirect_error(kAwait, ec));
  }
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

EventLoop::Task<bool> EventLoop::Refuse(Connection& c, std::optional<TlsReply> reply,
                                        unsigned version, bool head_only) {
  if (!reply) {
    Close(c, CloseReason::kPeerClosed);
    co_return false;
  }
  co_return co_await Write(c, *std::move(reply), version, /*keep_alive=*/false,
                           CloseReason::kBadRequest, head_only);
}

EventLoop::Task<void> EventLoop::Linger(Connection& c, CloseReason reason) {
  Arm(c, kLinger, reason);
  // close_notify and FIN, then read and drop what the client still sends (the rest of a
  // refused body, its own close_notify) until it closes too or the linger time is up.
  if (c.tls) c.tls->SendCloseNotify();
  ErrorCode ec;
  c.lowest().shutdown(tcp::socket::shutdown_send, ec);
  std::array<char, 2048> scratch;
  while (!c.closed && !ec) {
    co_await c.lowest().async_read_some(asio::buffer(scratch), asio::redirect_error(kAwait, ec));
  }
  Close(c, reason);
}

EventLoop::Task<TlsReply> EventLoop::RunOnWorker(const TlsRoute& route, std::string body) {
  shared_.in_pool.fetch_add(1);
  shared_.stats.queued.fetch_add(1, std::memory_order_relaxed);
  co_return co_await RunOn(*shared_.workers, loop_, [&] {
    shared_.stats.queued.fetch_sub(1, std::memory_order_relaxed);
    TlsReply reply = RunHandler(route, body);
    shared_.in_pool.fetch_sub(1);
    return reply;
  });
}

}  // namespace server
